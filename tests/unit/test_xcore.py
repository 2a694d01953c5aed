"""The cross-core probe: the real xcore pair (C) bouncing a cache line, blocked between reads,
gone with its parent; a core it cannot get gives None, never a hang."""

from __future__ import annotations

import os
import time

import pytest
from helpers import gone, orphaned_child

from dpgate.exec.xcore import CrossCoreProbe, TrialPlacement, placement, xcore_binary
from dpgate.model.errors import EnvironmentProblem

CPUS = sorted(os.sched_getaffinity(0))
two_cpus = pytest.mark.skipif(
    len(CPUS) < 2, reason="the cross-core probe needs two CPUs this process may use"
)
built = pytest.mark.skipif(
    xcore_binary() is None, reason="build/xcore/xcore is not built: run 'bash .ci/install'"
)


def _children(pid: int) -> list:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(x) for x in fh.read().split()]


def _run_s(pid: int) -> float:
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0]) / 1e9


@built
@two_cpus
def test_a_read_bounces_a_line_between_the_two_pinned_cores_then_both_wait():
    a, b = CPUS[0], CPUS[-1]
    with CrossCoreProbe(a, b, rounds=2000) as probe:
        (pid,) = probe.pids
        (sibling,) = _children(pid)
        rtt = probe.read()  # the sibling served it: it has pinned itself by now
        assert os.sched_getaffinity(pid) == {a} and os.sched_getaffinity(sibling) == {b}
        # a cache line's round trip: tens of ns at best, far below a scheduler's time slice
        assert rtt is not None and 20.0 < rtt < 100_000.0, rtt
        ran = _run_s(pid) + _run_s(sibling)
        time.sleep(0.2)
        assert _run_s(pid) + _run_s(sibling) - ran < 0.01  # blocked between reads
    assert probe.pids == [] and gone(pid) and gone(sibling)


@built
def test_a_core_the_far_side_cannot_get_reads_none_within_the_timeout_and_stops_the_probe():
    # both on one core: the sibling only runs when the scheduler takes the core from the other
    cpu = CPUS[-1]
    with CrossCoreProbe(cpu, cpu, rounds=200_000, timeout_s=0.3) as probe:
        (pid,) = probe.pids
        t = time.monotonic()
        assert probe.read() is None
        assert time.monotonic() - t < 2.0
        assert probe.pids == [] and gone(pid) and probe.read() is None


@built
def test_a_cpu_that_does_not_exist_is_one_clear_error():
    with pytest.raises(EnvironmentProblem, match=r"cross-core probe on CPUs 4095 and 0.*taskset"):
        CrossCoreProbe(4095, 0).start()


@built
def test_the_pair_dies_with_the_process_that_started_it():
    pid = orphaned_child(
        "from dpgate.exec.xcore import CrossCoreProbe",
        f"CrossCoreProbe({CPUS[0]}, {CPUS[-1]}).start().proc.pid",
    )
    assert gone(pid)


def test_placement_splits_the_two_phases():
    assert [placement(v) for v in (75.0, 249.9, 250.0, 430.0, None)] == ["near", "near", "far", "far", None]


def test_without_the_probe_built_starting_it_is_one_error_naming_the_install(monkeypatch):
    monkeypatch.setenv("DPGATE_XCORE", "/nonexistent/xcore")
    with pytest.raises(EnvironmentProblem, match=r"xcore is not built.*bash .ci/install"):
        CrossCoreProbe(0, 0).start()
    tp = TrialPlacement(CPUS[0], CPUS[-1])  # a trial then carries no reading, and says why once
    tp.begin()
    assert tp.end() == {} and tp.off


@built
@two_cpus
def test_a_trial_reads_before_and_after_and_a_move_in_between_is_changed(monkeypatch):
    tp = TrialPlacement(CPUS[0], CPUS[-1], rounds=2000)
    try:
        tp.begin()
        got = tp.end()
        assert set(got) == {"xcore_rtt_ns", "xcore_rtt_before_ns", "xcore_placement"}
        assert got["xcore_placement"] in ("near", "far", "changed")
        # the two reads disagree: the host moved the cores during the trial
        reads = iter([120.0, 480.0])
        monkeypatch.setattr(tp, "_read", lambda pids: next(reads))
        tp.begin()
        assert tp.end() == {"xcore_rtt_ns": 480.0, "xcore_rtt_before_ns": 120.0, "xcore_placement": "changed"}
    finally:
        tp.close()


