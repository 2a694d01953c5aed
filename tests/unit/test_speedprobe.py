"""The speed probe between trials: real pinned processes, blocked between reads, gone on stop."""

from __future__ import annotations

import os
import time

import pytest
from helpers import gone, orphaned_child

from dpgate.exec.speedprobe import LASTING, RECHECK_S, SpeedProbe, TrialSpeeds, slow_share
from dpgate.model.errors import EnvironmentProblem

CPU = sorted(os.sched_getaffinity(0))[-1]


def _run_s(pid: int) -> float:
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0]) / 1e9


def test_a_read_times_the_loop_on_its_pinned_core_and_the_probe_then_waits():
    with SpeedProbe([CPU], probe_s=0.02) as probe:
        (pid,) = probe.pids
        assert os.sched_getaffinity(pid) == {CPU}
        got = probe.read()
        assert list(got) == [CPU] and got[CPU] > 0.1  # M iterations per CPU second
        ran = _run_s(pid)
        assert ran >= 0.02  # it spun for the CPU time asked
        time.sleep(0.2)
        assert _run_s(pid) - ran < 0.01  # blocked between reads: it takes no core from a SUT
        assert list(probe.seen) == [got[CPU]]
    assert probe.pids == [] and gone(pid)


def test_a_cpu_that_does_not_exist_is_one_clear_error():
    with pytest.raises(EnvironmentProblem, match=r"speed probe on CPU 4095.*taskset"):
        SpeedProbe([4095]).start()


def test_the_probe_dies_with_its_parent():
    pid = orphaned_child(
        "from dpgate.exec.speedprobe import SpeedProbe", f"SpeedProbe([{CPU}]).start().pids[0]"
    )
    assert gone(pid), "the speed probe outlived the process that started it"


def test_a_dead_probe_leaves_its_core_out_instead_of_failing_the_trial():
    with SpeedProbe([CPU]) as probe:
        probe.procs[CPU].kill()
        probe.procs[CPU].wait()
        assert probe.read() == {}
        assert slow_share(probe.read(), 30.0) is None


def test_back_to_back_trials_read_once_each_and_keep_the_slower_of_the_two():
    speeds = TrialSpeeds([CPU], fresh_s=5.0, probe_s=0.002)
    try:
        speeds.begin()  # nothing read yet: reads
        first = speeds.end()
        speeds.begin()  # the last end is fresh: no read
        speeds.end()
        assert len(speeds.probe.seen) == 3 and first[CPU] > 1.0
        speeds._before = {CPU: 1.0}  # a reading before the trial no real core falls below
        assert speeds.end() == {CPU: 1.0} and list(speeds.recent)[-1] == 1.0
    finally:
        speeds.close()
    assert speeds.probe.pids == []


def test_the_reference_is_the_declared_speed_else_the_sessions_own_readings():
    probe = SpeedProbe([CPU])
    assert probe.reference(30.0) == 30.0
    probe.seen = [30.0] * 9
    assert probe.reference() is None  # too few readings to say what full speed is
    probe.seen = [15.0] * 5 + [29.0, 30.0, 31.0, 30.0, 29.5, 30.5]
    assert 30.0 <= probe.reference() <= 31.0
    assert slow_share({0: 15.0}, probe.reference()) > 0.45


def test_cores_are_read_one_after_the_other_and_only_those_asked():
    cpus = sorted(os.sched_getaffinity(0))[:2]
    with SpeedProbe(cpus, probe_s=0.01) as probe:
        assert set(probe.read()) == set(cpus)
        assert list(probe.read([cpus[-1]])) == [cpus[-1]]
        # one at a time: each probe's spin ends before the next one starts, so the reads
        # take at least the sum of their CPU times
        t0 = time.monotonic()
        probe.read()
        assert time.monotonic() - t0 >= 0.01 * len(cpus)


def test_a_slow_reading_at_a_trials_end_is_read_again_and_the_second_one_counts():
    speeds = TrialSpeeds([CPU], fresh_s=5.0, probe_s=0.002)
    try:
        speeds.begin()
        assert speeds.end(ref=0.001) and speeds.rechecked == {}  # at full speed: read once
        assert len(speeds.probe.seen) == 2
        t0 = time.monotonic()
        got = speeds.end(ref=1e6)  # no real core reaches this: every reading is slow
        assert time.monotonic() - t0 >= RECHECK_S  # read again RECHECK_S later
        first, again = list(speeds.probe.seen)[-2:]
        assert speeds.rechecked == {CPU: first} and len(speeds.probe.seen) == 4
        assert got[CPU] == min(again, speeds._before[CPU])  # the second reading counts
        # still slow when read again LASTING times in a row: a lasting phase, read once per
        # trial until it reads at full speed
        assert speeds.lasting == {CPU: 1}
        speeds.end(ref=1e6)
        assert list(speeds.rechecked) == [CPU] and speeds.lasting == {CPU: LASTING}
        speeds.end(ref=1e6)
        assert speeds.rechecked == {} and len(speeds.probe.seen) == 7
        speeds.end(ref=0.001)  # at full speed again
        assert speeds.lasting == {}
        speeds.end(ref=1e6)
        assert list(speeds.rechecked) == [CPU] and len(speeds.probe.seen) == 10
    finally:
        speeds.close()
