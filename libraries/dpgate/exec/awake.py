"""Keep a core awake: a busy loop at ``SCHED_IDLE`` priority pinned to it, for as long as needed.

Why: on a VM an idle vCPU halts, the host gives the physical core to other work, and every
wake-up of the SUT (an interrupt-driven kernel SUT wakes per batch of frames) starts with
caches and branch predictors others have used. How much others used them changes from second
to second, so the SUT's own cycles per packet at a fixed load moved 8-22 % between 2 s trials
of one bring-up on the 2-core VM. With the core held awake (what ``idle=poll`` or a busy-poll
does on a lab DUT, here without a reboot) the same trials moved 3.6-6.3 %, and three quiet
gate runs per kernel SUT agreed to 3.6-5.2 %, at a level ~25 % higher (the switch from the
loop to the SUT is part of each wake-up; docs/embedded.md has the tables). The loop takes only time nobody else wants: any other task on the core
preempts it at once, and its footprint is a few cache lines. Its CPU time is ours (not a
neighbour's, not the SUT's): :class:`dpgate.telemetry.cpuacct.CpuAccount` counts it so.

    with CoreAwake([1]) as held:     # held.pids: the loops' pids
        ...                          # trials whose SUT core must not halt

The loop is a child Python process (argv list, no shell) that dies with this process
(``PR_SET_PDEATHSIG``), so a crash or Ctrl-C never leaves a spinning core behind.

The loop is also a **speed probe**: it counts its iterations into a shared 8-byte counter,
and iterations per second of its own CPU time (:meth:`CoreAwake.sample`, :func:`speeds`) is
how fast the core ran for it. On the 2-core VM that figure moved 19-34 M/s between 1 s
trials of one bring-up, in phases neither steal time nor any other counter of the guest
shows (the host's other tenants on the physical core); the SUT's cycles per packet rose
with it (a trial at 19 M/s: +28 %). ``dpgate.telemetry.disturbance.cpp_at_load`` leaves the
trials of a slow phase out.
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import tempfile
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from dpgate.model.errors import EnvironmentProblem

#: Iterations of the loop between two updates of its shared counter.
CHUNK = 20000
#: The child: pin, drop to SCHED_IDLE, die with the parent, spin, count chunks of iterations.
_LOOP = (
    "import ctypes,mmap,os,sys\n"
    "cpu=int(sys.argv[1])\n"
    "ctypes.CDLL(None,use_errno=True).prctl(1,9)\n"  # PR_SET_PDEATHSIG, SIGKILL
    "os.sched_setaffinity(0,{cpu})\n"
    "os.sched_setscheduler(0,os.SCHED_IDLE,os.sched_param(0))\n"
    "f=open(sys.argv[2],'r+b');m=mmap.mmap(f.fileno(),8)\n"
    "sys.stdout.write('ready\\n');sys.stdout.flush()\n"
    "n=0\n"
    "while True:\n"
    f"    for _ in range({CHUNK}): pass\n"
    "    n+=1\n"
    "    m[0:8]=n.to_bytes(8,'little')\n"
)

#: {cpu: (iterations counted, the loop's CPU time in s)}
Sample = Dict[int, Tuple[int, float]]


def child_failed(p: subprocess.Popen, what: str, cpu: int) -> EnvironmentProblem:
    """The error for a pinned child that did not say ``ready``: ``what`` it was for, its last
    line of stderr, and how to fix the usual cause (a CPU this process may not use)."""
    err = (p.stderr.read() if p.stderr else "").strip().splitlines()
    return EnvironmentProblem(
        f"could not {what}: {err[-1] if err else 'no reason given'}; check that CPU {cpu} exists "
        "and is allowed to this process (taskset/cgroup cpuset)"
    )


def reap(procs: Iterable[subprocess.Popen]) -> None:
    """Kill the children still running, wait for them and close their pipes."""
    for p in procs:
        if p.poll() is None:
            p.kill()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
            pass
        for f in (p.stdin, p.stdout, p.stderr):
            if f:
                try:
                    f.close()
                except OSError:
                    pass


def speeds(before: Sample, after: Sample) -> Dict[int, float]:
    """Iterations per second of the loop's own CPU time, per core, between two samples
    (cores whose loop ran less than 10 ms in between are left out: too little to time).

    >>> speeds({1: (100, 1.0)}, {1: (1600, 1.5)})
    {1: 60000000.0}
    >>> speeds({1: (100, 1.0)}, {1: (101, 1.001)})
    {}
    """
    out = {}
    for cpu, (n0, t0) in before.items():
        n1, t1 = after.get(cpu, (n0, t0))
        if t1 - t0 >= 0.01 and n1 >= n0:
            out[cpu] = (n1 - n0) * CHUNK / (t1 - t0)
    return out


class CoreAwake:
    """A context manager holding ``cpus`` awake; ``pids`` are the loops while held."""

    def __init__(self, cpus: Sequence[int]):
        self.cpus = [int(c) for c in cpus]
        self.procs: List[subprocess.Popen] = []
        self._counters: List[Tuple[int, mmap.mmap]] = []  # (cpu, shared counter)

    @property
    def pids(self) -> List[int]:
        return [p.pid for p in self.procs if p.poll() is None]

    def start(self) -> CoreAwake:
        try:
            for cpu in self.cpus:
                shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
                fd, path = tempfile.mkstemp(prefix="dpgate-awake-", dir=shm)
                try:
                    os.write(fd, b"\0" * 8)
                    self._counters.append((cpu, mmap.mmap(fd, 8)))
                    p = subprocess.Popen(
                        [sys.executable, "-c", _LOOP, str(cpu), path],
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                    )
                    self.procs.append(p)
                    line = p.stdout.readline() if p.stdout else ""
                finally:  # both ends have it mapped (or failed): the name is not needed
                    os.close(fd)
                    os.unlink(path)
                if line.strip() != "ready":
                    raise child_failed(p, f"hold CPU {cpu} awake (SCHED_IDLE busy loop)", cpu)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        reap(self.procs)
        self.procs = []
        for _, m in self._counters:
            m.close()
        self._counters = []

    def sample(self) -> Sample:
        """{cpu: (iterations so far, the loop's CPU time in s)} of the running loops."""
        out: Sample = {}
        for (cpu, m), p in zip(self._counters, self.procs):
            if p.poll() is not None:
                continue
            try:
                with open(f"/proc/{p.pid}/schedstat") as fh:
                    run_s = int(fh.read().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                continue
            out[cpu] = (int.from_bytes(m[0:8], "little"), run_s)
        return out

    def speed(self, before: Sample) -> Optional[float]:
        """The slowest core's iterations per CPU second since ``before`` (None: not timed)."""
        got = speeds(before, self.sample())
        return min(got.values()) if got else None

    def __enter__(self) -> CoreAwake:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
