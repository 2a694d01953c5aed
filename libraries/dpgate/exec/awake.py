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
"""

from __future__ import annotations

import subprocess
import sys
from typing import List, Sequence

from dpgate.model.errors import EnvironmentProblem

#: The child: pin, drop to SCHED_IDLE, die with the parent, spin.
_LOOP = (
    "import ctypes,os,sys\n"
    "cpu=int(sys.argv[1])\n"
    "ctypes.CDLL(None,use_errno=True).prctl(1,9)\n"  # PR_SET_PDEATHSIG, SIGKILL
    "os.sched_setaffinity(0,{cpu})\n"
    "os.sched_setscheduler(0,os.SCHED_IDLE,os.sched_param(0))\n"
    "sys.stdout.write('ready\\n');sys.stdout.flush()\n"
    "while True:\n"
    "    pass\n"
)


class CoreAwake:
    """A context manager holding ``cpus`` awake; ``pids`` are the loops while held."""

    def __init__(self, cpus: Sequence[int]):
        self.cpus = [int(c) for c in cpus]
        self.procs: List[subprocess.Popen] = []

    @property
    def pids(self) -> List[int]:
        return [p.pid for p in self.procs if p.poll() is None]

    def start(self) -> CoreAwake:
        try:
            for cpu in self.cpus:
                p = subprocess.Popen(
                    [sys.executable, "-c", _LOOP, str(cpu)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                self.procs.append(p)
                line = p.stdout.readline() if p.stdout else ""
                if line.strip() != "ready":
                    err = (p.stderr.read() if p.stderr else "").strip().splitlines()
                    raise EnvironmentProblem(
                        f"could not hold CPU {cpu} awake (SCHED_IDLE busy loop): "
                        f"{err[-1] if err else 'no reason given'}; check that CPU {cpu} exists "
                        "and is allowed to this process (taskset/cgroup cpuset)"
                    )
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not refused
                pass
            for f in (p.stdout, p.stderr):
                if f:
                    f.close()
        self.procs = []

    def __enter__(self) -> CoreAwake:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
