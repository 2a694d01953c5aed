"""The paired check's alternation: the idle side stopped, conditions set once, pairs across a
move or a change of core speed measured again.

The generators are fakes at the ``measure(load, duration) -> TrialResult`` seam
(tests/paired_fakes.py); the processes stopped and resumed are real (``sleep``), checked in
``/proc``. The real twin with real SUTs is in tests/integration/test_paired_twin.py.
"""

from __future__ import annotations

import contextlib
import subprocess

import pytest
from paired_fakes import DetailGen, FakeGen, PlacedGen

from dpgate.cli.main import build_parser
from dpgate.exec.stopped import proc_state as state
from dpgate.telemetry.paired import (
    abba_order,
    judge,
    judged_pairs,
    same_placement,
)
from dpgate.telemetry.placement import same_speed
from dpgate.testbeds.embedded.twin import measure_pairs


@pytest.fixture
def sleeper():
    p = subprocess.Popen(["sleep", "60"])
    yield p.pid
    p.kill()
    p.wait()


def test_the_stealer_of_the_sut_is_stopped_while_the_baseline_measures(sleeper):
    log: list = []
    sut = FakeGen("sut", 1100.0, [sleeper], [], log)
    base = FakeGen("base", 1000.0, [], [sleeper], log)
    got = measure_pairs(sut, base, 50_000.0, 4, duration=0.1)
    assert [side for side, _ in log] == abba_order(4)
    assert all(states == ["T"] for side, states in log if side == "base")
    assert state(sleeper) in ("S", "R")  # resumed
    assert [(b.sut_cpu_cycles_per_packet, s.sut_cpu_cycles_per_packet) for b, s in got] == [
        (1000.0, 1100.0)
    ] * 4


def test_nothing_stays_stopped_when_a_trial_fails(sleeper):
    log: list = []
    sut = FakeGen("sut", 1100.0, [sleeper], [], log)
    base = FakeGen("base", 1000.0, [], [sleeper], log, fail_at=3)
    with pytest.raises(RuntimeError, match="generator died"):
        measure_pairs(sut, base, 50_000.0, 4, duration=0.1)
    assert state(sleeper) in ("S", "R")


def test_gate_command_line_paired_flag():
    from dpgate.cli.gate import robot_argv

    args = build_parser().parse_args(["gate", "--paired", "suites/embedded"])
    assert "PAIRED:True" in robot_argv(args)
    assert "PAIRED:True" not in robot_argv(build_parser().parse_args(["gate", "suites/embedded"]))


def test_cleanup_of_a_prefix_removes_its_twins_scratch_dir_too(tmp_path, monkeypatch):
    from dpgate.testbeds.embedded.testbed import cleanup_prefix, run_dir
    from dpgate.testbeds.embedded.twin import twin_prefix

    monkeypatch.setenv("DPGATE_RUN_DIR", str(tmp_path))
    prefix = "zq9-"  # no namespace on any machine is named so: only the directories are ours
    other = tmp_path / "dpgate-zq9x"  # another testbed's, not an extension of ours
    for d in (run_dir(prefix), run_dir(twin_prefix(prefix)), str(other)):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    cleanup_prefix(prefix)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dpgate-zq9x"]


def test_a_pair_across_a_move_of_the_cores_is_measured_again_up_to_twice_the_pairs():
    log: list = []
    # pair 2 (sut first, then base) straddles a move: its base trial ran during it
    sut = PlacedGen("sut", 1100.0, log, ["near", "near", "far", "far", "far"])
    base = PlacedGen("base", 1000.0, log, ["near", "changed", "far", "far", "far"])
    got = measure_pairs(sut, base, 50_000.0, 4, duration=0.1)
    assert len(got) == 5 and [side for side, _ in log] == abba_order(5)
    assert [same_placement(b, s) for b, s in got] == [True, False, True, True, True]
    # a host that moves the cores in every pair: measuring stops at twice the pairs asked for
    log.clear()
    sut = PlacedGen("sut", 1100.0, log, ["near", "far"] * 4)
    base = PlacedGen("base", 1000.0, log, ["far", "near"] * 4)
    assert len(measure_pairs(sut, base, 50_000.0, 4, duration=0.1)) == 8


class HeldGen(FakeGen):
    """A side with the cpp_at_load conditions of the real generator (``hold_sut_awake`` starts
    a real process as its awake loop, ``moderate_sut`` refuses a load <= 0 as the real one's
    arithmetic would divide by it), counting how often each is entered."""

    def __init__(self, name, cycles, log, watch):
        super().__init__(name, cycles, [], watch, log)
        self.awake_pids: list = []
        self.entered = {"hold": 0, "moderate": 0}
        self.remeasure_clean = False

    @contextlib.contextmanager
    def hold_sut_awake(self):
        self.entered["hold"] += 1
        p = subprocess.Popen(["sleep", "60"])
        self.awake_pids = [p.pid]
        try:
            yield self.awake_pids
        finally:
            self.awake_pids = []
            p.kill()
            p.wait()

    @contextlib.contextmanager
    def moderate_sut(self, load):
        if not load > 0:
            raise ValueError("load must be > 0")
        self.entered["moderate"] += 1
        yield 10.0

    def measure(self, load, duration):
        assert self.remeasure_clean, "a paired trial outside the cpp_at_load conditions"
        # the other side's awake loop, looked up now (it exists only inside the conditions)
        self.watch[:] = self.other.awake_pids
        return super().measure(load, duration)


