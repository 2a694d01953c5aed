"""Stop processes for a moment (``SIGSTOP``) and be sure every thread of them is stopped.

A polling SUT (testpmd, OVS PMD threads) holds its core whether or not traffic flows. Two
things need that core free for a moment: the paired check's other side
(``dpgate.testbeds.embedded.twin``) and the cross-core probe (``dpgate.exec.xcore``), whose
far child must run on the SUT core. ``SIGSTOP`` to a process stops its threads one after
the other; the poll loop is often a thread other than the main one, so :func:`wait_stopped`
looks at every task in ``/proc/<pid>/task``, not only at the pid.

    with stopped([pid_of_testpmd]) as running:   # running: tasks still not stopped (bounded wait)
        ...                                      # the core is free
    # SIGCONT sent, whatever happened inside
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from typing import Iterator, List, Sequence

#: How often wait_stopped looks at /proc (s).
POLL_S = 0.0005


def signal_all(pids: Sequence[int], sig: int) -> None:
    """``sig`` to each pid that still exists."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def proc_state(pid: int, task: int = 0) -> str:
    """The state letter of ``pid`` (or of its thread ``task``) in /proc (``T`` stopped, ``S``/``R``
    running), ``gone`` if none.

    >>> proc_state(os.getpid()) in ("R", "S"), proc_state(2**22 + 7)
    (True, 'gone')
    """
    path = f"/proc/{pid}/task/{task}/stat" if task else f"/proc/{pid}/stat"
    try:
        with open(path) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def tasks(pid: int) -> List[int]:
    """The thread ids of ``pid`` (empty when it is gone)."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def running_tasks(pids: Sequence[int]) -> List[int]:
    """The threads of ``pids`` that are neither stopped nor gone."""
    return [t for p in pids for t in tasks(p) if proc_state(p, t) not in ("T", "t", "gone", "Z", "X")]


def wait_stopped(pids: Sequence[int], timeout: float = 1.0) -> List[int]:
    """Wait (bounded) until every thread of every pid is stopped or gone; returns the thread
    ids still running."""
    deadline = time.monotonic() + timeout
    while True:
        running = running_tasks(pids)
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(POLL_S)


@contextlib.contextmanager
def stopped(pids: Sequence[int], timeout: float = 1.0) -> Iterator[List[int]]:
    """``pids`` stopped while the block runs (it gets the threads still running after a wait
    of at most ``timeout`` s); ``SIGCONT`` to all of them after it, also on an exception."""
    pids = list(pids)
    signal_all(pids, signal.SIGSTOP)
    try:
        yield wait_stopped(pids, timeout)
    finally:
        signal_all(pids, signal.SIGCONT)


@contextlib.contextmanager
def stopped_once(pids: Sequence[int], timeout: float = 1.0) -> Iterator[List[int]]:
    """Several reads that each need ``pids`` stopped (the speed probe and the cross-core probe
    beside a polling SUT), under one stop: yields the pids each read must still stop on its
    own: none when every thread stopped, all of them when one still ran after ``timeout``
    (each read then tries again and says so). Nothing to stop: yields an empty list at once.

    >>> with stopped_once([]) as left:
    ...     left
    []
    """
    pids = list(pids)
    if not pids:
        yield []
        return
    with stopped(pids, timeout) as running:
        yield pids if running else []
