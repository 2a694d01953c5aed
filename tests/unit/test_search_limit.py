"""The wall-clock bound of `Find NDR And PDR` (both testbeds): a search cut short keeps its
trials, and when no load passed a goal yet, rescue trials measure a lower bound instead
of reporting 0 (run on the simulated hard-capacity SUT: 1 Mpps, no loss below)."""

import pytest

from dpgate.robotlib import RESCUE_STEPS, search_ndr_pdr
from dpgate.search.simulated import make_sut


def test_no_lower_bound_at_the_time_limit_is_measured_not_zero():
    sut = make_sut("hard", seed=1)
    calls = []

    def measure(load, duration):
        calls.append(load)
        return sut.measure(load, duration)

    run = search_ndr_pdr(measure, 1e5, 1.5e6, "0", "0.5%", "per-commit", {}, time_limit=1e-9)
    assert not run.complete
    # stepped down from max 1.5 Mpps: 1.425, 1.35, 1.2 lose frames, 0.975 passes both goals
    assert calls == pytest.approx([1.5e6 * f for f in RESCUE_STEPS[:4]])
    assert run.ndr == pytest.approx(0.975e6) and run.pdr == pytest.approx(0.975e6)
    assert run.res.ndr_upper == pytest.approx(1.2e6)


def test_a_cut_search_with_lower_bounds_needs_no_rescue(monkeypatch):
    """A fake clock (1 s per check, search.bounded only) ends the search after 6 trials; by then
    MLRsearch has passed loads under the capacity, so no rescue trial runs."""
    import types

    from dpgate.search import bounded as robotlib

    clock = iter(range(10_000))
    monkeypatch.setattr(robotlib, "time", types.SimpleNamespace(monotonic=lambda: float(next(clock))))
    sut = make_sut("hard", seed=1)
    calls = []

    def measure(load, duration):
        calls.append(load)
        return sut.measure(load, duration)

    run = search_ndr_pdr(measure, 1e5, 1.5e6, "0", "0.5%", "per-commit", {}, time_limit=6.5)
    assert not run.complete and len(calls) == run.res.trial_count == 6
    assert 0.9e6 <= run.ndr <= 1.0e6 and run.pdr >= run.ndr


def test_time_paused_for_other_trials_is_not_the_searchs(monkeypatch):
    """The same fake clock; ``paused`` reports 1 s per trial spent on trials of another kind
    between the search's (cpp_at_load, dpgate.telemetry.cppload): the bound then lets through
    as many search trials as without them, where counting that time would have cut it at 3."""
    import types

    from dpgate.search import bounded as robotlib

    clock = iter(range(10_000))
    monkeypatch.setattr(robotlib, "time", types.SimpleNamespace(monotonic=lambda: float(next(clock))))
    sut = make_sut("hard", seed=1)
    calls = []

    def measure(load, duration):
        calls.append(load)
        next(clock)  # the other trial after this one takes a second of the clock
        return sut.measure(load, duration)

    run = search_ndr_pdr(
        measure, 1e5, 1.5e6, "0", "0.5%", "per-commit", {}, 6.5, paused=lambda: float(len(calls))
    )
    assert not run.complete and run.res.trial_count == 6
    clock = iter(range(10_000))
    calls.clear()
    cut = search_ndr_pdr(measure, 1e5, 1.5e6, "0", "0.5%", "per-commit", {}, 6.5)
    assert not cut.complete and cut.res.trial_count == 3
