"""Old public path of the embedded keyword libraries: ``Library dpgate.robotlib.EmbeddedTestbed``
and ``Library dpgate.robotlib.Gates`` keep working.

The code lives in :mod:`dpgate.robot.embedded`, :mod:`dpgate.robot.gates`,
:mod:`dpgate.robot.base`, :mod:`dpgate.model.ndrpdr` and :mod:`dpgate.search.bounded`.
"""

from dpgate.model.ndrpdr import CEILING_MARGIN, NdrPdrResult
from dpgate.robot.base import ndrpdr_result, record, telemetry_at_goals
from dpgate.robot.embedded import EmbeddedTestbed
from dpgate.robot.gates import TELEMETRY_POLICIES, Gates
from dpgate.search.bounded import RESCUE_STEPS, RESCUE_TRIAL_S, SearchRun, search_ndr_pdr, trial_dicts

__all__ = [
    "CEILING_MARGIN",
    "NdrPdrResult",
    "ndrpdr_result",
    "record",
    "telemetry_at_goals",
    "EmbeddedTestbed",
    "TELEMETRY_POLICIES",
    "Gates",
    "RESCUE_STEPS",
    "RESCUE_TRIAL_S",
    "SearchRun",
    "search_ndr_pdr",
    "trial_dicts",
]
