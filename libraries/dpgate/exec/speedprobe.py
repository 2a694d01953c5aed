"""How fast did the host run our cores just now? A short timed loop per core, on demand.

On the 2-core VM the host runs each vCPU at full speed most of the time and at about half of
it in phases of 0.1 s to minutes (another tenant on the physical core's sibling thread, as
far as the guest can tell: steal time stays 0 and no guest counter moves). In such a phase
a generator sends less and a SUT forwards less: linux-xconnect's MRR fell from 0.8-1.0 to
0.27-0.40 Mpps while 0.25 s probes of both cores read 15-17 M it/s against ~30. A trial
measured then says nothing about the SUT, so :class:`SpeedProbe` times a fixed Python loop on
every TG and SUT core between trials (a few ms of CPU each, one core after the other) and
:func:`slow_share` turns the slowest reading into a share of a core lost, which the trial
adds to its ``disturbance`` (``dpgate.traffic.trialflow``).

The figure is iterations per second of the probe's *own* CPU time (``thread_time``): a
neighbour that takes turns on the core (a ``nice`` hog, a polling SUT) does not lower it,
only a slower core does. But the two vCPUs of this VM class can be one physical core's two
threads (a busy loop on one took the other's reading from 30-31 to 16-18 M it/s), so cores
are probed one at a time, and beside a polling SUT only the SUT's cores are (its poll loop
keeps the TG core's sibling busy: a reading there would be our own SUT, not the host). The loop is the one :mod:`dpgate.exec.awake` counts, so both read
in the same unit (M it/s; 28-34 at full speed on this VM class).

    with SpeedProbe([0, 1]) as probe:
        probe.read()          # {0: 30.2, 1: 16.1}  (M it/s per core)

Each probe is a child process (argv list, no shell) pinned to its core, blocked on a pipe
between reads, killed with its parent (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import collections
import statistics
import subprocess
import sys
import time
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from dpgate.exec.awake import CHUNK, child_failed, reap
from dpgate.exec.memprobe import MemoryProbe

#: CPU time each read spins per core (s): 150 k iterations at full speed.
PROBE_S = 0.005
#: A speed below this share of the full speed is a slow host phase: for the probe between
#: trials here and for cpp_at_load's trials (``dpgate.telemetry.disturbance`` uses this one).
SLOW_SHARE = 0.9
#: How many of the last readings make the reference when the case declares none.
SEEN = 1000
#: A slow phase is worth measuring past while TRANSIENT_SHARE of the last RECENT trials (once
#: WARM have ended) ran at full speed; after that the host is slow for longer than trials can
#: wait out (on 2026-11-25 for 15+ minutes; on a Zen 3 host on 2026-11-28 at 14-18 M it/s for
#: the whole session, with a reading near full speed in one trial of 10-20, which under the
#: earlier "one of the last 10" rule kept it re-measuring: 16-25 of 50 search trials), and a
#: trial measured again would only cost search time.
RECENT = 10
WARM = 5
TRANSIENT_SHARE = 0.3
#: A core read under SLOW_SHARE of the reference at a trial's end is read again this long after
#: (s), and the second reading counts: right after a trial the kernel may still be working on
#: frames the trial left queued on that core, and with no ``IRQ_TIME_ACCOUNTING`` that softirq
#: work counts as the probe's own CPU time. Measured on the Zen 4 VM (2026-12-05, linux-ip4,
#: 12 trials each at 0.17 and 0.9 Mpps, the latter losing 33-40 %): right after the 0.9 Mpps
#: trials the SUT core read a median of 34.6 M it/s (lowest 16.0), 5 ms later 42.5 (lowest
#: 33.7), 10 ms later no lower than 40.2, 50 ms later no lower than 41.6; after the 0.17 Mpps
#: trials 42.1 at once. In the gate (gk102) 5 of linux-ip4's 6 healthy runs had been held a
#: slow host (``disturbance`` 0.45-0.81) by such readings. linux-bridge showed no such
#: dependence (median 40.2 at once and 50 ms after 1.2 Mpps trials); a host's slow phase lasts
#: 0.1 s to minutes, so a reading 20 ms later still sees it. A core still slow when read again
#: LASTING times in a row is in a lasting phase and is read once per trial until it reads at full
#: speed: in such a phase (gk103, linux-ip4: the TG core at 32 M it/s of 44 for a whole run) every
#: trial paid the wait. Once was too few, and 10 ms too short: in a fresh-clone gate run (1cc2b55)
#: linux-ip4's SUT core read 34.6 and 34.3 again 10 ms later, so its next reading, 4.64 right
#: after an overload trial, was not read again and the trial was measured again for it.
RECHECK_S = 0.02
LASTING = 2

# The child: pin, die with the parent, then per line read: spin for that many seconds of
# its own CPU time in chunks of the awake loop's iterations, answer "iterations cpu_seconds".
_PROBE = (
    "import ctypes,os,sys,time\n"
    "ctypes.CDLL(None,use_errno=True).prctl(1,9)\n"
    "os.sched_setaffinity(0,{int(sys.argv[1])})\n"
    "sys.stdout.write('ready\\n');sys.stdout.flush()\n"
    "step=max(1,int(sys.argv[2])//10)\n"
    "for line in sys.stdin:\n"
    "    want=float(line);t0=time.thread_time();n=0\n"
    "    while True:\n"
    "        for _ in range(step): pass\n"
    "        n+=step;t=time.thread_time()-t0\n"
    "        if t>=want: break\n"
    "    sys.stdout.write(f'{n} {t}\\n');sys.stdout.flush()\n"
)


class SpeedProbe:
    """One blocked probe process per core; :meth:`read` times them one after the other."""

    def __init__(self, cpus: Sequence[int], probe_s: float = PROBE_S):
        self.cpus = sorted({int(c) for c in cpus})
        self.probe_s = float(probe_s)
        self.procs: Dict[int, subprocess.Popen] = {}
        #: the last readings (M it/s), for a reference when none is declared
        self.seen: collections.deque = collections.deque(maxlen=SEEN)

    @property
    def pids(self) -> List[int]:
        return [p.pid for p in self.procs.values() if p.poll() is None]

    def start(self) -> SpeedProbe:
        try:
            for cpu in self.cpus:
                p = subprocess.Popen(
                    [sys.executable, "-c", _PROBE, str(cpu), str(CHUNK)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                    bufsize=1,
                )
                self.procs[cpu] = p
                if (p.stdout.readline() if p.stdout else "").strip() != "ready":
                    raise child_failed(p, f"start the speed probe on CPU {cpu}", cpu)
        except BaseException:
            self.stop()
            raise
        return self

    def read(self, cpus: Optional[Sequence[int]] = None) -> Dict[int, float]:
        """{cpu: M iterations per CPU second} now, of ``cpus`` (default: all probed), one core
        after the other: two vCPUs of one physical core slow each other down, so probes
        running at once would read each other. A core whose probe died is left out."""
        out: Dict[int, float] = {}
        for cpu in self.cpus if cpus is None else cpus:
            p = self.procs.get(cpu)
            if p is None or p.poll() is not None or not p.stdin or not p.stdout:
                continue
            try:
                p.stdin.write(f"{self.probe_s}\n")
                p.stdin.flush()
                n, t = p.stdout.readline().split()
                out[cpu] = round(int(n) / float(t) / 1e6, 2)
            except (OSError, ValueError, ZeroDivisionError):
                continue
        self.seen.extend(out.values())
        return out

    def stop(self) -> None:
        reap(self.procs.values())
        self.procs = {}

    def reference(self, declared: Optional[float] = None) -> Optional[float]:
        """The full speed readings are judged against: ``declared`` (the case's ``core_speed``)
        if given, else the 90th percentile of this session's last SEEN readings (None before 10)."""
        if declared:
            return float(declared)
        if len(self.seen) < 10:
            return None
        return statistics.quantiles(self.seen, n=10)[-1]

    def __enter__(self) -> SpeedProbe:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def slow_share(speeds: Mapping[int, float], ref: Optional[float]) -> Optional[float]:
    """Share of a core the host took by running it slow: ``1 - slowest / ref`` (0 at or above
    the reference, None when nothing was read or no reference is known).

    >>> slow_share({0: 30.0, 1: 15.0}, 30.0)
    0.5
    >>> slow_share({0: 31.0}, 30.0), slow_share({}, 30.0), slow_share({0: 20.0}, None)
    (0.0, None, None)
    """
    if not speeds or not ref:
        return None
    return round(max(0.0, 1.0 - min(speeds.values()) / ref), 4)


class TrialSpeeds:
    """Readings around trials: :meth:`begin` reads unless the last reading (the previous
    trial's end) is at most ``fresh_s`` old, :meth:`end` reads again and gives each core's
    slower reading of the two: back-to-back trials cost one read each (~5 ms)."""

    def __init__(
        self,
        cpus: Sequence[int],
        fresh_s: float = 1.0,
        probe_s: float = PROBE_S,
        memory_cpu: Optional[int] = None,
    ):
        self.probe = SpeedProbe(cpus, probe_s)
        self.fresh_s = fresh_s
        self._last: Optional[Tuple[float, Dict[int, float]]] = None
        self._before: Dict[int, float] = {}
        #: the memory probe on the SUT core (``dpgate.exec.memprobe``), read around trials asked
        #: for it; ``memory_ns``: the last such trial's mean of its two readings (else None)
        self.memory = MemoryProbe(memory_cpu) if memory_cpu is not None else None
        self.memory_ns: Optional[float] = None
        self._memory_before: Optional[float] = None
        #: the slowest core's reading at the end of each of the last RECENT trials
        self.recent: collections.deque = collections.deque(maxlen=RECENT)
        #: the first readings of the cores :meth:`end` read again (slow at once: RECHECK_S)
        self.rechecked: Dict[int, float] = {}
        #: per core, how many re-reads in a row were still slow (LASTING: a lasting phase)
        self.lasting: Dict[int, int] = {}

    def transient(self, ref: Optional[float]) -> bool:
        """Whether a slow phase may pass soon: ``TRANSIENT_SHARE`` of the last RECENT trials
        ended at full speed (at least ``SLOW_SHARE`` of ``ref``), or fewer than WARM ended yet.

        >>> t = TrialSpeeds([0]); t.recent.extend([16.0] * 4)
        >>> t.transient(30.0), t.recent.append(16.0), t.transient(30.0), t.transient(None)
        (True, None, False, True)
        >>> t.recent.append(28.0); t.transient(30.0)  # one of six at full speed: a blip
        False
        >>> t.recent.extend([29.0, 30.0]); t.transient(30.0)  # three of eight: it comes and goes
        True
        """
        if not ref or len(self.recent) < WARM:
            return True
        fast = sum(x >= SLOW_SHARE * ref for x in self.recent)
        return fast >= TRANSIENT_SHARE * len(self.recent)

    def begin(self, cpus: Optional[Sequence[int]] = None, memory: bool = False) -> None:
        """Before a trial on ``cpus`` (default: all probed); with ``memory`` the memory probe
        too (when there is one)."""
        if not self.probe.procs:
            self.probe.start()
        if self._last is None or time.monotonic() - self._last[0] > self.fresh_s:
            self._last = (time.monotonic(), self.probe.read(cpus))
        self._before = self._last[1]
        self.memory_ns = None
        self._memory_before = self.memory.read() if memory and self.memory else None

    def end(self, cpus: Optional[Sequence[int]] = None, ref: Optional[float] = None) -> Dict[int, float]:
        """After the trial: {cpu: the slower reading of before and now}; ``memory_ns`` the mean
        of the memory probe's two readings when :meth:`begin` read it. A core under
        ``SLOW_SHARE`` of ``ref`` now is read again :data:`RECHECK_S` later and that reading
        counts; ``rechecked`` keeps the first readings of such cores. A core still slow then
        :data:`LASTING` times in a row is read once per trial until it reads at full speed."""
        now = self.probe.read(cpus)
        self.rechecked = {}
        full = {c for c, v in now.items() if not ref or v >= SLOW_SHARE * ref}
        slow = [c for c in now if c not in full and self.lasting.get(c, 0) < LASTING]
        if slow:
            time.sleep(RECHECK_S)
            again = self.probe.read(slow)
            self.rechecked = {c: now[c] for c in again}
            for c, v in again.items():
                if v < SLOW_SHARE * (ref or 0.0):
                    self.lasting[c] = self.lasting.get(c, 0) + 1
                else:
                    full.add(c)
            now.update(again)
        for c in full:
            self.lasting.pop(c, None)
        self._last = (time.monotonic(), now)
        out = {c: min(v, self._before.get(c, v)) for c, v in now.items()}
        if out:
            self.recent.append(min(out.values()))
        if self._memory_before is not None and self.memory is not None:
            after = self.memory.read()
            self.memory_ns = round((self._memory_before + after) / 2, 3) if after else None
        self._memory_before = None
        return out

    def close(self) -> None:
        self.probe.stop()
        if self.memory is not None:
            self.memory.stop()
        self._last = None
