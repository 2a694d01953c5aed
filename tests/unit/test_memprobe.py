"""The memory probe on the SUT core: a real pinned child with numpy, blocked between reads,
gone on stop; a child that cannot start reads None instead of failing the trial."""

from __future__ import annotations

import os
import time

from helpers import gone, orphaned_child

from dpgate.exec import memprobe
from dpgate.exec.memprobe import MemoryProbe
from dpgate.exec.speedprobe import TrialSpeeds

CPU = sorted(os.sched_getaffinity(0))[-1]


def _run_s(pid: int) -> float:
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0]) / 1e9


def test_a_read_gathers_on_its_pinned_core_and_then_waits():
    with MemoryProbe(CPU, passes=1) as probe:
        pid = probe.pid
        assert pid and os.sched_getaffinity(pid) == {CPU}
        ran = _run_s(pid)
        got = probe.read()
        assert got is not None and 0.05 < got < 10_000  # ns per gathered element
        assert _run_s(pid) - ran > memprobe.GATHER_ELEMENTS * 0.05e-9  # it did the gather
        ran = _run_s(pid)
        time.sleep(0.2)
        assert _run_s(pid) - ran < 0.01  # blocked between reads: it takes no core from a SUT
    assert probe.pid is None and gone(pid)


def test_a_probe_that_cannot_start_reads_none_once_logged(caplog):
    probe = MemoryProbe(4095)
    assert probe.read() is None and probe.failed
    assert "could not start the memory probe on CPU 4095" in caplog.text and "numpy" in caplog.text
    assert probe.read() is None and probe.proc is None  # not tried again per trial


def test_the_probe_dies_with_its_parent():
    pid = orphaned_child("from dpgate.exec.memprobe import MemoryProbe", f"MemoryProbe({CPU}).start().pid")
    assert gone(pid), "the memory probe outlived the process that started it"


def test_trial_speeds_read_memory_only_around_trials_that_ask():
    speeds = TrialSpeeds([CPU], probe_s=0.002, memory_cpu=CPU)
    try:
        speeds.begin()
        speeds.end()
        assert speeds.memory_ns is None and speeds.memory.proc is None  # not asked: not started
        speeds.begin(memory=True)
        speeds.end()
        assert speeds.memory_ns is not None and speeds.memory_ns > 0
        speeds.begin()
        speeds.end()
        assert speeds.memory_ns is None  # one trial's reading is not the next one's
        pid = speeds.memory.pid
    finally:
        speeds.close()
    assert gone(pid)
