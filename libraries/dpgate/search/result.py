"""What a search returns, and the trial bookkeeping every profile shares.

A search sees only ``tx_packets``, ``rx_packets`` and (optionally) ``intended_packets``
of whatever ``measure(load_pps, duration_s)`` returns, so simulated SUTs and real
generators plug in alike. Loss is ``intended - rx`` when ``intended_packets`` is known
(a generator that cannot keep up counts as loss), else ``tx - rx``.

    >>> from dpgate.model.trial import TrialResult
    >>> c = counts_of(TrialResult.from_counts(1000, 1.0, tx_packets=990, rx_packets=980))
    >>> c.loss, round(c.loss_ratio, 3)
    (20, 0.02)
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from dpgate.model.errors import DpgateError
from dpgate.model.protocols import Measure as Measure  # re-exported: the search's seam

Progress = Callable[[int, float, Any], None]

#: Simulated/accounted per-trial overhead (traffic start/stop, counter reads) [s].
DEFAULT_TRIAL_OVERHEAD_S = 0.5


@dataclass(frozen=True)
class Counts:
    """The three counters a search reads from one trial result."""

    tx: int
    rx: int
    intended: Optional[int]

    @property
    def loss(self) -> int:
        base = self.intended if self.intended is not None else self.tx
        return max(0, base - self.rx)

    @property
    def loss_ratio(self) -> float:
        base = max(self.tx, self.intended or 0)
        return self.loss / base if base else 0.0


def _field(result: Any, name: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


def counts_of(result: Any) -> Counts:
    """Read tx/rx/intended packet counts from a TrialResult (or any object/dict with them)."""
    tx, rx = _field(result, "tx_packets"), _field(result, "rx_packets")
    if tx is None or rx is None:
        raise TypeError(
            f"measure() returned {type(result).__name__}, which lacks tx_packets/rx_packets; "
            "return a dpgate.model.trial.TrialResult"
        )
    intended = _field(result, "intended_packets")
    return Counts(int(tx), int(rx), None if intended is None else int(intended))


@dataclass(frozen=True)
class SearchResult:
    """Outcome of :func:`dpgate.search.find_ndr_pdr`. Field names are public: keep them stable.

    ``ndr``/``pdr`` are lower bounds in pps (``None`` if even ``min_rate`` failed the goal);
    ``ndr_upper``/``pdr_upper`` the tightest upper bounds found (``None`` if none, e.g. the
    bound is at ``max_rate``). ``ndr_at_max``/``pdr_at_max`` say the bound equals
    ``max_rate``: the answer is limited by the generator or line rate, not the SUT.
    ``trials`` holds ``(load_pps, duration_s, result)`` in the order measured;
    ``total_time_s`` is the sum of trial durations plus the per-trial overhead.
    ``ndr_bracket``/``pdr_bracket`` (optional, ``None`` from profiles that do not
    estimate it): ``(low, high)`` loads between which the search is sure the answer
    lies; either end ``None`` where its evidence does not set it (``sign-off``).
    """

    ndr: Optional[float]
    pdr: Optional[float]
    ndr_upper: Optional[float]
    pdr_upper: Optional[float]
    trials: Tuple[Tuple[float, float, Any], ...]
    total_time_s: float
    profile: str
    settings: Dict[str, Any] = field(default_factory=dict)
    ndr_at_max: bool = False
    pdr_at_max: bool = False
    ndr_bracket: Optional[Tuple[Optional[float], Optional[float]]] = None
    pdr_bracket: Optional[Tuple[Optional[float], Optional[float]]] = None

    @property
    def trial_count(self) -> int:
        return len(self.trials)

    @property
    def at_max(self) -> Tuple[bool, bool]:
        """``(ndr_at_max, pdr_at_max)``."""
        return (self.ndr_at_max, self.pdr_at_max)


class SearchAborted(DpgateError):
    """The search could not finish; ``partial`` holds the trials measured so far.

    ``partial.ndr``/``partial.pdr`` are ``None``; ``__cause__`` is the original error.
    """

    def __init__(self, message: str, partial: SearchResult):
        super().__init__(message)
        self.partial = partial


class TrialLog:
    """Calls ``measure``, records every trial and accounts simulated time.

    Every profile measures only through this, so a failure in the middle of any search
    still yields the trials done so far (see :meth:`aborted`).
    """

    def __init__(
        self,
        measure: Measure,
        overhead_s: float = DEFAULT_TRIAL_OVERHEAD_S,
        progress: Optional[Progress] = None,
    ):
        self._measure = measure
        self._overhead = overhead_s
        self._progress = progress
        self.trials: List[Tuple[float, float, Any]] = []
        self.time_s = 0.0
        self.started = time.monotonic()

    def measure(self, load: float, duration: float) -> Counts:
        load, duration = float(load), float(duration)
        result = self._measure(load, duration)
        self.trials.append((load, duration, result))
        self.time_s += duration + self._overhead
        counts = counts_of(result)
        if self._progress is not None:
            self._progress(len(self.trials), load, result)
        return counts

    def result(self, profile: str, settings: Dict[str, Any], max_rate: float, **bounds: Any) -> SearchResult:
        def at_max(v: Optional[float]) -> bool:
            return v is not None and v >= max_rate * (1 - 1e-9)

        settings = dict(settings, wall_time_s=round(time.monotonic() - self.started, 3))
        return SearchResult(
            trials=tuple(self.trials),
            total_time_s=self.time_s,
            profile=profile,
            settings=settings,
            ndr_at_max=at_max(bounds.get("ndr")),
            pdr_at_max=at_max(bounds.get("pdr")),
            **bounds,
        )

    def aborted(
        self, profile: str, settings: Dict[str, Any], max_rate: float, error: BaseException
    ) -> SearchAborted:
        partial = self.result(profile, settings, max_rate, ndr=None, pdr=None, ndr_upper=None, pdr_upper=None)
        return SearchAborted(
            f"{profile} search aborted after {len(self.trials)} trial(s): {type(error).__name__}: {error}",
            partial,
        )
