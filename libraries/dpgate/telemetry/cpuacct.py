"""Whose CPU time was it? Per-core accounting of a trial: ours, foreign, stolen by the VM.

On a shared CI machine a trial's number is only worth something if the generator and SUT
cores were ours while it ran. :class:`CpuAccount` samples, at the start and end of a trial,

* per-core totals from ``/proc/stat`` (ticks: user, nice, system, idle, iowait, irq,
  softirq, steal);
* the exact run time (``/proc/<pid>/task/<tid>/schedstat``, ns) of every task that is ours:
  the SUT's processes (everything in the SUT namespace), the SUT ports' NAPI kernel threads,
  ``ksoftirqd`` of our cores, any extra pids (e.g. an injected CPU stealer); each task's
  time goes to the core its affinity allows (a task allowed on several cores is "unpinned");
* the generator's time: its processes still running or exited unreaped at the end
  (``extra_tg_pids``, pinned to the TG core), children of this process reaped during the
  trial (``RUSAGE_CHILDREN``: generators cut at the deadline), and this process's own
  threads (unpinned).

Then for each core ``c``: ``foreign(c) = max(0, busy(c) - ours(c)) + steal(c)`` where busy is
every non-idle state except steal; unpinned own time is taken off the cores with the most
unexplained time first. ``foreign_share(c) = foreign(c) / total(c)``; the trial's
``disturbance`` is the largest share over the TG and SUT cores. Softirq/irq time that runs
in one of our tasks is ours (our frames cause it); softirq run from the idle task counts as
foreign (over-reports by that little, never hides a neighbour).

``sut_wait_share`` is how long the SUT's threads waited, runnable, for a CPU (``run_delay``)
per second of window. ``sut_own_s`` is the SUT's own run time on the SUT cores (SUT processes, NAPI threads,
``ksoftirqd``), the basis of ``cpp_at_load``; ``sut_kernel_s`` the kernel threads' part of it
(a polling SUT's share of its core is what they leave it):

>>> a = CpuSnapshot({1: [100, 0, 0, 0, 0, 0, 0, 0]}, {("sut", 1): 0.0}, 0.0, 0.0)
>>> b = CpuSnapshot({1: [150, 0, 10, 40, 0, 0, 0, 0]}, {("sut", 1): 0.2}, 0.0, 0.0)
>>> r = account(a, b, tg_cpus=[], sut_cpus=[1], hz_user=100)
>>> r["foreign_share"][1], r["sut_own_s"]
(0.4, 0.2)
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from dpgate.exec.cpu import cpu_times as cpu_ticks

#: Ticks per second of /proc/stat (USER_HZ).
HZ_USER = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
IDLE, IOWAIT, STEAL = 3, 4, 7
#: Roles whose run time is the SUT's: its processes (and injected stealers), and the kernel
#: threads that work for it on its cores (its ports' NAPI threads, ``ksoftirqd``).
SUT_ROLES = ("sut", "sut_kernel")


def task_runtime_s(pid: int) -> Dict[int, Tuple[float, Tuple[int, ...]]]:
    """{tid: (run time in s, allowed cpus)} of every thread of ``pid`` (gone threads skipped)."""
    return {tid: (run, cpus) for tid, (run, _, cpus) in task_times_s(pid).items()}


def task_times_s(pid: int) -> Dict[int, Tuple[float, float, Tuple[int, ...]]]:
    """{tid: (run time s, time runnable but waiting for a CPU s, allowed cpus)} of every thread
    of ``pid``, from ``schedstat`` (``run_delay`` is how long others kept it off the CPU)."""
    out: Dict[int, Tuple[float, float, Tuple[int, ...]]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tids:
        try:
            with open(f"/proc/{pid}/task/{t}/schedstat") as fh:
                vals = fh.read().split()
            cpus = tuple(sorted(os.sched_getaffinity(int(t))))
            out[int(t)] = (int(vals[0]) / 1e9, int(vals[1]) / 1e9, cpus)
        except (OSError, ValueError, IndexError):
            continue
    return out


def pids_in_netns(ns: str) -> List[int]:
    """Pids whose network namespace is ``/run/netns/<ns>`` (a /proc scan, no process start)."""
    try:
        want = os.stat(f"/run/netns/{ns}").st_ino
    except OSError:
        return []
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if os.stat(f"/proc/{p}/ns/net").st_ino == want:
                    out.append(int(p))
            except OSError:
                continue
    return out


def kthread_pids(names: Sequence[str]) -> List[int]:
    """Pids of kernel threads whose comm is one of ``names`` (e.g. ``ksoftirqd/1``)."""
    want, out = set(names), []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/comm") as fh:
                    if fh.read().strip() in want:
                        out.append(int(p))
            except OSError:
                continue
    return out


@dataclass(frozen=True)
class CpuSnapshot:
    ticks: Dict[int, List[int]]
    #: (role, cpu or -1 for unpinned) -> own run time in s of tasks of that role
    own: Dict[Tuple[str, int], float]
    children_s: float
    self_s: float
    #: role -> time our tasks of that role were runnable but waiting for a CPU (s)
    wait: Dict[str, float] = None  # type: ignore[assignment]


def _own_by_cpu(pids_by_role: Mapping[str, Iterable[int]]):
    out: Dict[Tuple[str, int], float] = {}
    wait: Dict[str, float] = {}
    seen = set()
    for role, pids in pids_by_role.items():
        for pid in pids:
            for tid, (sec, delay, cpus) in task_times_s(pid).items():
                if tid in seen:
                    continue
                seen.add(tid)
                key = (role, cpus[0] if len(cpus) == 1 else -1)
                out[key] = out.get(key, 0.0) + sec
                wait[role] = wait.get(role, 0.0) + delay
    return out, wait


def snapshot(cpus: Iterable[int], pids_by_role: Mapping[str, Iterable[int]]) -> CpuSnapshot:
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    me = resource.getrusage(resource.RUSAGE_SELF)
    own, wait = _own_by_cpu(pids_by_role)
    return CpuSnapshot(cpu_ticks(cpus), own, ch.ru_utime + ch.ru_stime, me.ru_utime + me.ru_stime, wait)


def _waited(s: CpuSnapshot) -> float:
    return sum((s.wait or {}).get(r, 0.0) for r in SUT_ROLES)


def account(
    a: CpuSnapshot, b: CpuSnapshot, tg_cpus: Sequence[int], sut_cpus: Sequence[int], hz_user: int = HZ_USER
) -> Dict:
    """Foreign share per core, disturbance, and the SUT's own time between two snapshots.

    A task that ended between the snapshots (only in ``a``) contributes nothing; a task that
    started (only in ``b``) contributes all its time, as it ran inside the window.
    """
    cores = list(dict.fromkeys(list(tg_cpus) + list(sut_cpus)))
    busy: Dict[int, float] = {}
    total: Dict[int, float] = {}
    steal: Dict[int, float] = {}
    for c in cores:
        if c not in a.ticks or c not in b.ticks:
            continue
        d = [(x - y) / hz_user for x, y in zip(b.ticks[c], a.ticks[c])]
        total[c] = sum(d)
        steal[c] = d[STEAL]
        busy[c] = total[c] - d[IDLE] - d[IOWAIT] - d[STEAL]
    own: Dict[Tuple[str, int], float] = {}
    for key, sec in b.own.items():
        own[key] = own.get(key, 0.0) + max(0.0, sec - a.own.get(key, 0.0))
    ours = {c: sum(v for (role, cpu), v in own.items() if cpu == c) for c in cores}
    # The generators (children reaped in the window) run pinned to the TG cores.
    children = max(0.0, b.children_s - a.children_s)
    tg_known = [c for c in tg_cpus if c in busy]
    for c in tg_known:
        ours[c] += children / len(tg_known)
    unexplained = {c: max(0.0, busy[c] - ours[c]) for c in busy}
    loose = max(0.0, b.self_s - a.self_s) + sum(v for (role, cpu), v in own.items() if cpu not in busy)
    for c in sorted(unexplained, key=lambda k: -unexplained[k]):
        take = min(loose, unexplained[c])
        unexplained[c] -= take
        loose -= take
    foreign = {c: unexplained[c] + steal[c] for c in busy}
    share = {c: round(min(1.0, foreign[c] / total[c]), 4) if total[c] > 0 else 0.0 for c in busy}
    sut_own = sum(v for (role, cpu), v in own.items() if role in SUT_ROLES)
    sut_kernel = sum(v for (role, cpu), v in own.items() if role == "sut_kernel")
    window = max(total.values()) if total else 0.0
    sut_wait = max(0.0, _waited(b) - _waited(a))
    return {
        "sut_wait_share": round(sut_wait / window, 4) if window else None,
        "foreign_share": share,
        "steal_share": {c: round(steal[c] / total[c], 4) if total[c] > 0 else 0.0 for c in busy},
        "busy_share": {c: round(busy[c] / total[c], 4) if total[c] > 0 else 0.0 for c in busy},
        "disturbance": max(share.values()) if share else None,
        "sut_own_s": round(sut_own, 6),
        "sut_kernel_s": round(sut_kernel, 6),
        "window_s": round(max(total.values()), 4) if total else None,
    }


class CpuAccount:
    """Per-trial accounting for one testbed: ``begin()`` before traffic, ``end()`` after.

    ``extra_sut_pids`` (a callable) adds pids whose time counts as the SUT's (a CPU stealer
    injected on purpose is part of the SUT under test, not a neighbour); ``own_pids`` (a
    callable) adds pids whose time is ours but not the SUT's (the loop holding the SUT core
    awake, :mod:`dpgate.exec.awake`).
    """

    def __init__(self, testbed, extra_sut_pids=None, extra_tg_pids=None, own_pids=None):
        self.tb = testbed
        self.extra = extra_sut_pids
        self.extra_tg = extra_tg_pids
        self.own = own_pids
        self._a: Optional[CpuSnapshot] = None
        self._key: object = None
        self._sut_pids: List[int] = []
        self._scanned: object = None
        self._k_pids: Dict[str, List[int]] = {}

    def _roles(self, key: object = None) -> Dict[str, List[int]]:
        if self._scanned != key or not all(os.path.exists(f"/proc/{p}") for p in self._sut_pids):
            self._scanned = key
            holders = {r.pid for r in getattr(self.tb, "__dict__", {}).get("_counters", {}).values()}
            self._sut_pids = [p for p in pids_in_netns(self.tb.sut_ns) if p not in holders]
        if not self._k_pids:
            self._k_pids = {
                "sut": kthread_pids([f"ksoftirqd/{c}" for c in self.tb.sut_cpus]),
                "tg": kthread_pids([f"ksoftirqd/{c}" for c in self.tb.tg_cpus if c not in self.tb.sut_cpus]),
            }
        sut = list(self._sut_pids) + (list(self.extra()) if self.extra else [])
        kernel = list(getattr(self.tb, "napi_pids", [])) + self._k_pids["sut"]
        tg = list(self._k_pids["tg"]) + (list(self.extra_tg()) if self.extra_tg else [])
        return {"sut": sut, "sut_kernel": kernel, "tg": tg, "own": list(self.own()) if self.own else []}

    def begin(self, key: object = None) -> None:
        """Snapshot before traffic; ``key`` identifies the SUT (a new key rescans its pids)."""
        self._key = key
        self._a = snapshot(self._cores(), self._roles(key))

    def end(self) -> Dict:
        if self._a is None:
            return {}
        b = snapshot(self._cores(), self._roles(self._key))
        a, self._a = self._a, None
        return account(a, b, self.tb.tg_cpus, self.tb.sut_cpus)

    def _cores(self) -> List[int]:
        return list(dict.fromkeys(list(self.tb.tg_cpus) + list(self.tb.sut_cpus)))
