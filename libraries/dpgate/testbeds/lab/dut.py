"""Facts about a lab DUT read through a ``dpgate.exec.remote`` node: CPU layout and core frequency.

Example::

    cpus = read_cpus(node)                       # lscpu -p=CPU,CORE,SOCKET,NODE on the DUT
    hz = detect_cpu_hz(node, cpu=2)              # cpufreq base/max, else /proc/cpuinfo
"""

from __future__ import annotations

from typing import Any, List, Sequence

from dpgate.exec.cpu import detect_cpu_hz  # noqa: F401  (the one detect_cpu_hz; importable here too)
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