class _T:
    def __init__(self, cpp, rtt, load=192_500.0):
        self.intended_load_pps, self.disturbance = load, 0.01
        self.sut_cpu_cycles_per_packet, self.sut_cycles_per_packet = cpp, None
        self.details = {"xcore_rtt_ns": rtt}


def test_the_case_records_the_placement_its_cpp_at_load_rests_on_and_each_placements_figure():
    from dpgate.telemetry.disturbance import case_signal, cpp_at_load

    trials = [_T(2560.0, 181.0), _T(3050.0, 470.0), _T(2580.0, 176.0), _T(3040.0, 455.0), _T(2570.0, 190.0)]
    cpp = cpp_at_load(trials)
    out = case_signal([], [None], cpp_trials=trials, cpp=cpp, cpp_load=192_500.0)
    assert cpp == out["cpp_at_load"] == 2570.0
    assert out["cpp_at_load_placement"] == "near" and out["placement"] == "near"
    assert out["cpp_at_load_near"] == 2570.0 and out["cpp_at_load_far"] == 3045.0
    # one near trial among far ones: the figure rests on the far ones, a far figure
    mostly_far = [_T(2560.0, 181.0), _T(3050.0, 470.0), _T(3040.0, 455.0)]
    out = case_signal([], [None], cpp_trials=mostly_far, cpp=cpp_at_load(mostly_far), cpp_load=192_500.0)
    assert out["cpp_at_load"] == 3045.0 and out["cpp_at_load_placement"] == "far", out
    # one of each: the figure rests on both, and says so
    one_each = mostly_far[:2]
    out = case_signal([], [None], cpp_trials=one_each, cpp=cpp_at_load(one_each), cpp_load=192_500.0)
    assert out["cpp_at_load"] == 2805.0 and out["cpp_at_load_placement"] == "mixed", out
    # no reading (a polling SUT): no placement keys at all
    unread = [_T(5000.0, None), _T(5100.0, None)]
    out = case_signal([], [None], cpp_trials=unread, cpp=cpp_at_load(unread), cpp_load=72_000.0)
    assert not {k for k in out if "placement" in k or k.endswith(("_near", "_far")) or k.startswith("xcore")}


# A poll loop in a thread other than the main one (as testpmd's and OVS's PMD threads are),
# pinned to one core; the main thread sleeps.
_POLLER = (
    "import os,sys,threading,time\n"
    "os.sched_setaffinity(0,{int(sys.argv[1])})\n"
    "def spin():\n"
    "    while True: pass\n"
    "threading.Thread(target=spin,daemon=True).start()\n"
    "print('up',flush=True)\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def poller():
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", _POLLER, str(CPUS[-1])], stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None and p.stdout.readline().strip() == "up"
    yield p
    p.kill()
    p.wait()


def test_stopped_waits_for_every_thread_and_resumes_them_after(poller):
    from dpgate.exec.stopped import running_tasks, stopped, tasks

    assert len(tasks(poller.pid)) == 2 and running_tasks([poller.pid])  # the spinning thread
    with stopped([poller.pid]) as running:
        assert running == [] and running_tasks([poller.pid]) == []
        ran = _run_s(poller.pid)
        time.sleep(0.05)
        assert _run_s(poller.pid) - ran < 0.005
    time.sleep(0.05)
    assert running_tasks([poller.pid])  # resumed
    with stopped([2**22 + 5]) as running:  # a pid that is gone: nothing to wait for
        assert running == []


@built
@two_cpus
def test_beside_a_poller_on_the_far_core_a_read_stops_it_and_resumes_it(poller):
    from dpgate.exec.stopped import running_tasks

    with CrossCoreProbe(CPUS[0], CPUS[-1], rounds=2000, timeout_s=5.0) as probe:
        t = time.monotonic()
        rtt = probe.read_stopped([poller.pid])
        took = time.monotonic() - t
        assert rtt is not None and 20.0 < rtt < 100_000.0, rtt
        # no wait for the poller's time slice: a 2,000-round read takes milliseconds
        assert took < 0.5, took
        time.sleep(0.05)
        assert running_tasks([poller.pid])  # the poller runs again
