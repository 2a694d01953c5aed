"""CPU facts: the core frequency CPP is computed with, read through a node (this machine or a
lab DUT), and the busy share of the SUT cores on this machine (``/proc/stat``).

>>> class Node:  # what a node answers: the sysfs file of cpu 0, here 2.5 GHz in kHz
...     def run(self, argv, check=True, timeout=30):
...         ok = argv[-1].endswith("base_frequency")
...         return type("R", (), {"returncode": 0 if ok else 1, "stdout": "2500000\\n" if ok else ""})()
>>> detect_cpu_hz(Node(), 0)
2500000000.0
"""

from __future__ import annotations

from typing import Dict, Iterable, List, Optional

from dpgate.model.errors import EnvironmentProblem
from dpgate.model.protocols import Node


def detect_cpu_hz(node: Node, cpu: int = 0) -> float:
    """Nominal frequency of ``cpu`` on the node: cpufreq ``base_frequency`` (kHz), else
    ``cpuinfo_max_freq`` (kHz, nominal only with turbo off), else ``cpu MHz`` of /proc/cpuinfo."""
    for name in ("base_frequency", "cpuinfo_max_freq"):
        res = node.run(
            ["cat", f"/sys/devices/system/cpu/cpu{int(cpu)}/cpufreq/{name}"], check=False, timeout=15
        )
        try:
            if res.returncode == 0:
                return float(res.stdout.strip()) * 1e3
        except ValueError:
            pass
    res = node.run(["cat", "/proc/cpuinfo"], check=False, timeout=15)
    for line in res.stdout.splitlines():
        if line.lower().startswith("cpu mhz"):
            return float(line.split(":")[1]) * 1e6
    raise EnvironmentProblem(
        f"cannot detect the CPU frequency of CPU {cpu} on {getattr(node, 'name', 'the node')}: "
        "declare it in the topology (cpu_freq: {source: declared, hz: 2.5e9})"
    )


def cpu_times(cpus: Iterable[int]) -> Dict[int, List[int]]:
    """Ticks per state (user nice system idle iowait irq softirq steal) of each CPU in
    ``cpus``, from /proc/stat (guest time is already inside user/nice, so it is left out)."""
    want = set(cpus)
    out: Dict[int, List[int]] = {}
    with open("/proc/stat") as fh:
        for line in fh:
            if line.startswith("cpu") and line[3:4].isdigit():
                name, *vals = line.split()
                cpu = int(name[3:])
                if cpu in want:
                    out[cpu] = [int(v) for v in vals[:8]] + [0] * (8 - len(vals[:8]))
    return out


def busy_ratio(before: Dict[int, List[int]], after: Dict[int, List[int]]) -> Optional[float]:
    """Busy fraction (not idle, not iowait) of the SUT cores between two samples, 0..1.

    >>> busy_ratio({1: [0, 0, 0, 100, 0, 0, 0, 0]}, {1: [30, 0, 20, 150, 0, 0, 0, 0]})
    0.5
    """
    busy = total = 0
    for cpu, a in after.items():
        b = before.get(cpu)
        if b is None:
            continue
        d = [x - y for x, y in zip(a, b)]
        idle = d[3] + (d[4] if len(d) > 4 else 0)
        tot = sum(d[:8])
        busy += tot - idle
        total += tot
    return round(busy / total, 4) if total > 0 else None
