"""The ``rfc2544-binary`` profile: the classic RFC 2544 binary search (Ixia QuickTest style).

As described in the methodology paper's appendix on the test setup (seed 000, App. 13.4):
binary search, fixed trial duration, a loss tolerance per search, and a minimum rate
change that stops the search. Each goal (NDR, then PDR) is a separate search with
fresh trials, so legacy reports can be compared like for like.

Parameters (overrides):

* ``trial_duration``: every trial [s], default 60 (RFC 2544; the paper's QuickTest
  runs used 20 s).
* ``width``: stop when ``upper - lower <= width x upper`` (relative, default 0.005),
  unless ``resolution_pps`` (absolute minimum rate change, e.g. 100000 as in the
  paper) is given.
* ``start_rate``: first trial load, default ``max_rate`` (the paper's QuickTest setup
  started at 10 % of link rate).

The lower bound is the highest load that passed; if nothing passed, ``min_rate`` is
measured once and the bound is ``min_rate`` or ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from dpgate.search.result import TrialLog
from dpgate.search.settings import SearchSettings, own_defaults, setting

PROFILE = "rfc2544-binary"


@dataclass(frozen=True)
class BinarySettings(SearchSettings):
    """The classic binary search's parameters (see the module's docstring)."""

    trial_duration: float = setting(60.0, "positive", "every trial [s]")
    width: float = setting(0.005, "fraction", "stop when upper - lower <= width x upper (relative)")
    resolution_pps: Optional[float] = setting(
        None, "optional_positive", "absolute minimum rate change that stops the search [pps]; replaces width"
    )
    start_rate: Optional[float] = setting(
        None, "optional_positive", "first trial load [pps]; None = max_rate"
    )


SETTINGS = BinarySettings
#: The defaults by name (read-only; the settings are :class:`BinarySettings`).
DEFAULTS: Mapping[str, Any] = own_defaults(BinarySettings)


def _one_goal(
    log: TrialLog, min_rate: float, max_rate: float, loss: float, s: BinarySettings
) -> Tuple[Optional[float], Optional[float]]:
    duration = s.trial_duration
    lower, upper = min_rate, max_rate
    passed: Optional[float] = None
    failed: Optional[float] = None
    load = min(max(s.start_rate or max_rate, min_rate), max_rate)
    while True:
        if log.measure(load, duration).loss_ratio <= loss:
            passed = load if passed is None else max(passed, load)
            lower = load
            if load >= max_rate:
                break
        else:
            failed = load if failed is None else min(failed, load)
            upper = load
        step = s.resolution_pps if s.resolution_pps else s.width * upper
        if upper - lower <= step:
            break
        load = (lower + upper) / 2.0
    if passed is None and (failed is None or failed > min_rate):
        if log.measure(min_rate, duration).loss_ratio <= loss:
            passed = min_rate
        else:
            failed = min_rate
    return passed, failed


def run(
    log: TrialLog, min_rate: float, max_rate: float, ndr_loss: float, pdr_loss: float, s: BinarySettings
) -> Dict[str, Optional[float]]:
    """NDR search, then a separate PDR search."""
    ndr, ndr_upper = _one_goal(log, min_rate, max_rate, ndr_loss, s)
    pdr, pdr_upper = _one_goal(log, min_rate, max_rate, pdr_loss, s)
    return {"ndr": ndr, "ndr_upper": ndr_upper, "pdr": pdr, "pdr_upper": pdr_upper}
