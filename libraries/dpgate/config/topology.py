"""Topology files: typed model, loader and validation.

One schema describes the embedded testbed (namespaces on this machine) and lab testbeds
(a TRex host and DUTs reached over SSH). See ``topologies/embedded.yaml`` and
``topologies/lab-2node.example.yaml``.

Example::

    topo = load_topology("topologies/embedded.yaml", prefix="ci7-")
    topo.tg.namespace        # 'ci7-tg'
    topo.dut.interfaces["port0"].mac
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field, replace
from typing import Dict, List, Literal, Optional, Tuple

from dpgate.config import schema
from dpgate.config.schema import non_negative, positive
from dpgate.config.units import parse_bps

#: RFC 2544 benchmarking range: the only addresses embedded traffic may use.
BENCH_NET = ipaddress.IPv4Network("198.18.0.0/15")
_MAC = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")
_IFNAME = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
_PREFIX = re.compile(r"^[a-z0-9][a-z0-9-]{0,9}$")
_PCI = re.compile(r"^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")


def _mac(v: str) -> Optional[str]:
    return None if _MAC.match(v) else "expected a MAC address like 02:00:00:00:00:01"


def _ifname(v: str) -> Optional[str]:
    return None if _IFNAME.match(v) else "expected an interface name of 1..15 characters [A-Za-z0-9_.-]"


def _ip4_iface(v: str) -> Optional[str]:
    try:
        if "/" not in v:
            raise ValueError(v)
        ipaddress.IPv4Interface(v)
    except ValueError:
        return "expected an IPv4 address with prefix length, like 198.18.0.1/24"
    return None


def _pci(v: str) -> Optional[str]:
    return None if _PCI.match(v) else "expected a PCI address like 0000:18:00.0"


def _socket_path(v: str) -> Optional[str]:
    return (
        None if v.startswith("/") and len(v) < 108 else "expected an absolute socket path of < 108 characters"
    )


@dataclass(frozen=True)
class Memif:
    """A memif port: the socket (a file path both ends see), the interface id on it, and
    which end creates the socket (``server``) or connects to it (``client``)."""

    socket: str = field(
        metadata={"check": _socket_path, "doc": "socket path, like /run/dpgate/memif/link1.sock"}
    )
    id: int = field(default=0, metadata={"check": non_negative})
    role: Literal["server", "client"] = "client"


#: Port kinds: a PCI device (physical lab), af_packet on the Linux interface ``name``, or memif.
PORT_KINDS = ("pci", "af_packet", "memif")


@dataclass(frozen=True)
class Interface:
    """One port of a node.

    Lab ports are PCI devices (``pci:``) or virtual: ``kind: af_packet`` (on the Linux
    interface ``name``) or ``kind: memif`` with ``memif: {socket, id, role}``.
    """

    name: str = field(metadata={"check": _ifname, "doc": "interface name (e.g. tg0)"})
    mac: str = field(metadata={"check": _mac, "doc": "MAC address"})
    link: str = field(metadata={"doc": "link name; the two ends of a link share it"})
    ip4: Optional[str] = field(default=None, metadata={"check": _ip4_iface})
    # lab-only
    pci: Optional[str] = field(default=None, metadata={"check": _pci})
    speed: Optional[str] = None  # e.g. "10Gbps"
    numa: Optional[int] = field(default=None, metadata={"check": non_negative})
    pps_limit: Optional[float] = field(default=None, metadata={"check": positive})
    driver: Optional[str] = None
    kind: Optional[Literal["pci", "af_packet", "memif"]] = field(
        default=None, metadata={"doc": "pci (default when pci is set), af_packet or memif"}
    )
    memif: Optional[Memif] = None

    def validate(self):
        kind = self.port_kind
        if kind == "memif" and self.memif is None:
            return ("memif", "kind memif needs memif: {socket: /path/to/sock, id: 0, role: client}")
        if self.memif is not None and kind != "memif":
            return ("memif", "memif settings need kind: memif")
        if kind == "pci" and not self.pci:
            return ("pci", "kind pci needs a PCI address, like pci: 0000:18:00.0")
        if kind in ("af_packet", "memif") and self.pci:
            return ("pci", f"a {kind} port has no PCI address: remove pci or use kind: pci")
        return None

    @property
    def port_kind(self) -> Optional[str]:
        """``pci``, ``af_packet``, ``memif``, or None (no PCI address and no kind given)."""
        return self.kind or ("pci" if self.pci else None)

    @property
    def address(self) -> Optional[ipaddress.IPv4Interface]:
        return ipaddress.ip_interface(self.ip4) if self.ip4 else None  # type: ignore[return-value]

    @property
    def link_bps(self) -> Optional[float]:

        return parse_bps(self.speed) if self.speed else None


@dataclass(frozen=True)
class CpuFreq:
    """Where the SUT core frequency for CPP comes from (nominal, turbo off, as in the papers)."""

    source: Literal["declared", "detected"] = "detected"
    hz: Optional[float] = field(default=None, metadata={"check": positive})

    def validate(self):
        if self.source == "declared" and self.hz is None:
            return ("hz", "source is 'declared' but hz is missing: add e.g. hz: 2.5e9")
        return None


@dataclass(frozen=True)
class Ssh:
    """How to reach a lab node. Secrets come only from the environment or key files."""

    host: str
    user: str = "root"
    port: int = field(default=22, metadata={"check": positive})
    key_file: Optional[str] = None
    password_env: Optional[str] = field(
        default=None, metadata={"doc": "name of the environment variable holding the password"}
    )
    sudo: bool = False
    known_hosts: Optional[str] = field(
        default=None, metadata={"doc": "known_hosts file with the host's key (else ~/.ssh/known_hosts)"}
    )
    timeout_s: float = field(default=30.0, metadata={"check": positive})

    def validate(self):
        return None


@dataclass(frozen=True)
class Trex:
    """TRex server on the TG host (lab)."""

    server: str
    sync_port: int = 4501
    async_port: int = 4500
    client_path: Optional[str] = field(
        default=None,
        metadata={"doc": "path to <trex>/scripts/automation/trex_control_plane/interactive"},
    )
    ports: List[int] = field(default_factory=lambda: [0, 1])


@dataclass(frozen=True)
class NodeSpec:
    """One node of a topology (TG or DUT) as the topology file declares it."""

    type: Literal["TG", "DUT"]
    interfaces: Dict[str, Interface]
    cpus: List[int] = field(
        default_factory=list,
        metadata={"check": non_negative, "doc": "CPUs the generator (TG) or SUT (DUT) runs on"},
    )
    namespace: Optional[str] = field(default=None, metadata={"doc": "embedded: netns name, {prefix} expands"})
    #: embedded TG: "auto" (dpgen when built, else tcpreplay), "dpgen" or "tcpreplay" (a
    #: command line's --generator wins over it); lab TG: "trex", or "tcpreplay"
    generator: Optional[Literal["auto", "dpgen", "tcpreplay", "trex"]] = None
    cpu_freq: CpuFreq = field(default_factory=CpuFreq)
    ssh: Optional[Ssh] = None
    trex: Optional[Trex] = None
    main_cpu: Optional[int] = field(default=None, metadata={"check": non_negative})
    numa: Optional[int] = field(default=None, metadata={"check": non_negative})
    arch: Optional[str] = None

    def port(self, index: int) -> Interface:
        keys = sorted(self.interfaces)
        return self.interfaces[keys[index]]

    @property
    def ports(self) -> List[Interface]:
        return [self.interfaces[k] for k in sorted(self.interfaces)]


@dataclass(frozen=True)
class Topology:
    name: str
    kind: Literal["embedded", "lab-2node", "lab-3node"]
    nodes: Dict[str, NodeSpec]
    prefix: str = field(
        default="dpg0-",
        metadata={
            "check": lambda v: (
                None
                if _PREFIX.match(v)
                else "expected 1..10 characters [a-z0-9-] starting with a letter or digit"
            )
        },
    )
    source: str = ""

    @property
    def run_dir(self) -> str:
        """Where a lab on one machine keeps keys, logs and sockets: ``/tmp/dpgate-<prefix>``."""
        return run_dir_for(self.prefix)

    def validate(self):
        tgs = [n for n, v in self.nodes.items() if v.type == "TG"]
        duts = [n for n, v in self.nodes.items() if v.type == "DUT"]
        if len(tgs) != 1:
            return ("nodes", f"expected exactly one node of type TG, found {len(tgs)}")
        if not duts:
            return ("nodes", "expected at least one node of type DUT")
        # Every link must have exactly two ends.
        ends: Dict[str, List[str]] = {}
        for nname, node in self.nodes.items():
            for pname, iface in node.interfaces.items():
                ends.setdefault(iface.link, []).append(f"nodes.{nname}.interfaces.{pname}")
        for link, where in sorted(ends.items()):
            if len(where) != 2:
                return (
                    where[0] + ".link",
                    f"link {link!r} must join exactly two interfaces, found {len(where)}",
                )
        for nname, node in self.nodes.items():
            for pname, iface in node.interfaces.items():
                p = f"nodes.{nname}.interfaces.{pname}"
                if self.kind == "embedded" and iface.ip4:
                    addr = ipaddress.ip_interface(iface.ip4)
                    if not isinstance(addr, ipaddress.IPv4Interface) or not addr.network.subnet_of(BENCH_NET):
                        return (
                            p + ".ip4",
                            f"embedded traffic may use only {BENCH_NET} (RFC 2544), got {iface.ip4!r}",
                        )
            if self.kind == "embedded":
                if not node.namespace:
                    return (f"nodes.{nname}.namespace", "embedded nodes need a namespace, like '{prefix}tg'")
                if not node.cpus:
                    return (
                        f"nodes.{nname}.cpus",
                        "embedded nodes need cpus: [N] (generator and SUT on different cores)",
                    )
            else:
                if node.type == "DUT" and node.ssh is None:
                    return (f"nodes.{nname}.ssh", "lab DUT nodes need ssh: {host: ..., user: ...}")
                if (
                    node.type == "TG"
                    and node.trex is None
                    and node.generator not in ("tcpreplay", "dpgen", "auto")
                ):
                    return (f"nodes.{nname}.trex", "lab TG nodes need trex: {server: ...}")
        if self.kind == "embedded":
            tg_cpus = set(self.tg.cpus)
            dut_cpus = set(self.dut.cpus)
            if tg_cpus & dut_cpus:
                return (
                    f"nodes.{duts[0]}.cpus",
                    f"generator and SUT must use different CPUs, both use {sorted(tg_cpus & dut_cpus)}",
                )
        return None

    @property
    def tg(self) -> NodeSpec:
        return next(n for n in self.nodes.values() if n.type == "TG")

    @property
    def dut(self) -> NodeSpec:
        return next(self.nodes[k] for k in sorted(self.nodes) if self.nodes[k].type == "DUT")

    def pairs(self) -> List[Tuple[Interface, Interface]]:
        """(TG port, DUT port) pairs, in TG port order."""
        dut_by_link = {i.link: i for i in self.dut.ports}
        return [(t, dut_by_link[t.link]) for t in self.tg.ports if t.link in dut_by_link]


def run_dir_for(prefix: str) -> str:
    """``/tmp/dpgate-<prefix without its trailing dash>``.

    >>> run_dir_for("lb-")
    '/tmp/dpgate-lb'
    """
    return "/tmp/dpgate-" + prefix.rstrip("-")


def _expand_strings(value: object, tokens: Dict[str, str]) -> object:
    """``{prefix}`` and ``{run_dir}`` replaced in every string of the raw file data."""
    if isinstance(value, str):
        for k, v in tokens.items():
            value = value.replace("{" + k + "}", v)
        return value
    if isinstance(value, dict):
        return {k: _expand_strings(v, tokens) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand_strings(v, tokens) for v in value]
    return value


def _expand(topo: Topology) -> Topology:
    nodes = {}
    for name, node in topo.nodes.items():
        ns = node.namespace.replace("{prefix}", topo.prefix) if node.namespace else None
        nodes[name] = replace(node, namespace=ns)
    return replace(topo, nodes=nodes)


def load_topology(path: str, prefix: Optional[str] = None) -> Topology:
    """Load and validate a topology file.

    ``prefix`` (or the DPGATE_PREFIX environment variable) overrides the file's prefix,
    so two testbeds can run side by side (pabot pools).
    """
    data = schema.read_yaml(path, "pass --topology with an existing file, e.g. topologies/embedded.yaml")
    return topology_from_data(data, source=path, prefix=prefix)


def topology_from_data(data: object, source: str = "<data>", prefix: Optional[str] = None) -> Topology:
    if isinstance(data, dict):
        data = dict(data)
        override = prefix or os.environ.get("DPGATE_PREFIX")
        if override:
            data["prefix"] = override
        data.setdefault("source", source)
        prefix_now = data.get("prefix", "dpg0-")
        if isinstance(prefix_now, str) and _PREFIX.match(prefix_now) and data.get("kind") != "embedded":
            # Lab files may name interfaces and paths after the prefix (a lab on one machine).
            nodes = _expand_strings(
                data.get("nodes"), {"prefix": prefix_now, "run_dir": run_dir_for(prefix_now)}
            )
            data["nodes"] = nodes
    topo = schema.load(Topology, data, source=source)
    return _expand(topo)
