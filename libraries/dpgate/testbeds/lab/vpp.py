"""FD.io VPP on a lab DUT: startup.conf and CLI generation, start/ready/stop, stats.

NFs (seed 000, Table 1): ``l2patch`` (L2 port patch, point-to-point), ``l2bd`` (MAC
learning and switching in a bridge domain), ``ip4`` (IPv4 routing with /32 entries, one
per destination flow). Interfaces are named in the ``dpdk { dev <pci> { name ... } }``
stanza after the topology interface, so CLI lines do not depend on VPP's naming.

Example::

    vpp = Vpp(node, topo.dut, cores, nf="ip4", routes=[Route("20.0.0.0", 62500, "eth1", "10.10.20.2")])
    vpp.configure(); vpp.start(); vpp.ready(); vpp.stats()["eth0"]["rx packets"]
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.service import start_unit, stop_unit, unit_log, wait_until, write_file

NFS = ("l2patch", "l2bd", "ip4")


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


def startup_conf(cores: CoreAllocation, pcis: Sequence[tuple], rx_queues: int = 1,
                 buffers_per_numa: int = 215040, cli_sock: str = "/run/vpp/cli-dpgate.sock",
                 log: str = "/var/log/vpp/dpgate-vpp.log") -> str:
    """startup.conf text; ``pcis`` is [(pci, name)].

    >>> from dpgate.testbeds.lab.cores import CoreAllocation
    >>> print(startup_conf(CoreAllocation(1, (2, 3), 2, 1, 0), [("0000:18:00.0", "eth0")]))  # doctest: +ELLIPSIS
    unix {...
    cpu {
      main-core 1
      corelist-workers 2,3
    }...
    """
    lines = ["unix {", "  nodaemon", f"  log {log}", f"  cli-listen {cli_sock}", "  full-coredump", "}",
             "cpu {", f"  main-core {cores.main}"]
    if cores.workers:
        lines.append(f"  corelist-workers {cores.corelist}")
    lines += ["}", "buffers {", f"  buffers-per-numa {buffers_per_numa}", "}", "dpdk {"]
    for pci, name in pcis:
        lines.append(f"  dev {pci} {{ name {name} num-rx-queues {rx_queues} }}")
    lines += ["  no-multi-seg", "  no-tx-checksum-offload", "}",
              "plugins {", "  plugin default { disable }", "  plugin dpdk_plugin.so { enable }", "}"]
    return "\n".join(lines) + "\n"


def cli_lines(nf: str, ifaces: Sequence[str], addresses: Sequence[str] = (),
              neighbors: Sequence[Neighbor] = (), routes: Sequence[Route] = ()) -> List[str]:
    """vppctl lines for one NF over two ports (``ifaces`` = [port0, port1]).

    >>> cli_lines("l2patch", ["eth0", "eth1"])[-2:]
    ['test l2patch rx eth0 tx eth1', 'test l2patch rx eth1 tx eth0']
    """
    if nf not in NFS:
        raise ConfigError(f"unknown VPP NF {nf!r}: expected one of {', '.join(NFS)}")
    a, b = ifaces
    out = [f"set interface state {i} up" for i in ifaces]
    if nf == "l2patch":
        out += [f"test l2patch rx {a} tx {b}", f"test l2patch rx {b} tx {a}"]
    elif nf == "l2bd":
        out += ["create bridge-domain 1 learn 1 forward 1 uu-flood 1 flood 1",
                f"set interface l2 bridge {a} 1", f"set interface l2 bridge {b} 1"]
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
    neighbors = [Neighbor(dut0.name, hop0, tg0.mac), Neighbor(dut1.name, hop1, tg1.mac)]
    routes = [Route(IP_DIR0_DST, flows, dut1.name, hop1), Route(IP_DIR0_SRC, flows, dut0.name, hop0)]
    return neighbors, routes


_SHOW_INT_HEAD = re.compile(r"^\s*Name\s+Idx\s+State")


def parse_show_interface(text: str) -> Dict[str, Dict[str, int]]:
    """``show interface`` → {interface: {counter: value}}, e.g. ``{'eth0': {'rx packets': 10}}``."""
    out: Dict[str, Dict[str, int]] = {}
    current: Optional[str] = None
    for line in text.splitlines():
        if not line.strip() or _SHOW_INT_HEAD.match(line):
            continue
        toks = line.split()
        if not line[0].isspace() and len(toks) >= 4 and toks[1].isdigit():
            current = toks[0]
            out[current] = {}
            toks = toks[4:]
        if current is None or len(toks) < 2 or not toks[-1].isdigit():
            continue
        out[current][" ".join(toks[:-1])] = int(toks[-1])
    return out


def parse_show_runtime(text: str) -> Dict[str, Dict[str, Dict[str, float]]]:
    """``show runtime`` → {thread: {node: {calls, vectors, suspends, clocks, vectors_per_call}}}."""
    out: Dict[str, Dict[str, Dict[str, float]]] = {}
    thread = "0 vpp_main"
    for line in text.splitlines():
        m = re.match(r"^Thread (\d+) (\S+)", line)
        if m:
            thread = f"{m.group(1)} {m.group(2)}"
            out.setdefault(thread, {})
            continue
        toks = line.split()
        if len(toks) == 7:
            try:
                nums = [float(t) for t in toks[2:]]
            except ValueError:
                continue
            out.setdefault(thread, {})[toks[0]] = dict(zip(
                ("calls", "vectors", "suspends", "clocks", "vectors_per_call"), nums))
    return out


def parse_version(text: str) -> str:
    """``show version`` → ``'v23.10-release'``."""
    m = re.search(r"\bvpp (v\S+)", text)
    return m.group(1) if m else text.strip()


class Vpp(LabSut):
    """VPP driver over a ``dpgate.exec.remote`` node."""

    unit = "dpgate-vpp"

    def __init__(self, node: Any, dut: Any, cores: CoreAllocation, nf: str = "l2patch", rx_queues: int = 1,
                 neighbors: Sequence[Neighbor] = (), routes: Sequence[Route] = (),
                 conf_path: str = "/etc/vpp/dpgate-startup.conf", cli_sock: str = "/run/vpp/cli-dpgate.sock"):
        self.node, self.dut, self.cores, self.nf = node, dut, cores, nf
        self.rx_queues, self.neighbors, self.routes = rx_queues, list(neighbors), list(routes)
        self.conf_path, self.cli_sock = conf_path, cli_sock
        for i in dut.ports[:2]:
            if not i.pci:
                raise ConfigError(f"VPP needs a pci address on DUT interface {i.name}")

    def vppctl(self, line: str, timeout: float = 30.0) -> str:
        return self.node.run(["vppctl", "-s", self.cli_sock] + shlex.split(line), timeout=timeout).stdout

    def configure(self) -> None:
        ports = self.dut.ports[:2]
        write_file(self.node, self.conf_path, startup_conf(
            self.cores, [(p.pci, p.name) for p in ports], self.rx_queues, cli_sock=self.cli_sock))

    def start(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        start_unit(self.node, self.unit, ["vpp", "-c", self.conf_path])
        self.ready(timeout_s, **wait_kw)
        ports = self.dut.ports[:2]
        addrs = [p.ip4 for p in ports if p.ip4]
        for line in cli_lines(self.nf, [p.name for p in ports], addrs, self.neighbors, self.routes):
            self.vppctl(line)

    def ready(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        wait_until(lambda: bool(self.vppctl("show version", timeout=5)), timeout_s, "VPP",
                   log=lambda: unit_log(self.node, self.unit), **wait_kw)

    def stop(self) -> None:
        stop_unit(self.node, self.unit)

    def stats(self) -> Dict[str, Any]:
        return {"interfaces": parse_show_interface(self.vppctl("show interface")),
                "runtime": parse_show_runtime(self.vppctl("show runtime"))}

    def clear_stats(self) -> None:
        self.vppctl("clear interfaces")
        self.vppctl("clear runtime")

    def version(self) -> str:
        return parse_version(self.vppctl("show version"))
