"""Core allocation that knows NUMA nodes and SMT siblings.

Input is ``lscpu -p=CPU,CORE,SOCKET,NODE`` output (passed in, so it is testable). HT on
gives both sibling threads of each physical core (tag ``2T1C`` for one core); HT off gives
one thread per core (``1T1C``). The main core is a separate physical core.

Example::

    cpus = parse_lscpu(node.run(["lscpu", "-p=CPU,CORE,SOCKET,NODE"]).stdout)
    a = allocate(cpus, phy_cores=2, ht=True, numa=0)
    a.tag, a.main, a.workers          # ('4T2C', 1, [2, 30, 3, 31])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

from dpgate.model.errors import ConfigError


@dataclass(frozen=True)
class Cpu:
    """One logical CPU: its id, physical core, socket and NUMA node."""

    cpu: int
    core: int
    socket: int
    node: int


@dataclass(frozen=True)
class CoreAllocation:
    """Main (control) CPU and worker CPUs; ``tag`` like ``2T1C``."""

    main: int
    workers: Tuple[int, ...]
    phy_cores: int
    threads_per_core: int
    numa: int

    @property
    def tag(self) -> str:
        return f"{self.phy_cores * self.threads_per_core}T{self.phy_cores}C"

    @property
    def corelist(self) -> str:
        """Workers as a comma list, e.g. ``'2,30'``."""
        return ",".join(str(c) for c in self.workers)

    @property
    def mask(self) -> str:
        """Workers as a hex CPU mask, e.g. ``'0x4'`` (OVS pmd-cpu-mask)."""
        return hex(sum(1 << c for c in self.workers))


def parse_lscpu(text: str) -> List[Cpu]:
    """Parse ``lscpu -p=CPU,CORE,SOCKET,NODE`` (comment lines start with ``#``).

    >>> parse_lscpu("# CPU,Core,Socket,Node\\n0,0,0,0\\n1,1,0,0\\n")[1]
    Cpu(cpu=1, core=1, socket=0, node=0)
    """
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(",")
        try:
            cpu, core, socket = int(parts[0]), int(parts[1]), int(parts[2])
            node = int(parts[3]) if len(parts) > 3 and parts[3] != "" else 0
        except (ValueError, IndexError):
            raise ConfigError(
                f"line {n}: expected CPU,CORE,SOCKET,NODE integers, got {line!r}",
                source="lscpu -p=CPU,CORE,SOCKET,NODE",
            ) from None
        out.append(Cpu(cpu, core, socket, node))
    return out


def physical_cores(cpus: Sequence[Cpu], numa: Optional[int] = None) -> List[List[int]]:
    """Logical CPU ids grouped by physical core (siblings together), in core order."""
    groups: Dict[Tuple[int, int], List[int]] = {}
    for c in cpus:
        if numa is None or c.node == numa:
            groups.setdefault((c.socket, c.core), []).append(c.cpu)
    return [sorted(v) for _, v in sorted(groups.items(), key=lambda kv: min(kv[1]))]


def allocate(
    cpus: Sequence[Cpu],
    phy_cores: int,
    ht: bool,
    numa: int = 0,
    main: Optional[int] = None,
    skip: Sequence[int] = (0,),
    shared_main: bool = False,
) -> CoreAllocation:
    """Pick a main CPU and ``phy_cores`` worker physical cores on NUMA node ``numa``.

    ``skip`` lists logical CPUs kept for the OS (whole physical cores are skipped). With
    ``ht`` each worker core contributes its first two sibling threads; without, one.
    ``shared_main`` (a topology that lists its ``main_cpu`` among its ``cpus``, like a
    2-CPU lab on one machine): the main CPU's core may also be a worker core.

    >>> allocate([Cpu(0, 0, 0, 0), Cpu(1, 1, 0, 0)], 1, False, main=1, shared_main=True).workers
    (1,)
    """
    cores = physical_cores(cpus, numa)
    if not cores:
        raise ConfigError(f"no CPUs on NUMA node {numa}: pick the NIC's node (lscpu shows the nodes)")
    if ht and any(len(c) < 2 for c in cores):
        raise ConfigError(
            f"HT requested (2 threads per core) but NUMA node {numa} has cores without an SMT "
            "sibling: enable SMT in the BIOS or run the 1T1C cases"
        )
    free = [c for c in cores if not set(c) & set(skip)]
    if main is None:
        if not free:
            raise ConfigError(f"no free physical core for the main thread on NUMA node {numa}")
        main_core = free.pop(0)
        main = main_core[0]
    elif not shared_main:
        free = [c for c in free if main not in c]
    if len(free) < phy_cores:
        raise ConfigError(
            f"{phy_cores} worker cores requested on NUMA node {numa}, only {len(free)} free "
            f"physical cores (after main CPU {main} and skipped {list(skip)})"
        )
    tpc = 2 if ht else 1
    workers: List[int] = []
    for core in free[:phy_cores]:
        workers.extend(core[:tpc])
    return CoreAllocation(
        main=main, workers=tuple(workers), phy_cores=phy_cores, threads_per_core=tpc, numa=numa
    )


_TRUE = ("on", "true", "yes", "1", "ht")
_FALSE = ("off", "false", "no", "0", "noht", "")


def parse_ht(value: Union[bool, str, int]) -> bool:
    """``on``/``off`` (also true/false, yes/no, 1/0) → bool.

    >>> parse_ht("on"), parse_ht(False)
    (True, False)
    """
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ConfigError(f"ht must be on or off, got {value!r}", path="ht")


def parse_cores(value: Union[int, str]) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise ConfigError(f"cores must be a whole number of physical cores >= 1, got {value!r}", path="cores")
    return n
