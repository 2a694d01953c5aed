"""cpp_at_load's trials spaced between the search's (dpgate.telemetry.cppload).

The boundary faked here is the generator the Robot layer hands over: ``measure(load,
duration)`` plus the conditions it offers (``hold_sut_awake``, ``moderate_sut``,
``remeasure_clean``), as :class:`dpgate.traffic.trialflow.EmbeddedGenerator` has them. The fake
records under which conditions each trial ran, and refuses what the real one cannot do: a
second hold of the SUT core while one is held, a trial at no load.
"""

from __future__ import annotations

import contextlib

import pytest

from dpgate.telemetry.cppload import SpacedCppTrials, measure_cpp_at_load


class Trial:
    def __init__(self, load, cpp, speed):
        self.intended_load_pps = load
        self.sut_cpu_cycles_per_packet = cpp
        self.sut_cycles_per_packet = None
        self.disturbance = 0.0
        self.details = {"sut_core_speed": speed}


class Gen:
    def __init__(self, speeds=None, rtts=None):
        self.rtts = list(rtts or [])  # the cross-core probe's reading after each trial
        self.remeasure_clean = False
        self.core_speed_best = None
        self.awake = False
        self.moderated = 0.0
        self.log = []
        self.speeds = list(speeds or [])
        self.holds = 0

    @contextlib.contextmanager
    def hold_sut_awake(self):
        if self.awake:
            raise RuntimeError("the SUT core is already held awake")
        self.awake = True
        self.holds += 1
        try:
            yield [4242]
        finally:
            self.awake = False

    @contextlib.contextmanager
    def moderate_sut(self, load):
        self.moderated = load
        try:
            yield 333.0
        finally:
            self.moderated = 0.0

    def measure(self, load, duration):
        if not load or load <= 0:
            raise ValueError(f"load must be > 0 pps, got {load}")
        self.log.append((load, duration, self.awake, self.moderated, self.remeasure_clean))
        speed = self.speeds.pop(0) if self.speeds else 30.0
        t = Trial(load, 3000.0 + len(self.log), speed)
        if self.rtts:
            t.details["xcore_rtt_ns"] = self.rtts.pop(0)
        return t


def searched(g, n, load, ceiling=600_000.0, fixed=192_500.0, **kw):
    """``n`` search trials at ``load`` through the spacing; the SpacedCppTrials."""
    spaced = SpacedCppTrials(g, ceiling, fixed, **kw)
    search = spaced.wrap(g.measure)
    for _ in range(n):
        search(load, 1.0)
    return spaced


def test_spaced_trials_between_the_search_trials_count_towards_the_plan():
    g = Gen()
    spaced = SpacedCppTrials(g, 600_000.0, 192_500.0, trials=5)
    search = spaced.wrap(g.measure)
    for _ in range(7):
        search(500_000.0, 1.0)
        # the search's own trials run unheld, unmoderated, not re-measuring clean trials
        assert (g.awake, g.moderated, g.remeasure_clean) == (False, 0.0, False)
    assert [e[0] for e in g.log] == [5e5] * 3 + [192_500.0] + [5e5] * 3 + [192_500.0] + [5e5]
    assert spaced.spent_s > 0
    cpp, at, got = measure_cpp_at_load(g, 600_000.0, 800_000.0, fixed_pps=192_500.0, early=spaced.early)
    assert at == 192_500.0 and len(got) == 5 and got[:2] == spaced.trials
    cpp_log = [e for e in g.log if e[0] == 192_500.0]
    assert len(cpp_log) == 5
    assert all(awake and moderated == 192_500.0 and clean for _, _, awake, moderated, clean in cpp_log)
    # 3004 and 3008 between the search's, then 3010, 3011, 3012
    assert cpp == 3010.0


def test_no_more_than_planned_between_a_long_search():
    g = Gen()
    spaced = searched(g, 30, 500_000.0, trials=2)
    assert len(spaced.trials) == 2 and len(g.log) == 32
    _, _, got = measure_cpp_at_load(g, 6e5, 8e5, fixed_pps=192_500.0, trials=2, early=spaced.early)
    assert len(got) == 2 and len(g.log) == 32
    # the plan was filled at speed between the search's trials: the SUT core not held again
    assert g.holds == 2


def test_spaced_trials_at_another_load_are_not_used():
    g = Gen()
    spaced = searched(g, 6, 300_000.0, trials=4)
    # the search found NDR 150 kpps, below the fixed 192.5 kpps: half of it instead, all after
    cpp, at, got = measure_cpp_at_load(g, 6e5, 150_000.0, fixed_pps=192_500.0, trials=4, early=spaced.early)
    assert at == 75_000.0 and len(got) == 4
    assert all(t.intended_load_pps == 75_000.0 for t in got)


