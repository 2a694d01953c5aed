"""Whether a neighbour on our cores is lasting: then measuring a disturbed trial again buys nothing.

A lossy trial whose cores others' CPU time disturbed beyond ``disturbance_max`` is measured
again (``dpgate.traffic.trialflow``), in case the neighbour is gone a second later. Recorded on
the 2-CPU Xeon VM (family 6 model 207, 2026-12-06/07):

* quiet (gk112-gk116, 6,726 attempts): 6 attempts disturbed by others' time, never two in a
  row; 287 of 415 re-measures (most of them for a slow host phase) came clean;
* beside a ``nice -n 19`` CPU hog on both cores (gk117, gk118, 5,780 attempts): every attempt
  disturbed (foreign share 0.33-0.66), none of 1,895 re-measures came clean; 3,656 of the
  attempts (63 %) were re-measures no verdict used, and testpmd's searches were cut at their
  bound (0 of 6 complete).

So after :data:`LASTING` attempts in a row disturbed by others' time the neighbour counts as
lasting: a trial it disturbs is kept as measured (marked ``neighbour_lasting``; a verdict
resting on it is inconclusive as before) until an attempt reads clean again, which resets
the count. A slow host phase has its own rule (``TrialSpeeds.transient``).

>>> class T:
...     def __init__(self, foreign): self.details = {"cpu": {"disturbance": foreign}}
>>> w = NeighbourWatch()
>>> [w.passing(w.saw(T(0.4), 0.1), 0.1) for _ in range(5)]
[True, True, True, False, False]
>>> w.passing(w.saw(T(0.02), 0.1), 0.1), w.streak, w.passing(w.saw(T(0.4), 0.1), 0.1)
(True, 0, True)
"""

from __future__ import annotations

from typing import Any, Optional

from dpgate.telemetry.disturbance import foreign_of

#: Attempts in a row disturbed by others' CPU time after which that neighbour counts as lasting
#: (one trial and its two re-measures at ``REMEASURE`` = 2; quiet, no two in a row were seen).
LASTING = 3


class NeighbourWatch:
    """Counts the attempts in a row others' CPU time disturbed beyond ``dmax`` (:meth:`saw`)."""

    def __init__(self, lasting: int = LASTING):
        self.lasting = lasting
        self.streak = 0

    @staticmethod
    def disturbed(result: Any, dmax: Optional[float]) -> bool:
        """Whether others' CPU time took more than ``dmax`` of a TG/SUT core in ``result``."""
        return dmax is not None and (foreign_of((result,)) or 0.0) > dmax

    def saw(self, result: Any, dmax: Optional[float]) -> Any:
        """Count ``result`` (an attempt) in the run or end it; returns ``result``."""
        self.streak = self.streak + 1 if self.disturbed(result, dmax) else 0
        return result

    def passing(self, result: Any, dmax: Optional[float]) -> bool:
        """Whether others' time on our cores may be gone at the next attempt: not once more
        than :attr:`lasting` attempts in a row (``result`` the last, seen) were disturbed by it;
        then ``result.details["neighbour_lasting"]`` says how many."""
        if not self.disturbed(result, dmax) or self.streak <= self.lasting:
            return True
        result.details["neighbour_lasting"] = self.streak
        return False