def test_both_sides_conditions_are_set_once_and_the_idle_sides_awake_loop_is_stopped():
    log: list = []
    sut, base = HeldGen("sut", 1100.0, log, []), HeldGen("base", 1000.0, log, [])
    sut.other, base.other = base, sut
    got = measure_pairs(sut, base, 50_000.0, 4, duration=0.1)
    assert len(got) == 4 and [side for side, _ in log] == abba_order(4)
    assert sut.entered == base.entered == {"hold": 1, "moderate": 1}
    assert all(states == ["T"] for _, states in log)  # the other side's loop, stopped
    assert not sut.remeasure_clean and not base.remeasure_clean  # restored after the phase


class SharingGen(HeldGen):
    """A side that can borrow the other's awake loop, as the real generator's
    ``borrow_sut_awake``: while it borrows, its ``hold_sut_awake`` starts nothing."""

    def __init__(self, name, cycles, log, watch, stealer=()):
        super().__init__(name, cycles, log, watch)
        self.extra_sut_pids = list(stealer)
        self.borrowed = False
        self.loop_seen: list = []

    @contextlib.contextmanager
    def hold_sut_awake(self):
        if self.awake_pids:  # a hold in place (borrowed) is kept
            yield self.awake_pids
            return
        with super().hold_sut_awake() as pids:
            yield pids

    @contextlib.contextmanager
    def borrow_sut_awake(self, owner):
        self.awake_pids, self.borrowed = list(owner.awake_pids), True
        try:
            yield self.awake_pids
        finally:
            self.awake_pids = []

    def measure(self, load, duration):
        self.loop_seen.append([(p, state(p)) for p in self.awake_pids])
        self.stealer_seen = getattr(self, "stealer_seen", []) + [state(p) for p in self.other.extra_sut_pids]
        return super().measure(load, duration)


def test_one_awake_loop_holds_the_sut_core_for_both_sides_and_is_never_stopped(sleeper):
    log: list = []
    sut = SharingGen("sut", 1100.0, log, [], stealer=[sleeper])
    base = SharingGen("base", 1000.0, log, [])
    sut.other, base.other = base, sut
    got = measure_pairs(sut, base, 50_000.0, 4, duration=0.1)
    assert len(got) == 4 and base.borrowed
    assert sut.entered["hold"] == 1 and base.entered["hold"] == 0  # one loop: the SUT side's
    (loop,) = {p for seen in sut.loop_seen + base.loop_seen for p, _ in seen}
    assert all(
        seen == [(loop, s)] and s in ("R", "S") for seen in sut.loop_seen + base.loop_seen for _, s in seen
    )
    # the SUT side's stealer is still stopped while the baseline measures
    assert base.stealer_seen == ["T"] * 4 and state(sleeper) in ("R", "S")


class SpedGen(DetailGen):
    """A side whose trials ran at the SUT core speeds given, in turn."""

    key = "sut_core_speed"


def test_a_polling_suts_pair_across_a_change_of_core_speed_is_measured_again_and_left_out():
    """Xeon host, 2026-11-30: the cores flipped between ~21 and ~35 M it/s from one trial to
    the next; testpmd-mac's pairs across a flip read 25-40 % off, its pairs at one speed 4 %."""
    log: list = []
    # pair 2 (sut first, then base): the base trial ran in a fast phase, the SUT's in a slow one
    sut = SpedGen("sut", 1100.0, log, [33.0, 21.0, 33.0, 34.0, 33.0])
    base = SpedGen("base", 1000.0, log, [33.0, 35.0, 34.0, 33.0, 33.0])
    got = measure_pairs(sut, base, 50_000.0, 4, duration=0.1, speeds_alike=True)
    assert len(got) == 5 and [same_speed(b, s) for b, s in got] == [True, False, True, True, True]
    assert len(judged_pairs(got, 0.10, speeds_alike=True)) == 4 and len(judged_pairs(got, 0.10)) == 5
    # a kernel SUT's or a saturated pair (speeds_alike off): the flip is scaled, not measured again
    log.clear()
    sut = SpedGen("sut", 1100.0, log, [33.0, 21.0, 33.0, 34.0])
    base = SpedGen("base", 1000.0, log, [33.0, 35.0, 34.0, 33.0])
    assert len(measure_pairs(sut, base, 50_000.0, 4, duration=0.1)) == 4


def test_judge_leaves_a_polling_suts_speed_split_pairs_out_but_not_a_kernel_suts():
    class T:
        def __init__(self, cpp, speed):
            self.sut_cycles_per_packet = self.sut_cpu_cycles_per_packet = cpp
            self.details = {"sut_core_speed": speed, "cpu": {"disturbance": 0.0}}

    steady = [(T(1000.0 + i, 33.0), T(1010.0 + i, 33.0)) for i in range(4)]
    split = [(T(1000.0, 35.0), T(1400.0, 21.0))] * 2  # +40 % across a flip, 0.25 scaling leaves ~+25 %
    polling = judge(steady + split, True, 50_000.0, 0.10)
    kernel = judge(steady + split, False, 50_000.0, 0.10)
    assert polling.pairs == 4 and polling.dropped == 2 and abs(polling.change) < 0.02
    assert kernel.pairs == 6 and kernel.dropped == 0  # kept, each trial scaled by speed^-0.5
    assert kernel.unscaled is not None and kernel.unscaled > 0.1
