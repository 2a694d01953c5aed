"""A search with a wall-time limit, and the bounds it can still give when time runs out.

``search_ndr_pdr`` runs :func:`dpgate.search.find_ndr_pdr` over a ``measure`` callable; when
``time_limit`` runs out, NDR/PDR come from the trials measured so far (a load passes when it met
its goal in at least half of its trial time, below the lowest load failing it), and when no
load passed at all a few short trials step down from the lowest failing load
(``RESCUE_STEPS``). Warnings go to ``warn`` (the Robot keyword passes Robot's logger).

>>> from dpgate.search.simulated import make_sut
>>> sut = make_sut("hard", seed=1)
>>> run = search_ndr_pdr(sut.measure, 100_000, 1_500_000, "0", "0.5%", "per-commit", {}, 0)
>>> run.complete, round(run.ndr / 1e6, 2)
(True, 1.0)
>>> cut = search_ndr_pdr(sut.measure, 100_000, 1_500_000, "0", "0.5%", "per-commit", {}, 1e-9,
...                      warn=lambda msg: None)
>>> cut.complete
False
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from dpgate.config.units import format_pps, parse_ratio
from dpgate.model.trial import TrialResult
from dpgate.search import SearchAborted, find_ndr_pdr
from dpgate.search.result import Measure

Warn = Callable[[str], None]
_log = logging.getLogger(__name__)


class _TimeUp(Exception):
    pass


@dataclass(frozen=True)
class SearchRun:
    """One search of `Find NDR And PDR` (either testbed): its result and how it ended."""

    res: Any
    ndr_loss: float
    pdr_loss: float
    complete: bool
    started: float

    @property
    def ndr(self) -> float:
        return float(self.res.ndr or 0.0)

    @property
    def pdr(self) -> float:
        return float(self.res.pdr or 0.0)


def search_ndr_pdr(
    measure: Measure,
    lo: float,
    hi: float,
    ndr_loss: str,
    pdr_loss: str,
    profile: str,
    overrides: Dict[str, str],
    time_limit: float,
    warn: Warn = _log.warning,
    paused: Optional[Callable[[], float]] = None,
) -> SearchRun:
    """``find_ndr_pdr`` over ``measure`` with the keyword's arguments; a ``time_limit`` (s, 0 =
    none) that runs out ends the search with bounds from the trials so far (complete=False).
    ``paused()`` is wall time (s) ``measure`` spent on other trials, which the limit does not
    count (cpp_at_load trials spaced between the search's, ``dpgate.telemetry.cppload``)."""
    nl, pl = parse_ratio(ndr_loss, "ndr_loss"), parse_ratio(pdr_loss, "pdr_loss")
    conv = {k: _override_value(v) for k, v in overrides.items()}
    limit = float(time_limit or 0)
    t0 = time.monotonic()

    def bounded(load: float, duration: float) -> TrialResult:
        if limit and time.monotonic() - t0 - (paused() if paused else 0.0) > limit:
            raise _TimeUp(f"search time limit {limit:g} s reached")
        return measure(load, duration)

    try:
        return SearchRun(
            find_ndr_pdr(bounded, lo, hi, ndr_loss=nl, pdr_loss=pl, profile=profile, **conv), nl, pl, True, t0
        )
    except SearchAborted as err:
        if not isinstance(err.__cause__, _TimeUp):
            raise
        res = _bounds_from_trials(err.partial, nl, pl)
        warn(f"{err.__cause__}: NDR/PDR taken from the {res.trial_count} trials measured so far")
        return SearchRun(_rescue_lower_bounds(measure, res, nl, pl, lo, hi, warn), nl, pl, False, t0)


#: Loads (fractions of the lowest failing load) of the trials that find a lower bound when a
#: time-limited search ended before any load passed a goal.
RESCUE_STEPS = (0.95, 0.9, 0.8, 0.65, 0.5)
RESCUE_TRIAL_S = 1.0


def _rescue_lower_bounds(
    measure: Measure,
    res: _PartialBounds,
    ndr_loss: float,
    pdr_loss: float,
    lo: float,
    hi: float,
    warn: Warn = _log.warning,
) -> _PartialBounds:
    """A time-limited search can end with every load it tried failing a goal (an erratic SUT
    near its limit): there is then no measured lower bound, and reporting 0 would be a
    number nobody measured. Step down from the lowest failing load with 1 s trials until
    one meets the goal (``RESCUE_STEPS``, not below ``lo``) and take the bounds again."""
    trials = list(res.trials)
    for goal, name in ((ndr_loss, "NDR"), (pdr_loss, "PDR")):
        if getattr(res, name.lower()) is not None:
            continue
        top = getattr(res, f"{name.lower()}_upper") or hi
        for frac in RESCUE_STEPS:
            load = max(lo, top * frac)
            result = measure(load, RESCUE_TRIAL_S)
            trials.append((load, RESCUE_TRIAL_S, result))
            if result.loss_ratio <= goal or load <= lo:
                break
        res = _bounds_from_trials(_Trials(tuple(trials)), ndr_loss, pdr_loss)
        found = getattr(res, name.lower())
        warn(
            f"no load passed the {name} goal before the time limit: stepping down from "
            f"{format_pps(top)} found {format_pps(found) if found else 'none above ' + format_pps(lo)}"
        )
    return res


@dataclass(frozen=True)
class _Trials:
    trials: tuple


@dataclass(frozen=True)
class _PartialBounds:
    ndr: Optional[float]
    pdr: Optional[float]
    ndr_upper: Optional[float]
    pdr_upper: Optional[float]
    trials: tuple
    trial_count: int


def _bounds_from_trials(partial, ndr_loss: float, pdr_loss: float) -> _PartialBounds:
    """NDR/PDR from the trials of an unfinished search (see ``Find NDR And PDR``)."""
    trials = tuple(getattr(partial, "trials", ()))

    def bounds(goal: float):
        per_load: Dict[float, List[float]] = {}
        for t in trials:
            load, dur, tr = t[0], t[1], t[-1]
            entry = per_load.setdefault(round(load, 1), [0.0, 0.0])
            entry[0] += dur
            if tr.loss_ratio > goal:
                entry[1] += dur
        fails = sorted(load for load, (tot, bad) in per_load.items() if bad > 0.5 * tot)
        upper = fails[0] if fails else None
        passes = [
            load
            for load, (tot, bad) in per_load.items()
            if bad <= 0.5 * tot and (upper is None or load < upper)
        ]
        return (max(passes) if passes else None), upper

    ndr, ndr_up = bounds(ndr_loss)
    pdr, pdr_up = bounds(pdr_loss)
    return _PartialBounds(ndr, pdr, ndr_up, pdr_up, trials, len(trials))


def trial_dicts(res) -> List[Dict[str, Any]]:
    """Every trial of a search as the record stores it (``TrialResult`` fields)."""
    out = []
    for t in getattr(res, "trials", ()):
        tr = t[-1] if isinstance(t, tuple) else t
        if hasattr(tr, "to_dict"):
            out.append(tr.to_dict())
    return out


def _opt(v) -> Optional[float]:
    return None if v is None else float(v)


def _override_value(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            continue
    return {"true": True, "false": False}.get(str(v).lower(), v)


def _measured_cpp_near(res, load: float, hz: float) -> Tuple[Optional[float], Optional[float]]:
    """Cycles/packet measured at the passing trial closest to (not above) ``load``:
    (reported by the SUT itself, SUT core busy ratio x hz / forwarded rate)."""
    best = None
    for t in getattr(res, "trials", ()):
        tr = t[-1] if isinstance(t, tuple) else t
        if not hasattr(tr, "intended_load_pps") or tr.intended_load_pps > load * 1.0001:
            continue
        if best is None or tr.intended_load_pps > best.intended_load_pps:
            best = tr
    if best is None:
        return None, None
    busy = getattr(best, "sut_busy_ratio", None)
    rate = best.rx_rate_pps
    busy_cpp = busy * hz / rate if busy and rate else None
    return getattr(best, "sut_cycles_per_packet", None), busy_cpp
