"""The ``per-commit`` profile: MLRsearch 1.2.1 with the settings FD.io CSIT uses.

Two goals searched at once (loss 0.0 and 0.005 by default), exceed ratio 0.5,
relative width 0.005, initial and final trial duration 1 s, duration sum 21 s, no
warm-up trial unless asked. The search logic is MLRsearch's; this module only adapts:

* our ``measure(load, duration)`` seam to its ``AbstractMeasurer`` (and records every
  trial, so a failure still leaves the partial trials: MLRsearch raises
  ``RuntimeError`` without them);
* its wall-clock ``search_duration_max`` (set very large unless overridden: simulated
  trials take no wall time, and real ones are bounded by the caller's timeouts);
* its ``Config`` setters, which validate min against max, so order matters;
* its ``TrimmedStat``/``DiscreteLoad`` results to plain floats (relevant bounds).

The same wrapper, with overrides ``final_trial_duration=60, duration_sum=60,
exceed_ratio=0``, is MLRsearch's RFC 2544-style goal (used in ``benchmarks/search.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional

from dpgate.search.result import TrialLog
from dpgate.search.settings import SearchSettings, own_defaults, setting

PROFILE = "per-commit"


@dataclass(frozen=True)
class PerCommitSettings(SearchSettings):
    """CSIT's NDR/PDR settings (see ../shared/notes/field-facts.md).

    >>> PerCommitSettings().duration_sum
    21.0
    """

    trial_duration: float = setting(1.0, "positive", "initial trial duration [s]")
    final_trial_duration: float = setting(1.0, "positive", "final trial duration [s]")
    duration_sum: float = setting(21.0, "positive", "sum of final trial durations per load [s]")
    width: float = setting(0.005, "fraction", "goal width, relative to the upper bound")
    exceed_ratio: float = setting(0.5, "ratio", "share of the duration sum allowed to fail the loss goal")
    warmup: float = setting(0.0, "duration_or_flag", "warm-up trial duration at max load [s]; 0 = none")
    search_duration_max: float = setting(1e9, "positive", "wall clock limit of the search [s]")
    preceding_targets: int = setting(2, "count", "intermediate targets before the final one")
    expansion_coefficient: int = setting(2, "count", "how fast the interval grows when a bound moves")


SETTINGS = PerCommitSettings
#: The defaults by name (read-only; the settings are :class:`PerCommitSettings`).
DEFAULTS: Mapping[str, Any] = own_defaults(PerCommitSettings)


def _goal(loss: float, s: PerCommitSettings) -> Any:
    from MLRsearch import SearchGoal

    return SearchGoal(
        loss_ratio=loss,
        exceed_ratio=s.exceed_ratio,
        relative_width=s.width,
        initial_trial_duration=s.trial_duration,
        final_trial_duration=s.final_trial_duration,
        duration_sum=s.duration_sum,
        preceding_targets=s.preceding_targets,
        expansion_coefficient=s.expansion_coefficient,
        fail_fast=False,
    )


def _float(value: Any) -> Optional[float]:
    return None if value is None else float(value)


def run(
    log: TrialLog, min_rate: float, max_rate: float, ndr_loss: float, pdr_loss: float, s: PerCommitSettings
) -> Dict[str, Optional[float]]:
    """Run MLRsearch through ``log``; return relevant lower/upper bounds as floats."""
    from MLRsearch import AbstractMeasurer, Config, MeasurementResult, MultipleLossRatioSearch

    class _Adapter(AbstractMeasurer):
        def measure(self, intended_duration: float, intended_load: float) -> MeasurementResult:
            c = log.measure(intended_load, intended_duration)
            # A generator that sent a few packets MORE than intended (TRex rounds each stream's
            # count up: 150,002 for 150,000) lost nothing; MLRsearch would count rx > intended
            # against the zero-loss goal, so the surplus raises the intended count to what was sent.
            intended = c.intended if c.intended is None or c.tx <= c.intended else c.tx
            # No duration_with_overheads: in MLRsearch it would count toward duration_sum.
            return MeasurementResult(
                intended_duration=intended_duration,
                intended_load=intended_load,
                offered_count=c.tx,
                forwarding_count=c.rx,
                intended_count=intended,
            )

    goals = [_goal(ndr_loss, s)]
    if pdr_loss != ndr_loss:
        goals.append(_goal(pdr_loss, s))
    config = Config()
    config.goals = goals
    # Setters validate each bound against the current other one: widen first.
    if min_rate >= config.max_load:
        config.max_load = max_rate
        config.min_load = min_rate
    else:
        config.min_load = min_rate
        config.max_load = max_rate
    config.search_duration_max = s.search_duration_max
    config.warmup_duration = float(s.warmup) if s.warmup else None
    results = MultipleLossRatioSearch(config=config).search(measurer=_Adapter())
    ndr_res = results[goals[0]]
    pdr_res = results[goals[-1]]
    return {
        "ndr": _float(ndr_res.relevant_lower_bound),
        "ndr_upper": _float(ndr_res.relevant_upper_bound),
        "pdr": _float(pdr_res.relevant_lower_bound),
        "pdr_upper": _float(pdr_res.relevant_upper_bound),
    }
