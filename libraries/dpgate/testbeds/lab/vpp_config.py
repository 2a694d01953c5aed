"""VPP configuration text for :mod:`dpgate.testbeds.lab.vpp`: startup.conf and CLI lines.

Interface names of topology ports (PCI ports keep their topology name, ``host-<if>`` for
af_packet, ``memif<socket-id>/<id>`` for memif), the CLI lines that create virtual ports,
the startup.conf text (dpdk plugin for PCI ports, else af_packet/memif on 4k pages), and the
CLI sequence per NF (seed 000, Table 1): ``l2patch``, ``l2bd`` (bridge domain) and ``ip4``
(/32 routes, one per destination flow) with the neighbors and routes they need.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Sequence

from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab import ports as ports_mod
from dpgate.testbeds.lab.cores import CoreAllocation

NFS = ("l2patch", "l2bd", "ip4")


def vpp_ifname(port: Any) -> str:
    """The VPP interface name of a topology port.

    >>> from dpgate.config.topology import Interface
    >>> vpp_ifname(Interface("lb-d0", "02:fe:00:00:00:20", "l1", kind="af_packet"))
    'host-lb-d0'
    """
    kind = ports_mod.port_kind(port)
    if kind == "af_packet":
        return f"host-{port.name}"
    if kind == "memif":
        return f"memif{_MEMIF_SOCKET_ID}/{port.memif.id}"
    return port.name


_MEMIF_SOCKET_ID = 1


def create_lines(ports: Sequence[Any]) -> List[str]:
    """CLI lines that create the virtual ports (none for PCI ports: the dpdk plugin owns those).

    >>> from dpgate.config.topology import Interface
    >>> create_lines([Interface("lb-d0", "02:fe:00:00:00:20", "l1", kind="af_packet")])
    ['create host-interface name lb-d0 hw-addr 02:fe:00:00:00:20']
    """
    out: List[str] = []
    sockets: List[str] = []
    for p in ports:
        kind = ports_mod.port_kind(p)
        if kind == "af_packet":
            out.append(f"create host-interface name {p.name} hw-addr {p.mac}")
        elif kind == "memif":
            if p.memif.socket not in sockets:
                if sockets:
                    raise ConfigError(
                        "VPP: all memif ports of the DUT must share one socket file", path="memif.socket"
                    )
                sockets.append(p.memif.socket)
                out.append(f"create memif socket id {_MEMIF_SOCKET_ID} filename {p.memif.socket}")
            role = "master" if p.memif.role == "server" else "slave"
            out.append(
                f"create interface memif id {p.memif.id} socket-id {_MEMIF_SOCKET_ID} {role} hw-addr {p.mac}"
            )
    return out


@dataclass(frozen=True)
class Route:
    """``count`` consecutive /32 routes from ``first`` via ``next_hop`` out of ``interface``."""

    first: str
    count: int
    interface: str
    next_hop: str


@dataclass(frozen=True)
class Neighbor:
    """Static ARP entry for a next hop (the TG port's MAC)."""

    interface: str
    ip: str
    mac: str


def startup_conf(
    cores: CoreAllocation,
    pcis: Sequence[tuple],
    rx_queues: int = 1,
    buffers_per_numa: int = 215040,
    cli_sock: str = "/run/vpp/cli-dpgate.sock",
    log: str = "/var/log/vpp/dpgate-vpp.log",
    runtime_dir: str = "",
) -> str:
    """startup.conf text; ``pcis`` is [(pci, name)]; none (virtual ports only) gives the
    af_packet/memif plugins instead of dpdk, everything on 4k pages (no hugepages) and, with
    ``runtime_dir``, private API segment, API and stats sockets (several VPPs on one host).

    >>> from dpgate.testbeds.lab.cores import CoreAllocation
    >>> print(startup_conf(CoreAllocation(1, (2, 3), 2, 1, 0), [("0000:18:00.0", "eth0")]))  # doctest: +ELLIPSIS
    unix {...
    cpu {
      main-core 1
      corelist-workers 2,3
    }...
    """
    lines = ["unix {", "  nodaemon", f"  log {log}", f"  cli-listen {cli_sock}", "  full-coredump"]
    if runtime_dir:
        lines.append(f"  runtime-dir {runtime_dir}")
    lines += ["}", "cpu {", f"  main-core {cores.main}"]
    if cores.workers and tuple(cores.workers) != (cores.main,):
        lines.append(f"  corelist-workers {cores.corelist}")
    if not pcis:
        return (
            "\n".join(
                lines
                + [
                    "}",
                    "memory {",
                    "  main-heap-size 512M",
                    "  main-heap-page-size 4k",
                    "}",
                    "buffers {",
                    "  buffers-per-numa 16384",
                    "  default data-size 2048",
                    "  page-size 4k",
                    "}",
                    "statseg {",
                    f"  socket-name {runtime_dir or '/run/vpp'}/stats.sock",
                    "  size 32M",
                    "  page-size 4k",
                    "  per-node-counters on",
                    "}",
                ]
                + (
                    [
                        "api-segment {",
                        f"  prefix {runtime_dir.strip('/').replace('/', '-')}",
                        "}",
                        "socksvr {",
                        f"  socket-name {runtime_dir}/api.sock",
                        "}",
                    ]
                    if runtime_dir
                    else []
                )
                + [
                    "plugins {",
                    "  plugin default { disable }",
                    "  plugin af_packet_plugin.so { enable }",
                    "  plugin memif_plugin.so { enable }",
                    "  plugin ping_plugin.so { enable }",
                    "}",
                    "logging { default-log-level info default-syslog-log-level warn }",
                ]
            )
            + "\n"
        )
    lines += ["}", "buffers {", f"  buffers-per-numa {buffers_per_numa}", "}", "dpdk {"]
    for pci, name in pcis:
        lines.append(f"  dev {pci} {{ name {name} num-rx-queues {rx_queues} }}")
    lines += [
        "  no-multi-seg",
        "  no-tx-checksum-offload",
        "}",
        "plugins {",
        "  plugin default { disable }",
        "  plugin dpdk_plugin.so { enable }",
        "}",
    ]
    return "\n".join(lines) + "\n"


def cli_lines(
    nf: str,
    ifaces: Sequence[str],
    addresses: Sequence[str] = (),
    neighbors: Sequence[Neighbor] = (),
    routes: Sequence[Route] = (),
) -> List[str]:
    """vppctl lines for one NF over two ports (``ifaces`` = [port0, port1]).

    >>> cli_lines("l2patch", ["eth0", "eth1"])[-2:]
    ['test l2patch rx eth0 tx eth1', 'test l2patch rx eth1 tx eth0']
    """
    if nf not in NFS:
        raise ConfigError(f"unknown VPP NF {nf!r}: expected one of {', '.join(NFS)}")
    a, b = ifaces
    out = [f"set interface state {i} up" for i in ifaces]
    if nf in ("l2patch", "l2bd"):  # a NIC in L3 mode drops frames not sent to its own MAC
        out += [f"set interface promiscuous on {i}" for i in ifaces]
    if nf == "l2patch":
        out += [f"test l2patch rx {a} tx {b}", f"test l2patch rx {b} tx {a}"]
    elif nf == "l2bd":
        out += [
            "create bridge-domain 1 learn 1 forward 1 uu-flood 1 flood 1 arp-term 0",
            f"set interface l2 bridge {a} 1",
            f"set interface l2 bridge {b} 1",
        ]
        out += [f"l2fib add {n.mac} 1 {n.interface} static" for n in neighbors]
    else:
        if len(addresses) != len(ifaces):
            raise ConfigError("VPP ip4 routing needs an ip4 address (like 10.10.10.1/24) on each DUT port")
        out += [f"set interface ip address {i} {addr}" for i, addr in zip(ifaces, addresses)]
        out += [f"ip neighbor {n.interface} {n.ip} {n.mac} static" for n in neighbors]
        for r in routes:
            out.append(f"ip route add {r.first}/32 count {r.count} via {r.next_hop} {r.interface}")
    return out


def ip4_routing(topology: Any, flows: int) -> tuple:
    """(neighbors, routes) for VPP IPv4 routing with one /32 per destination flow, matching the
    TRex/embedded ip4 profile (direction 0 sends to 198.19.0.1.., direction 1 to 198.18.0.1..).

    Needs ip4 on the TG ports (the next hops). Example: ``ip4_routing(topo, 62500)`` gives
    ``Route("198.19.0.1", 62500, "eth1", "20.20.20.2")`` for the example lab topology.
    """
    from dpgate.traffic.profiles import IP_DIR0_DST, IP_DIR0_SRC

    (tg0, dut0), (tg1, dut1) = topology.pairs()[:2]
    if not (tg0.ip4 and tg1.ip4):
        raise ConfigError("VPP ip4 routing needs ip4 on both TG ports (the next hops), like 10.10.10.2/24")
    hop0, hop1 = tg0.ip4.split("/")[0], tg1.ip4.split("/")[0]
    if0, if1 = vpp_ifname(dut0), vpp_ifname(dut1)
    neighbors = [Neighbor(if0, hop0, tg0.mac), Neighbor(if1, hop1, tg1.mac)]
    routes = [Route(IP_DIR0_DST, flows, if1, hop1), Route(IP_DIR0_SRC, flows, if0, hop0)]
    return neighbors, routes


def l2_static_macs(topology: Any) -> List[Neighbor]:
    """Static l2fib entries for the bridge domain: each TG port's MAC behind its DUT port."""
    return [Neighbor(vpp_ifname(dut), "", tg.mac) for tg, dut in topology.pairs()[:2]]
