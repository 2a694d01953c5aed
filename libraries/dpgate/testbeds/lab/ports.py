"""DUT ports for the SUT drivers by kind: PCI devices, af_packet on a Linux interface, memif.

A topology port (``dpgate.topology.Interface``) is a PCI device of a physical lab, or a
virtual one of a lab on one machine. This module turns ports into what each SUT wants:

* DPDK EAL (testpmd, l3fwd): ``-a <pci>``, or ``--vdev=net_af_packet<i>,iface=<name>,...``
  / ``--vdev=net_memif<i>,role=client,id=..,socket=..,socket-abstract=no,mac=..``; with
  only virtual ports ``--no-pci --no-huge -m <MB>`` (no NIC, no hugepages needed).
* The DPDK port id of each topology port (audit item 14): DPDK numbers PCI devices in bus
  order (not ``-a`` order), then vdevs in ``--vdev`` order; :func:`dpdk_port_ids` predicts it
  and :func:`check_port_macs` checks it against the MACs the application printed.
* The lcore layout when the SUT shares one CPU between its main and worker lcore (a lab
  on one machine): ``--lcores=0@1,1@1``; otherwise ``-l main,workers``.

Example::

    eal_args(cores, dut.ports[:2], "dpgate-testpmd")
    # ['--lcores=0@1,1@1', '--main-lcore', '0', ..., '--no-pci', '--no-huge', '-m', '512',
    #  '--vdev=net_af_packet0,iface=lb-d0,blocksz=131072,framesz=2048,framecnt=4096,qdisc_bypass=1', ...]
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Sequence

from dpgate.model.errors import ConfigError, SutError
from dpgate.testbeds.lab.cores import CoreAllocation

#: af_packet ring: 4096 frames of 2048 bytes (the 256-frame default ring drops a few percent
#: from 200 kpps up: vendor/README.md, TRex measurements) in 128 KiB blocks, each one
#: physically contiguous allocation (order 5; the kernel falls back to vmalloc when memory
#: is too fragmented). With 4 KiB blocks each page of the ring lands anywhere, so each start
#: of the SUT copies frames into a differently laid out ring: on the Zen 4 host (2026-12-02,
#: testpmd-io at 37.5 kpps against one twin) six restarts of the SUT's testpmd read its cycles
#: per kernel cycle 5.5 to 7.1 % below the twin (one +5.5 %) with the kernel's own cycles per
#: frame 10-19 % above it, stable within a start and moving at each restart; with 128 KiB
#: blocks six restarts read +0.5 to +2.4 %, the kernel's part -8 to +6 %. 128 KiB is the way
#: size of a 1 MiB 8-way L2, so a block maps onto the L2 sets alike in every start.
AF_PACKET_RING = "blocksz=131072,framesz=2048,framecnt=4096,qdisc_bypass=1"


def port_kind(port: Any) -> str:
    kind = getattr(port, "port_kind", None) or ("pci" if getattr(port, "pci", None) else None)
    if kind is None:
        raise ConfigError(
            f"DUT interface {port.name} has no pci address and no kind: add pci: <address>, "
            "or kind: af_packet (Linux interface) / kind: memif with memif: {socket, id, role}",
            path=f"interfaces.{port.name}.kind",
        )
    return kind


def virtual_only(ports: Sequence[Any]) -> bool:
    return all(port_kind(p) != "pci" for p in ports)


def vdev(port: Any, index: int) -> str:
    """``--vdev`` value for a virtual port (``index`` numbers the vdev of its driver).

    >>> from dpgate.config.topology import Interface, Memif
    >>> vdev(Interface("lb-d0", "02:fe:00:00:00:20", "l1", kind="af_packet"), 0)
    'net_af_packet0,iface=lb-d0,blocksz=131072,framesz=2048,framecnt=4096,qdisc_bypass=1'
    >>> vdev(Interface("m0", "02:fe:00:00:00:20", "l1", kind="memif", memif=Memif("/tmp/m.sock", 3)), 1)
    'net_memif1,role=client,id=3,socket=/tmp/m.sock,socket-abstract=no,mac=02:fe:00:00:00:20'
    """
    kind = port_kind(port)
    if kind == "af_packet":
        return f"net_af_packet{index},iface={port.name},{AF_PACKET_RING}"
    if kind == "memif":
        m = port.memif
        return f"net_memif{index},role={m.role},id={m.id},socket={m.socket},socket-abstract=no,mac={port.mac}"
    raise ConfigError(f"{port.name} is a PCI port, not a virtual one")


def _pci_key(pci: str) -> tuple:
    full = pci if pci.count(":") == 2 else "0000:" + pci
    dom, bus, rest = full.split(":")
    dev, fn = rest.split(".")
    return (int(dom, 16), int(bus, 16), int(dev, 16), int(fn, 16))


def dpdk_port_ids(ports: Sequence[Any]) -> Dict[int, int]:
    """{topology port index: DPDK port id}: PCI devices in bus order, then vdevs in argument order.

    >>> from dpgate.config.topology import Interface
    >>> dpdk_port_ids([Interface("a", "02:00:00:00:00:01", "l1", pci="0000:86:00.1"),
    ...                Interface("b", "02:00:00:00:00:02", "l2", pci="0000:18:00.0")])
    {1: 0, 0: 1}
    """
    pcis = sorted(
        (i for i, p in enumerate(ports) if port_kind(p) == "pci"), key=lambda i: _pci_key(ports[i].pci)
    )
    virt = [i for i, p in enumerate(ports) if port_kind(p) != "pci"]
    return {topo_i: dpdk_i for dpdk_i, topo_i in enumerate(pcis + virt)}


def device_args(ports: Sequence[Any]) -> List[str]:
    """``-a``/``--vdev`` arguments, plus ``--no-pci`` when every port is virtual."""
    out: List[str] = []
    counters: Dict[str, int] = {}
    for p in ports:
        kind = port_kind(p)
        if kind == "pci":
            out += ["-a", p.pci]
        else:
            n = counters.get(kind, 0)
            counters[kind] = n + 1
            out.append(f"--vdev={vdev(p, n)}")
    if virtual_only(ports):
        out.append("--no-pci")
    return out


def lcore_layout(cores: CoreAllocation, main_works: bool = False) -> tuple:
    """(EAL lcore arguments, worker lcore ids).

    One CPU for main and worker (``main`` in ``workers``): two lcores on that CPU, main
    lcore 0 and workers 1..n (testpmd never forwards on its main lcore); else the CPU ids
    themselves. ``main_works`` (l3fwd runs its loop on the main lcore too, and opens one TX
    queue per lcore): the worker CPUs alone, the first one main.

    >>> lcore_layout(CoreAllocation(1, (1,), 1, 1, 0), main_works=True)
    (['-l', '1', '--main-lcore', '1'], [1])

    >>> lcore_layout(CoreAllocation(1, (1,), 1, 1, 0))
    (['--lcores=0@1,1@1', '--main-lcore', '0'], [1])
    >>> lcore_layout(CoreAllocation(1, (2, 3), 2, 1, 0))
    (['-l', '1,2,3', '--main-lcore', '1'], [2, 3])
    """
    if cores.main in cores.workers and main_works:
        ws = list(dict.fromkeys(cores.workers))
        return ["-l", ",".join(str(c) for c in ws), "--main-lcore", str(ws[0])], ws
    if cores.main in cores.workers:
        mapping = [f"0@{cores.main}"] + [f"{i + 1}@{c}" for i, c in enumerate(cores.workers)]
        return [f"--lcores={','.join(mapping)}", "--main-lcore", "0"], list(range(1, len(cores.workers) + 1))
    lcores = [cores.main] + list(cores.workers)
    return ["-l", ",".join(str(c) for c in lcores), "--main-lcore", str(cores.main)], list(cores.workers)


def eal_args(
    cores: CoreAllocation,
    ports: Sequence[Any],
    file_prefix: str,
    mem_channels: int = 4,
    no_huge_mb: int = 1024,
    main_works: bool = False,
) -> List[str]:
    """EAL options: lcores, memory (``--no-huge -m`` with virtual ports), devices, verbose (prints the version)."""
    lc, _ = lcore_layout(cores, main_works)
    out = lc + ["-n", str(mem_channels), "--file-prefix", file_prefix, "-v"]
    if virtual_only(ports):
        out += ["--no-huge", "-m", str(int(no_huge_mb))]
    return out + device_args(ports)


_MAC = r"((?:[0-9A-Fa-f]{2}:){5}[0-9A-Fa-f]{2})"
#: testpmd: ``Port 0: 02:FE:00:00:00:20``; l3fwd: ``Initializing port 0 ...`` then `` Address:02:FE:...``
_PORT_MAC = (
    re.compile(r"^Port (\d+): " + _MAC + r"\s*$", re.M),
    re.compile(r"Initializing port (\d+) (?:(?!Initializing port).)*?Address:" + _MAC, re.S),
)


def check_port_macs(log: str, ports: Sequence[Any], what: str) -> None:
    """SutError when the DPDK port ids the app printed with MACs differ from :func:`dpdk_port_ids`.

    testpmd prints ``Port 0: 02:FE:00:00:00:20``, l3fwd ``Initializing port 0 ... Address:02:FE:..``.
    A port whose MAC the log does not show is not checked (a NIC may not print it).
    """
    expected = dpdk_port_ids(ports)
    seen: Dict[int, str] = {}
    for rx in _PORT_MAC:
        for m in rx.finditer(log):
            seen.setdefault(int(m.group(1)), m.group(2).lower())
    for topo_i, dpdk_i in expected.items():
        mac = seen.get(dpdk_i)
        if mac is not None and mac != ports[topo_i].mac.lower():
            raise SutError(
                f"{what}: DPDK port {dpdk_i} has MAC {mac}, expected {ports[topo_i].mac} "
                f"(topology port {ports[topo_i].name}): DPDK numbered the ports in another order"
            )