@pytest.mark.parametrize("ceiling, fixed", [(600_000.0, None), (150_000.0, 192_500.0), (None, 192_500.0)])
def test_none_between_without_a_fixed_load_within_the_ceiling(ceiling, fixed):
    g = Gen()
    spaced = searched(g, 9, 100_000.0, ceiling, fixed, trials=5)
    assert spaced.early == (None, []) and spaced.spent_s == 0.0
    assert {e[0] for e in g.log} == {100_000.0}


def test_slow_spaced_trials_are_made_up_for_after_the_search():
    # the two spaced trials in a slow phase (15 M it/s against 30): three at full speed wanted
    g = Gen(speeds=[30.0, 30.0, 30.0, 15.0, 30.0, 30.0, 30.0, 15.0])
    g.core_speed_best = 30.0
    spaced = searched(g, 6, 500_000.0, trials=5)
    cpp, _, got = measure_cpp_at_load(g, 600_000.0, 800_000.0, fixed_pps=192_500.0, early=spaced.early)
    assert len(got) == 5
    assert [bool(t.details.get("slow_core")) for t in got] == [True, True, False, False, False]
    assert cpp == 3010.0  # the three at full speed after the search: 3009, 3010, 3011


def test_polling_sut_is_not_held_awake():
    g = Gen()
    searched(g, 6, 200_000.0, fixed=72_000.0, polling=True, trials=4)
    cpp_log = [e for e in g.log if e[0] == 72_000.0]
    assert [e[2] for e in cpp_log] == [False, False] and all(e[3] == 72_000.0 for e in cpp_log)


def test_a_failing_trial_between_still_counts_its_time_and_leaves_no_condition_behind():
    g = Gen()
    spaced = SpacedCppTrials(g, 600_000.0, 192_500.0, trials=4)
    real = g.measure

    def measure(load, duration):
        if load == 192_500.0:
            raise RuntimeError("generator died")
        return real(load, duration)

    g.measure = measure
    search = spaced.wrap(real)
    search(500_000.0, 1.0)
    search(500_000.0, 1.0)
    with pytest.raises(RuntimeError, match="generator died"):
        search(500_000.0, 1.0)
    assert spaced.spent_s > 0 and (g.awake, g.moderated, g.remeasure_clean) == (False, 0.0, False)


def test_with_the_cores_far_apart_more_trials_are_measured_until_two_ran_near():
    from dpgate.telemetry.placement import rests_on

    # five planned, all far (the host moved the vCPUs apart); then near again
    g = Gen(rtts=[470.0] * 5 + [460.0, 180.0, 450.0, 175.0, 182.0])
    cpp, _, got = measure_cpp_at_load(g, 600_000.0, 800_000.0, fixed_pps=192_500.0, trials=5)
    assert len(got) == 9 and rests_on(got) == "mixed"
    assert cpp == 3008.0  # the two near trials (3007, 3009), not the median of all nine


def test_cores_far_apart_for_longer_than_the_extra_trials_end_at_twice_the_plan():
    g = Gen(rtts=[470.0] * 30)
    cpp, _, got = measure_cpp_at_load(g, 600_000.0, 800_000.0, fixed_pps=192_500.0, trials=5)
    assert len(got) == 10 and cpp == 3005.5  # every trial, far: the gates hold a rise inconclusive


def test_unread_placement_measures_the_plan_only():
    g = Gen()
    _, _, got = measure_cpp_at_load(g, 600_000.0, 800_000.0, fixed_pps=192_500.0, trials=5)
    assert len(got) == 5


def test_an_observed_measure_keeps_the_conditions():
    # a caller that replaces the generator's measure with an observer (as the paired
    # integration test does) still gets its trials held and moderated: the conditions come
    # from the generator, not from the bound method (through whose __self__ a plain function
    # lost them: 26,000 kernel cycles per frame against 4,000, 2026-12-02)
    g, seen = Gen(), []
    real = g.measure

    def observed(load, duration):
        seen.append(load)
        return real(load, duration)

    g.measure = observed
    spaced = searched(g, 6, 500_000.0, trials=3)
    cpp, _, got = measure_cpp_at_load(g, 6e5, 8e5, fixed_pps=192_500.0, trials=3, early=spaced.early)
    assert len(got) == 3 and seen.count(192_500.0) == 3
    cpp_log = [e for e in g.log if e[0] == 192_500.0]
    assert all(awake and moderated == 192_500.0 and clean for _, _, awake, moderated, clean in cpp_log)
