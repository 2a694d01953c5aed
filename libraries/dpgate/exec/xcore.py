"""How far apart did the host place our two cores just now? A cache-line round trip between them.

Every embedded frame crosses cores: the generator writes it on the TG core, the SUT reads it
on the SUT core (and back). What that costs depends on where the host runs the two vCPUs.
On the 2-core VMs (AMD EPYC, KVM) a round trip of one cache line between the cores reads
"near" or "far" (one chiplet's two cores, or two chiplets, as far as the guest can tell;
nothing else in the guest shows which): 75-130 ns or 365-425 ns on a Zen 5 host
(2026-11-28 morning, phases of seconds to minutes), 71-158 ns or 434-820 ns on a Zen 3 host
at half speed (2026-11-28 09:00, flipping every few seconds). A kernel SUT's cycles per
frame follow it (linux-xconnect ~2,550 near, ~3,050 far: docs/embedded.md).

:class:`CrossCoreProbe` runs ``xcore`` (C, ``libraries/xcore/xcore.c``, built into
``build/xcore/xcore`` by ``.ci/install``): a pair of blocked processes, one pinned to each
core, sharing one cache line; :meth:`~CrossCoreProbe.read` has them bounce it ``rounds``
times (after a few untimed rounds that wake the far one) and gives the mean round trip in
ns. A Python pair read 180-500 ns near and 400-1,800 far on the slower host (the
interpreter's time per round trip grows as the core slows): no threshold splits that, so the
probe is C.

    with CrossCoreProbe(0, 1) as probe:
        probe.read()     # 487.2 (ns); None if a child died or the read took over 1 s

Beside a polling SUT, which holds the far core, :meth:`~CrossCoreProbe.read_stopped` stops the
SUT's processes for the read (~1-3 ms, between trials). Both children die with this process
(``PR_SET_PDEATHSIG``); a read waits for a core the far child cannot get at most
``timeout_s``, then the probe is stopped and reads None from then on.
:class:`TrialPlacement` reads before and after a trial: a trial during which the host moved
the cores is ``changed``, attributed to neither placement.
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Optional, Sequence

from dpgate.exec.awake import child_failed, reap
from dpgate.exec.stopped import stopped
from dpgate.model.errors import EnvironmentProblem

#: Round trips per read: ~2 ms near, ~10 ms far.
ROUNDS = 20000
#: The reading that splits the two placements: 71-158 ns near, 365-820 far on the two hosts.
FAR_NS = 250.0
#: Longest wait for a polling SUT's threads to stop before a read beside it (s).
STOP_WAIT_S = 0.05
#: Untimed round trips first: the far child wakes from its pipe read.
WARMUP = 200
#: build/xcore/xcore of this checkout (libraries/dpgate/exec/xcore.py -> repo root)
BUILT = Path(__file__).resolve().parents[3] / "build" / "xcore" / "xcore"

_log = logging.getLogger(__name__)


def xcore_binary() -> Optional[str]:
    """Path of the xcore probe ($DPGATE_XCORE, build/xcore/xcore, PATH), None when not built."""
    env = os.environ.get("DPGATE_XCORE")
    if env:
        return env if os.access(env, os.X_OK) else None
    return str(BUILT) if os.access(BUILT, os.X_OK) else shutil.which("xcore")


class CrossCoreProbe:
    """A blocked pair of children on cores ``a`` and ``b``; :meth:`read` times round trips."""

    def __init__(self, a: int, b: int, rounds: int = ROUNDS, timeout_s: float = 1.0):
        self.a, self.b = int(a), int(b)
        self.rounds, self.timeout_s = int(rounds), float(timeout_s)
        self.proc: Optional[subprocess.Popen] = None

    def start(self) -> CrossCoreProbe:
        binary = xcore_binary()
        if not binary:
            raise EnvironmentProblem(
                f"the cross-core probe xcore is not built ({BUILT}, $DPGATE_XCORE or PATH): "
                "run 'bash .ci/install' to build it"
            )
        p = subprocess.Popen(
            [binary, str(self.a), str(self.b), str(WARMUP)],
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
        """The probe's pid (the forked sibling is its child): for CPU accounting."""
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


class TrialPlacement:
    """The cores' placement around one trial: :meth:`begin` reads before traffic, :meth:`end`
    after it and gives the trial's details: ``xcore_rtt_ns`` (after), ``xcore_rtt_before_ns``
    and ``xcore_placement`` (``near``/``far`` when both reads agree, ``changed`` when the host
    moved the cores during the trial). ``pids``: a polling SUT's processes, stopped for each
    read. Without the probe built the trials carry no reading (one warning says why)."""

    def __init__(self, a: int, b: int, rounds: int = 5000):
        self.a, self.b, self.rounds = a, b, rounds
        self.probe: Optional[CrossCoreProbe] = None
        self.off = False
        self.before: Optional[float] = None

    def _read(self, pids: Sequence[int]) -> Optional[float]:
        if self.off:
            return None
        if self.probe is None:
            try:
                self.probe = CrossCoreProbe(self.a, self.b, rounds=self.rounds).start()
            except EnvironmentProblem as err:
                self.off = True
                _log.warning("trials carry no core placement: %s", err)
                return None
        return self.probe.read_stopped(pids) if pids else self.probe.read()

    def begin(self, pids: Sequence[int] = ()) -> None:
        self.before = self._read(pids)

    def end(self, pids: Sequence[int] = ()) -> Dict[str, object]:
        after, before, self.before = self._read(pids), self.before, None
        out: Dict[str, object] = {}
        if after is not None:
            out["xcore_rtt_ns"] = after
        if before is not None:
            out["xcore_rtt_before_ns"] = before
        if after is not None and before is not None:
            p, q = placement(before), placement(after)
            out["xcore_placement"] = p if p == q else "changed"
        return out

    def close(self) -> None:
        if self.probe is not None:
            self.probe.stop()
