"""FD.io VPP on a lab DUT: startup.conf and CLI generation, start/ready/stop, stats.

NFs (seed 000, Table 1): ``l2patch`` (L2 port patch, point-to-point), ``l2bd`` (MAC
learning and switching in a bridge domain), ``ip4`` (IPv4 routing with /32 entries, one
per destination flow). PCI ports are named in the ``dpdk { dev <pci> { name ... } }``
stanza after the topology interface; virtual ports are created over the CLI
(``create host-interface name <if>`` gives ``host-<if>``, ``create interface memif`` gives
``memif<socket-id>/<id>``) and VPP then runs without the dpdk plugin and without
hugepages (main heap, buffers and stats segment on 4k pages: vendor/vpp-build.md).

``vppctl`` exits 0 whatever the command did (src/vpp/app/vppctl.c, audit item 16): every
configuration line's output is read, and ``unknown input``, ``failed``, ``error`` or
``invalid`` in it is a SutError naming the line. L2 NFs put their ports in promiscuous
mode: ``test l2patch`` does not, and a NIC in L3 mode drops the profile's many dst MACs.

Example::

    vpp = Vpp(node, topo.dut, cores, nf="ip4", routes=[Route("20.0.0.0", 62500, "eth1", "10.10.20.2")])
    vpp.configure(); vpp.start(); vpp.ready(); vpp.stats()["eth0"]["rx packets"]
"""

from __future__ import annotations

import re
import shlex
from typing import Any, Dict, Optional, Sequence

from dpgate.model.errors import SutError
from dpgate.testbeds.lab import ports as ports_mod
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.service import start_unit, stop_unit, unit_active, unit_log, wait_until, write_file
from dpgate.testbeds.lab.vpp_config import (
    NFS,
    Neighbor,
    Route,
    cli_lines,
    create_lines,
    ip4_routing,
    l2_static_macs,
    startup_conf,
    vpp_ifname,
)

__all__ = [
    "CLI_ERRORS",
    "NFS",
    "Neighbor",
    "Route",
    "Vpp",
    "check_cli_output",
    "cli_lines",
    "create_lines",
    "ip4_routing",
    "l2_static_macs",
    "parse_show_interface",
    "parse_show_runtime",
    "parse_version",
    "startup_conf",
    "vpp_ifname",
]

#: Output of a vppctl line that did not do what it said (vppctl itself exits 0).
#: Texts of VPP 26.10 seen for real: "unknown input `..'", "set interface state: unknown interface `..'",
#: "ip route: parse error `..'", "create host-interface: Invalid interface name",
#: "set interface l2 bridge: expected bridge domain ID `x'", "test l2patch: tx interface not set".
CLI_ERRORS = re.compile(
    r"unknown|failed|error|invalid|not found|no such|not set|expected|cannot|not supported", re.I
)


def check_cli_output(line: str, output: str) -> str:
    """``output`` of ``vppctl line``, or SutError when it reports a failure.

    >>> check_cli_output("show version", "vpp v26.10 built by x")
    'vpp v26.10 built by x'
    """
    m = CLI_ERRORS.search(output)
    if m:
        raise SutError(f"VPP refused {line!r}: {' '.join(output.split())[:300]}")
    return output


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
            out.setdefault(thread, {})[toks[0]] = dict(
                zip(("calls", "vectors", "suspends", "clocks", "vectors_per_call"), nums)
            )
    return out


def parse_version(text: str) -> str:
    """``show version`` → ``'v23.10-release'``."""
    m = re.search(r"\bvpp (v\S+)", text)
    return m.group(1) if m else text.strip()


class Vpp(LabSut):
    """VPP driver over a ``dpgate.exec.remote`` node."""

    unit = "dpgate-vpp"

    def __init__(
        self,
        node: Any,
        dut: Any,
        cores: CoreAllocation,
        nf: str = "l2patch",
        rx_queues: int = 1,
        neighbors: Sequence[Neighbor] = (),
        routes: Sequence[Route] = (),
        conf_path: str = "/etc/vpp/dpgate-startup.conf",
        cli_sock: str = "/run/vpp/cli-dpgate.sock",
        runtime_dir: str = "",
        vpp_bin: str = "vpp",
        vppctl_bin: str = "vppctl",
        log: str = "/var/log/vpp/dpgate-vpp.log",
    ):
        self.node, self.dut, self.cores, self.nf = node, dut, cores, nf
        self.rx_queues, self.neighbors, self.routes = rx_queues, list(neighbors), list(routes)
        self.conf_path, self.cli_sock, self.runtime_dir = conf_path, cli_sock, runtime_dir
        self.vpp_bin, self.vppctl_bin, self.log_path = vpp_bin, vppctl_bin, log
        for i in dut.ports[:2]:
            ports_mod.port_kind(i)

    def vppctl(self, line: str, timeout: float = 30.0) -> str:
        """Output of one CLI line (not checked: see :meth:`cli`)."""
        return self.node.run(
            [self.vppctl_bin, "-s", self.cli_sock] + shlex.split(line), timeout=timeout
        ).stdout

    def cli(self, line: str, timeout: float = 30.0) -> str:
        """Run a configuration line; SutError when VPP's output says it failed (vppctl exits 0)."""
        return check_cli_output(line, self.vppctl(line, timeout=timeout))

    def configure(self) -> None:
        ports = self.dut.ports[:2]
        pcis = [(p.pci, p.name) for p in ports if ports_mod.port_kind(p) == "pci"]
        if self.runtime_dir:
            self.node.run(["mkdir", "-p", self.runtime_dir], timeout=30)
        write_file(
            self.node,
            self.conf_path,
            startup_conf(
                self.cores,
                pcis,
                self.rx_queues,
                cli_sock=self.cli_sock,
                log=self.log_path,
                runtime_dir=self.runtime_dir,
            ),
        )

    def start(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        start_unit(self.node, self.unit, [self.vpp_bin, "-c", self.conf_path])
        self.ready(timeout_s, **wait_kw)
        ports = self.dut.ports[:2]
        addrs = [p.ip4 for p in ports if p.ip4]
        names = [vpp_ifname(p) for p in ports]
        lines = create_lines(ports) + cli_lines(self.nf, names, addrs, self.neighbors, self.routes)
        # af_packet on the main thread defaults to interrupt mode (memif has no RX queue before its peer connects)
        lines += [
            f"set interface rx-mode {n} polling"
            for n, p in zip(names, ports)
            if ports_mod.port_kind(p) == "af_packet"
        ]
        for line in lines:
            self.cli(line)

    def alive(self) -> str:
        return unit_active(self.node, self.unit)

    def ready(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        wait_until(
            lambda: bool(self.vppctl("show version", timeout=5)),
            timeout_s,
            "VPP",
            log=lambda: unit_log(self.node, self.unit),
            **wait_kw,
        )

    def stop(self) -> None:
        stop_unit(self.node, self.unit)

    def stats(self) -> Dict[str, Any]:
        return {
            "interfaces": parse_show_interface(self.vppctl("show interface")),
            "runtime": parse_show_runtime(self.vppctl("show runtime")),
        }

    def clear_stats(self) -> None:
        self.vppctl("clear interfaces")
        self.vppctl("clear runtime")

    def version(self) -> str:
        return parse_version(self.vppctl("show version"))
