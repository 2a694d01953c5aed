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


@pytest.fixture
def clock(monkeypatch):
    """A fake clock for search.bounded only: every reading is 1 s later than the one before."""
    import types

    from dpgate.search import bounded

    c = types.SimpleNamespace(t=-1.0)

    def monotonic():
        c.t += 1.0
        return c.t

    monkeypatch.setattr(bounded, "time", types.SimpleNamespace(monotonic=monotonic))
    return c


def counted(calls, clock=None):
    """A measure on the hard-capacity SUT that notes each load (and, given the clock, makes
    each trial take one more second of it)."""
    sut = make_sut("hard", seed=1)

    def measure(load, duration):
        calls.append(load)
        if clock is not None:
            clock.t += 1.0
        return sut.measure(load, duration)

    return measure


def test_a_cut_search_with_lower_bounds_needs_no_rescue(clock):
    """The fake clock ends the search after 6 trials; by then MLRsearch has passed loads under
    the capacity, so no rescue trial runs."""
    calls = []
    run = search_ndr_pdr(counted(calls), 1e5, 1.5e6, "0", "0.5%", "per-commit", {}, time_limit=6.5)
    assert not run.complete and len(calls) == run.res.trial_count == 6
    assert 0.9e6 <= run.ndr <= 1.0e6 and run.pdr >= run.ndr


def test_time_paused_for_other_trials_is_not_the_searchs(clock):
    """The same clock; each trial is followed by one of another kind (cpp_at_load spaced
    between the search's, dpgate.telemetry.cppload) taking a second, which ``paused``
    reports: the bound lets through as many search trials as without them, where counting
    that time would have cut the search at 3."""
    calls = []
    measure = counted(calls, clock)
    run = search_ndr_pdr(
        measure, 1e5, 1.5e6, "0", "0.5%", "per-commit", {}, 6.5, paused=lambda: float(len(calls))
    )
    assert not run.complete and run.res.trial_count == 6
    clock.t, calls[:] = -1.0, []
    cut = search_ndr_pdr(measure, 1e5, 1.5e6, "0", "0.5%", "per-commit", {}, 6.5)
    assert not cut.complete and cut.res.trial_count == 3


_LIMIT_SUITE = """*** Settings ***
Resource    {resource}

*** Test Cases ***
Case
    ${{t}}=    Thresholds For    ${{CASE_NF}}    64B
    ${{limit}}=    Search Time Limit    ${{t}}
    Should Be Equal As Numbers    ${{limit}}    ${{EXPECTED}}
"""


@pytest.mark.parametrize(
    "nf, given, expected",
    [
        ("slow", None, 150),  # the case's search_time_limit
        ("plain", None, 90),  # none in the file: the embedded default
        ("slow", "0", 0),  # SEARCH_TIME_LIMIT wins, 0 included (no bound)
        ("plain", "35", 35),
        ("plain", "2min", "SEARCH_TIME_LIMIT: expected seconds >= 0 (0 = no bound), got '2min'"),
    ],
)
def test_the_embedded_suites_take_the_bound_from_the_variable_then_the_case(tmp_path, nf, given, expected):
    """Through the real resources/embedded.resource (its `Search Time Limit` keyword) and the
    real Gates library: SEARCH_TIME_LIMIT > the case's ``search_time_limit`` > 90 s."""
    import os

    from helpers import run_robot_quietly

    resource = os.path.join(os.path.dirname(__file__), "..", "..", "resources", "embedded.resource")
    suite = tmp_path / "Limit.robot"
    suite.write_text(_LIMIT_SUITE.format(resource=os.path.abspath(resource)))
    th = tmp_path / "th.yaml"
    th.write_text("nfs: {slow: {all: {search_time_limit: 150}}, plain: {64B: {ndr_min: 1 Mpps}}}")
    variables = [f"THRESHOLDS_FILE:{th}", "MACHINE_CLASS:base", f"CASE_NF:{nf}", f"EXPECTED:{expected}"]
    if given is not None:
        variables.append(f"SEARCH_TIME_LIMIT:{given}")
    test = run_robot_quietly(suite, tmp_path / "out", variables, [])
    if isinstance(expected, str):  # bad input: one error naming the variable
        assert test.status == "FAIL" and expected in test.message, test.message
        return
    assert (test.status, test.message) == ("PASS", "")


def test_the_shipped_thresholds_give_the_slow_searching_suts_a_longer_bound():
    """OVS AF_XDP and OVS-DPDK (their PMD shares the SUT core with their ports' NAPI threads:
    soft zero-loss goals), l3fwd-ip4 and testpmd-io (quiet searches at the 90 s bound) and
    testpmd-mac (cut twice in slow phases) get 150 s on every machine class; the others the default."""
    import os

    from dpgate.config.thresholds import load_thresholds

    here = os.path.join(os.path.dirname(__file__), "..", "..", "variables")
    base = load_thresholds(os.path.join(here, "embedded.yaml"))
    for top in ("embedded-zen4.yaml", "embedded-fast.yaml"):
        f = base.overlaid(load_thresholds(os.path.join(here, top)))
        for size in ("64B", "IMIX", "1518B"):
            assert f.lookup("ovs-afxdp-xconnect", size).search_time_limit == 150
            assert f.lookup("ovsdpdk-xconnect", size).search_time_limit == 150
            assert f.lookup("l3fwd-ip4", size).search_time_limit == 150
            assert f.lookup("testpmd-io", size).search_time_limit == 150
            assert f.lookup("testpmd-mac", size).search_time_limit == 150
            assert f.lookup("linux-ip4", size).search_time_limit is None
            assert f.lookup("linux-xconnect", size).search_time_limit is None
