"""Measuring ``cpp_at_load``: the trials at one fixed load, spaced out between the search's.

The figure itself (median of the SUT's own cycles per frame, slow host phases left out) and
its load are :func:`dpgate.telemetry.disturbance.cpp_at_load` and
:func:`~dpgate.telemetry.disturbance.cpp_at_load_rate`; here is how its trials are taken.

**Spaced, not back to back.** On the 2-core VM a kernel SUT's cycles per frame (each trial
scaled to the reference speed) move with the host in phases of a few seconds that the SUT
core's speed does not explain, so trials back to back share a phase and more of them barely
narrow a run's figure. Measured 2026-11-26 (8 bring-ups per SUT, each with 8 x 2 s trials
back to back and 8 more each between three 1 s trials at 2.2 x the load, the order
alternating): the bring-ups' medians scattered 4.3 % (linux-bridge) and 3.2 % (linux-ip4, sd)
back to back, 2.5 and 1.8 % spaced, with the same scatter within a bring-up (4.5-5.0 and
2.9-3.9 %): spaced, the trials are as good as independent (4.9 x 1.25 / sqrt 8 = 2.2 %).
So when the load is fixed (the case's ``cpp_load``) and within the generator ceiling,
:class:`SpacedCppTrials` measures one cpp_at_load trial after every :data:`SPACING` search
trials, up to the planned number, and :func:`measure_cpp_at_load` measures what is left
after the search. The search's wall-time bound does not count their time (``spent_s``). When
the search then finds an NDR below that load, they are not used (the load changes) and all
are measured after it.

>>> class Gen:
...     def measure(self, load, duration):
...         self.loads = getattr(self, "loads", []) + [load]
...         return T(load)
>>> class T:
...     def __init__(self, load): self.intended_load_pps, self.sut_cpu_cycles_per_packet, self.details = load, 3000.0, {}
>>> g = Gen()
>>> spaced = SpacedCppTrials(g, 600_000.0, 192_500.0, trials=5)
>>> search = spaced.wrap(g.measure)
>>> _ = [search(400_000.0, 1.0) for _ in range(7)]
>>> len(spaced.trials), g.loads[:4]
(2, [400000.0, 400000.0, 400000.0, 192500.0])
>>> cpp, load, got = measure_cpp_at_load(g, 600_000.0, 800_000.0, fixed_pps=192_500.0, early=spaced.early)
>>> cpp, len(got), g.loads.count(192_500.0)
(3000.0, 5, 5)
>>> SpacedCppTrials(g, 600_000.0, None).load is None  # no fixed load: all after the search
True
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from dpgate.telemetry.disturbance import (
    CPP_TRIAL_S,
    CPP_TRIALS,
    SLOW_EXTRA,
    SLOW_SHARE,
    _speeds,
    cpp_at_load,
    cpp_at_load_rate,
    fast_wanted,
    full_speed,
)
from dpgate.telemetry.placement import one_placement, rests_on

#: What :class:`SpacedCppTrials` hands to :func:`measure_cpp_at_load`: (load, trials).
Early = Tuple[Optional[float], Sequence[Any]]
#: One cpp_at_load trial after every this many search trials (1 s each in the per-commit
#: profile: about 3 s between two of them, as measured above).
SPACING = 3


@contextlib.contextmanager
def cpp_conditions(gen: Any, load: float, polling: bool = False) -> Iterator[None]:
    """The conditions of every cpp_at_load trial, on the generator ``gen``.

    For a SUT that does not poll, its cores held awake when the generator can
    (``hold_sut_awake``, see :mod:`dpgate.exec.awake`): its cycles per packet then do not
    depend on what the host ran while the core slept. Every SUT's ports moderated for ``load``
    (``moderate_sut``): each wake-up takes the frames of a fixed interval, so the figure is the
    work per frame plus a small, fixed share of a wake-up, and more work per frame shows in
    full instead of being absorbed by more frames per wake-up. For a polling SUT on af_packet
    ports the wake-ups are the SUT ports' NAPI thread preempting the poll loop on the same
    core: unmoderated, how many land inside busy iterations (and so in its busy-cycle count)
    changed from trial to trial (bimodal). A disturbed trial is measured again even when it
    lost nothing (``remeasure_clean``): a neighbour inflates cycles per packet without loss.

    It takes the generator, not its bound ``measure``: found through ``measure.__self__``, a
    wrapped ``measure`` (an observer in a test) lost the conditions without a word; the paired
    test's SUT then ran unmoderated, 26,000 kernel cycles per frame against its twin's 4,000."""
    saved = getattr(gen, "remeasure_clean", None)
    hold = getattr(gen, "hold_sut_awake", None) if not polling else None
    moderate = getattr(gen, "moderate_sut", None)
    if saved is not None:
        gen.remeasure_clean = True
    try:
        with hold() if hold else contextlib.nullcontext():
            with moderate(load) if moderate else contextlib.nullcontext():
                yield
    finally:
        if saved is not None:
            gen.remeasure_clean = saved


class SpacedCppTrials:
    """cpp_at_load trials of the generator ``gen`` at the fixed load ``fixed_pps``, one after
    every :data:`SPACING` trials of the search: :meth:`wrap` gives the search its ``measure``.
    None are measured when the load is not fixed or above the generator ceiling (``load`` is
    then None)."""

    def __init__(
        self,
        gen: Any,
        generator_max_pps: Optional[float],
        fixed_pps: Optional[float],
        polling: bool = False,
        trials: int = CPP_TRIALS,
        duration_s: float = CPP_TRIAL_S,
        spacing: int = SPACING,
    ) -> None:
        ok = fixed_pps and generator_max_pps and 0 < fixed_pps <= generator_max_pps
        self.load: Optional[float] = float(fixed_pps) if ok and fixed_pps else None
        self.gen, self.polling, self.duration_s = gen, polling, duration_s
        self.planned, self.spacing = max(1, int(trials)), max(1, int(spacing))
        self.trials: List[Any] = []
        #: wall time (s) spent in them, conditions included: not the search's
        self.spent_s = 0.0
        self._seen = 0

    def wrap(self, measure):
        """``measure`` (the search's) followed, every :data:`SPACING` calls, by one trial here."""

        def search_trial(load: float, duration: float):
            result = measure(load, duration)
            self._seen += 1
            if self.load and len(self.trials) < self.planned and self._seen % self.spacing == 0:
                t0 = time.monotonic()
                try:
                    with cpp_conditions(self.gen, self.load, self.polling):
                        self.trials.append(self.gen.measure(self.load, self.duration_s))
                finally:
                    self.spent_s += time.monotonic() - t0
            return result

        return search_trial

    @property
    def early(self) -> Early:
        """(load, trials) for :func:`measure_cpp_at_load`."""
        return self.load, list(self.trials)


def measure_cpp_at_load(
    gen: Any,
    generator_max_pps: Optional[float],
    ndr_pps: Optional[float],
    polling: bool = False,
    trials: int = CPP_TRIALS,
    duration_s: float = CPP_TRIAL_S,
    fixed_pps: Optional[float] = None,
    early: Early = (None, ()),
):
    """(cpp_at_load or None, the load, the trials) with ``gen.measure(load, duration)``; nothing is
    measured when there is no load to use (no ceiling and no NDR). ``early`` (from
    :class:`SpacedCppTrials`) counts towards the ``trials`` planned when it ran at this load.
    In a slow phase of the host (trials below :data:`SLOW_SHARE` of the full speed) more are
    measured, up to :data:`SLOW_EXTRA` times the plan, until :func:`fast_wanted` ran at speed;
    so are they while fewer than ``NEAR_MIN`` of those ran with the TG and SUT cores near
    (:mod:`dpgate.telemetry.placement`: the host moves them within seconds to minutes)."""
    load = cpp_at_load_rate(generator_max_pps, ndr_pps, fixed=fixed_pps)
    if not load:
        return None, None, []
    early_load, early_trials = early
    got: List = list(early_trials) if early_load and abs(early_load - load) <= 1e-6 * load else []
    n = max(1, int(trials))

    def wanted() -> bool:
        if len(got) < n:
            return True
        if len(got) >= SLOW_EXTRA * n:
            return False
        fast = _fast(got, gen)  # and, when the placement is read, enough with the cores near
        return len(fast) < fast_wanted(n) or rests_on(one_placement(fast)) in ("far", "mixed")

    if wanted():  # the spaced trials may have filled the plan: no conditions (~50 ms) for nothing
        with cpp_conditions(gen, load, polling):
            while wanted():
                got.append(gen.measure(load, duration_s))
    _mark_slow(got, gen)
    return cpp_at_load(got, polling=polling), load, got


def _fast(trials: List, gen: Any) -> List:
    return full_speed(trials, ref=getattr(gen, "core_speed_best", None))


def _mark_slow(trials: List, gen: Any) -> None:
    """Mark the trials of a slow phase (``details["slow_core"]``) and remember the fastest
    speed seen on the generator (``core_speed_best``) for the next case of the run."""
    best = max(_speeds(trials) + [getattr(gen, "core_speed_best", None) or 0.0])
    if not best:
        return
    fast = {id(t) for t in full_speed(trials, ref=best)}
    for t in trials:
        if id(t) not in fast and not t.details.get("superseded"):
            t.details["slow_core"] = (
                f"SUT core at {t.details['sut_core_speed']:.1f} M it/s, below "
                f"{SLOW_SHARE * 100:.0f} % of the {best:.1f} seen: left out"
            )
    if gen is not None:
        try:
            gen.core_speed_best = best
        except AttributeError:  # a generator that keeps no state: nothing to remember
            pass
