"""Facts about a lab DUT read through a ``dpgate.exec.remote`` node: CPU layout and core frequency.

Example::

    cpus = read_cpus(node)                       # lscpu -p=CPU,CORE,SOCKET,NODE on the DUT
    hz = detect_cpu_hz(node, cpu=2)              # cpufreq base/max, else /proc/cpuinfo
"""

from __future__ import annotations

from typing import Any, List, Sequence

from dpgate.model.errors import EnvironmentProblem
from dpgate.testbeds.lab.cores import Cpu, parse_lscpu

LSCPU = ["lscpu", "-p=CPU,CORE,SOCKET,NODE"]


def read_cpus(node: Any) -> List[Cpu]:
    """The DUT's logical CPUs with core, socket and NUMA node (``lscpu -p``)."""
    return parse_lscpu(node.run(LSCPU, timeout=30).stdout)


def restrict_to(cpus: Sequence[Cpu], allowed: Sequence[int]) -> List[Cpu]:
    """Keep the physical cores that hold any CPU in ``allowed`` (with all their SMT siblings).

    The topology lists the DUT's CPUs for the SUT (``cpus`` and ``main_cpu``), usually one
    thread per core; HT cases need the siblings too, so whole cores are kept.

    >>> cs = [Cpu(1, 1, 0, 0), Cpu(2, 2, 0, 0), Cpu(29, 1, 0, 0), Cpu(30, 2, 0, 0)]
    >>> [c.cpu for c in restrict_to(cs, [2])]
    [2, 30]
    """
    if not allowed:
        return list(cpus)
    keep = {(c.socket, c.core) for c in cpus if c.cpu in set(allowed)}
    return [c for c in cpus if (c.socket, c.core) in keep]


def detect_cpu_hz(node: Any, cpu: int = 0) -> float:
    """Nominal frequency of ``cpu`` on the node: cpufreq ``base_frequency`` (kHz), else
    ``cpuinfo_max_freq`` (kHz, nominal only with turbo off), else ``cpu MHz`` of /proc/cpuinfo."""
    for name in ("base_frequency", "cpuinfo_max_freq"):
        res = node.run(["cat", f"/sys/devices/system/cpu/cpu{int(cpu)}/cpufreq/{name}"], check=False, timeout=15)
        try:
            if res.returncode == 0:
                return float(res.stdout.strip()) * 1e3
        except ValueError:
            pass
    res = node.run(["cat", "/proc/cpuinfo"], check=False, timeout=15)
    for line in res.stdout.splitlines():
        if line.lower().startswith("cpu mhz"):
            return float(line.split(":")[1]) * 1e6
    raise EnvironmentProblem(f"cannot detect the DUT CPU frequency of CPU {cpu}: declare it in the topology "
                             "(cpu_freq: {source: declared, hz: 2.5e9})")
