"""How far apart did the host place our two cores just now? A cache-line round trip between them.

Every embedded frame crosses cores: the generator writes it on the TG core, the SUT reads it
on the SUT core (and back). What that costs depends on where the host runs the two vCPUs.
On the 2-core VM (AMD EPYC, KVM) a round trip of one cache line between the cores read
75-100 ns in some phases and 380-430 ns in others (one chiplet's two cores, or two
chiplets, as far as the guest can tell; nothing in the guest shows which), each phase lasting
minutes, and linux-xconnect's cycles per frame at a fixed load went with it: ~2,500 near,
~3,000 far (the bimodal ``cpp_at_load`` of docs/embedded.md).

:class:`CrossCoreProbe` keeps a pair of blocked child processes, one pinned to each core,
sharing one cache line; :meth:`~CrossCoreProbe.read` has them bounce it ``rounds`` times
(after a few untimed rounds that wake the far one) and gives the mean round trip in ns.
Python adds ~30-100 ns to each round trip (a C loop read 380-420 ns where this read 415-490):
the two phases stay 3-4x apart.

    with CrossCoreProbe(0, 1) as probe:
        probe.read()     # 410.3 (ns); None if a child died or the read took over 1 s

Beside a polling SUT, which holds the far core, :meth:`~CrossCoreProbe.read_stopped` stops the
SUT's processes for the read (~1-3 ms, between trials). Both children die with this process
(``PR_SET_PDEATHSIG``); a read waits for a core the far child cannot get at most
``timeout_s``, then the probe is stopped and reads None from then on.
"""

from __future__ import annotations

import select
import subprocess
import sys
from typing import Optional, Sequence

from dpgate.exec.awake import child_failed, reap
from dpgate.exec.stopped import stopped

#: Round trips per read: ~2 ms near, ~9 ms far.
ROUNDS = 20000
#: This probe's reading that splits the two phases: 180-200 ns near, 415-510 far on the
#: 2-core VM (the geometric middle).
FAR_NS = 300.0
#: Longest wait for a polling SUT's threads to stop before a read beside it (s).
STOP_WAIT_S = 0.05
#: Untimed round trips first: the far child wakes from its pipe read.
WARMUP = 200

# The child: die with the parent, share an anonymous cache line with a forked sibling pinned
# to the other core; per line "n", the sibling serves n round trips, the child times the
# last n - WARMUP and answers "nanoseconds rounds".
_PAIR = (
    "import ctypes,mmap,os,sys,time\n"
    "libc=ctypes.CDLL(None,use_errno=True)\n"
    "libc.prctl(1,9)\n"
    "a,b,warm=int(sys.argv[1]),int(sys.argv[2]),int(sys.argv[3])\n"
    "m=mmap.mmap(-1,64);mv=memoryview(m)\n"
    "r,w=os.pipe()\n"
    "if os.fork()==0:\n"
    "    libc.prctl(1,9);os.close(w);os.sched_setaffinity(0,{b})\n"
    "    while True:\n"
    "        d=os.read(r,8)\n"
    "        if len(d)<8: os._exit(0)\n"
    "        for _ in range(int.from_bytes(d,'little')):\n"
    "            while mv[0]!=1: pass\n"
    "            mv[0]=0\n"
    "os.close(r);os.sched_setaffinity(0,{a})\n"
    "sys.stdout.write('ready\\n');sys.stdout.flush()\n"
    "for line in sys.stdin:\n"
    "    n=int(line);os.write(w,(n+warm).to_bytes(8,'little'))\n"
    "    for k in (warm,n):\n"
    "        t0=time.perf_counter_ns()\n"
    "        for _ in range(k):\n"
    "            mv[0]=1\n"
    "            while mv[0]!=0: pass\n"
    "    sys.stdout.write(f'{time.perf_counter_ns()-t0} {n}\\n');sys.stdout.flush()\n"
)


class CrossCoreProbe:
    """A blocked pair of children on cores ``a`` and ``b``; :meth:`read` times round trips."""

    def __init__(self, a: int, b: int, rounds: int = ROUNDS, timeout_s: float = 1.0):
        self.a, self.b = int(a), int(b)
        self.rounds, self.timeout_s = int(rounds), float(timeout_s)
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> CrossCoreProbe:
        p = subprocess.Popen(
            [sys.executable, "-c", _PAIR, str(self.a), str(self.b), str(WARMUP)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.proc = p
        if (p.stdout.readline() if p.stdout else "").strip() != "ready":
            err = child_failed(p, f"start the cross-core probe on CPUs {self.a} and {self.b}", self.a)
            self.stop()
            raise err
        return self

    def read(self) -> Optional[float]:
        """Mean round trip of one cache line between the two cores now, in ns (1 decimal)."""
        p = self.proc
        if p is None or p.poll() is not None or not p.stdin or not p.stdout:
            return None
        try:
            p.stdin.write(f"{self.rounds}\n")
            p.stdin.flush()
            ready, _, _ = select.select([p.stdout], [], [], self.timeout_s)
            if not ready:  # the far core is not ours to have (a poller on it): give up for good
                self.stop()
                return None
            ns, n = p.stdout.readline().split()
            return round(int(ns) / int(n), 1)
        except (OSError, ValueError, ZeroDivisionError):
            return None

    def read_stopped(self, pids: Sequence[int], wait_s: float = STOP_WAIT_S) -> Optional[float]:
        """:meth:`read` with ``pids`` stopped meanwhile (a polling SUT, which holds the far core:
        :mod:`dpgate.exec.stopped`); None when a thread of them was still running after
        ``wait_s``."""
        with stopped(pids, wait_s) as running:
            return None if running else self.read()

    @property
    def pids(self) -> list:
        """The pair's pids (the forked sibling is the child's child): for CPU accounting."""
        return [self.proc.pid] if self.proc is not None and self.proc.poll() is None else []

    def stop(self) -> None:
        if self.proc is not None:
            reap([self.proc])  # the sibling reads EOF on its pipe (or gets SIGKILL) and exits
            self.proc = None

    def __enter__(self) -> CrossCoreProbe:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def placement(rtt_ns: Optional[float], far_ns: float = FAR_NS) -> Optional[str]:
    """``near`` or ``far`` for a round trip read by this probe (None unknown).

    >>> placement(92.0), placement(410.5), placement(None)
    ('near', 'far', None)
    """
    if rtt_ns is None:
        return None
    return "far" if rtt_ns >= far_ns else "near"
