"""How fast did the host serve our SUT core's memory just now? A timed random gather, on demand.

A kernel SUT's cycles per frame on the Intel Xeon VM drift by 10-70 % between bring-ups
minutes apart (2026-12-01, noisy hours), more than the core's speed explains (the awake loop,
:mod:`dpgate.exec.awake`: a loop in L1 that does not see the shared cache). A random gather
of 512 Ki int32 out of 64 MiB (the host's L3 is 260 MiB, shared with its other tenants),
timed on the SUT core before and after each trial, followed the SUT where the core's speed
did not: over 16 bring-ups of linux-ip4, linux-bridge and linux-xconnect each (6 x 2 s trials
at 72 kpps, ``--rounds`` of a scratch script with this probe) the bring-ups' median cycles per
frame and the probe's ns per element correlated +0.74 to +0.97 (the core's speed -0.54 to
-0.95), and scaling every trial by ``ns^-0.5`` besides ``speed^0.3``
(:mod:`dpgate.telemetry.cpp_scaled`) cut the bring-ups' spread from 14-41 % (by the core's
speed alone, as before) to 8-14 %. In a calmer hour's gate runs (gk72, five quiet runs per
SUT) about even: 7.9 / 4.1 / 7.6 % against 7.1 / 7.8 / 7.4 % (xconnect / bridge / ip4). What
the probe reads: 8-18 ns per element (many misses in flight; not a latency), ~8 ms a pass;
read before and after each held trial, ~60 ms a trial.

    with MemoryProbe(1) as probe:
        probe.read()     # 15.3 (ns per element, median of three passes); None: not measured

The child is Python with numpy (a dependency of matplotlib, so in every install), pinned to
the core, blocked on a pipe between reads, killed with its parent (``PR_SET_PDEATHSIG``). A
child that cannot start (no numpy, a CPU not allowed) reads None, with the reason logged once:
the scaled figure then falls back to the core's speed alone.
"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import Optional

from dpgate.exec.awake import child_failed, reap

log = logging.getLogger(__name__)

#: int32 elements in the buffer (64 MiB) and elements gathered per pass (512 Ki).
BUFFER_ELEMENTS = 16 << 20
GATHER_ELEMENTS = 1 << 19
#: Passes per read; the read is their median.
PASSES = 3

_CHILD = (
    "import ctypes,os,sys,time\n"
    "ctypes.CDLL(None,use_errno=True).prctl(1,9)\n"  # PR_SET_PDEATHSIG, SIGKILL
    "os.sched_setaffinity(0,{int(sys.argv[1])})\n"
    "import numpy as np\n"
    "a=np.arange(int(sys.argv[2]),dtype=np.int32)\n"
    "i=np.random.default_rng(1).integers(0,len(a),int(sys.argv[3]))\n"
    "a[i].sum()\n"
    "sys.stdout.write('ready\\n');sys.stdout.flush()\n"
    "for line in sys.stdin:\n"
    "    got=[]\n"
    "    for _ in range(int(line)):\n"
    "        t0=time.thread_time();a[i].sum();got.append(time.thread_time()-t0)\n"
    "    sys.stdout.write(f'{sorted(got)[len(got)//2]/len(i)*1e9:.4f}\\n');sys.stdout.flush()\n"
)


class MemoryProbe:
    """One blocked child on ``cpu``; :meth:`read` has it gather and answer ns per element."""

    def __init__(self, cpu: int, passes: int = PASSES):
        self.cpu = int(cpu)
        self.passes = max(1, int(passes))
        self.proc: Optional[subprocess.Popen] = None
        self.failed = False

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def start(self) -> MemoryProbe:
        """Start the child (once); a child that cannot start leaves the probe reading None."""
        if self.proc is not None or self.failed:
            return self
        p = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(self.cpu), str(BUFFER_ELEMENTS), str(GATHER_ELEMENTS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        if (p.stdout.readline() if p.stdout else "").strip() != "ready":
            err = child_failed(p, f"start the memory probe on CPU {self.cpu}", self.cpu)
            reap([p])
            self.failed = True
            log.warning(
                "%s (or install numpy into this Python): cycles per packet are scaled by the "
                "core's speed alone",
                err,
            )
            return self
        self.proc = p
        return self

    def read(self) -> Optional[float]:
        """ns per gathered element now (median of the passes); None if the child is gone."""
        self.start()
        p = self.proc
        if p is None or p.poll() is not None or not p.stdin or not p.stdout:
            return None
        try:
            p.stdin.write(f"{self.passes}\n")
            p.stdin.flush()
            return float(p.stdout.readline())
        except (OSError, ValueError):
            return None

    def stop(self) -> None:
        if self.proc is not None:
            reap([self.proc])
        self.proc = None

    def __enter__(self) -> MemoryProbe:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
