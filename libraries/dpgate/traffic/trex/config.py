"""TRex config file from the topology's TG ports (see ``dpgate.traffic.trex.server`` for the
whole lifecycle): one ``interfaces`` entry per TG port in TRex port order, ``low_end`` with
only virtual ports, ``port_info`` MACs, a per-instance DPDK file ``prefix``.

Example::

    >>> p = TrexPort("af_packet", "02:00:00:00:00:01", "02:00:00:00:00:02", iface="tg0")
    >>> p.interface_arg(0)
    '--vdev=net_af_packet0,iface=tg0,blocksz=4096,framesz=2048,framecnt=8192,qdisc_bypass=1'
    >>> print(render_config([p], core=1).splitlines()[4])
      low_end: true
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional, Sequence

import yaml

from dpgate.model.errors import ConfigError

AF_PACKET_RING = "blocksz=4096,framesz=2048,framecnt=8192,qdisc_bypass=1"
PORT_KINDS = ("af_packet", "memif", "pci")


@dataclass(frozen=True)
class TrexPort:
    """One TRex port: its kind and where it is; MACs for the config's ``port_info``."""

    kind: str
    src_mac: str
    dest_mac: str
    iface: Optional[str] = None
    pci: Optional[str] = None
    memif_socket: Optional[str] = None
    memif_id: int = 0

    def interface_arg(self, index: int) -> str:
        if self.kind == "af_packet":
            return f"--vdev=net_af_packet{index},iface={self.iface},{AF_PACKET_RING}"
        if self.kind == "memif":
            return f"--vdev=net_memif{index},role=server,id={self.memif_id},socket-abstract=no,socket={self.memif_socket}"
        if self.kind == "pci":
            return str(self.pci)
        raise ConfigError(
            f"TRex port kind must be one of {', '.join(PORT_KINDS)}, got {self.kind!r}", path="kind"
        )

    @property
    def virtual(self) -> bool:
        return self.kind != "pci"


def _port_kind(iface: Any) -> str:
    kind = getattr(iface, "kind", None)
    if kind:
        return str(kind)
    if getattr(iface, "memif", None):
        return "memif"
    return "pci" if getattr(iface, "pci", None) else "af_packet"


def _memif(iface: Any, field: str, default: Any = None) -> Any:
    m = getattr(iface, "memif", None)
    if m is None:
        return default
    return m.get(field, default) if isinstance(m, dict) else getattr(m, field, default)


def ports_from_topology(topo: Any) -> List[TrexPort]:
    """The TG ports of a topology in TRex port order (sorted interface keys), each with the MAC
    of the DUT interface on the same link as ``dest_mac`` (the other TG port without a DUT)."""
    tg_ports = topo.tg.ports
    dut_by_link = {}
    for node in topo.nodes.values():
        if node.type == "DUT":
            dut_by_link.update({i.link: i for i in node.ports})
    out = []
    for n, iface in enumerate(tg_ports):
        peer = dut_by_link.get(iface.link) or tg_ports[(n + 1) % len(tg_ports)]
        kind = _port_kind(iface)
        if kind == "memif" and _memif(iface, "role", "server") != "server":
            raise ConfigError(
                "TRex memif ports must be role: server (TRex creates the socket)",
                path=f"nodes.TG.interfaces.port{n}.memif.role",
            )
        out.append(
            TrexPort(
                kind=kind,
                src_mac=iface.mac,
                dest_mac=peer.mac,
                iface=iface.name,
                pci=getattr(iface, "pci", None),
                memif_socket=_memif(iface, "socket"),
                memif_id=int(_memif(iface, "id", n) or 0),
            )
        )
    return out


def render_config(
    ports: Sequence[TrexPort], core: int, low_end: Optional[bool] = None, file_prefix: Optional[str] = None
) -> str:
    """The TRex config file (YAML) for these ports; ``low_end`` defaults to "all ports virtual".
    ``file_prefix``: TRex's ``prefix`` (DPDK ``--file-prefix``): without it every TRex and DPDK
    app on the machine shares /var/run/dpdk/rte and the second one fails "Cannot create lock"."""
    if not ports:
        raise ConfigError("TRex needs at least one TG port", path="nodes.TG.interfaces")
    low_end = all(p.virtual for p in ports) if low_end is None else low_end
    cfg: dict = {
        "version": 2,
        "port_limit": len(ports),
        "interfaces": [p.interface_arg(i) for i, p in enumerate(ports)],
    }
    if file_prefix:
        cfg["prefix"] = file_prefix
    if low_end:
        cfg.update({"low_end": True, "low_end_core": int(core)})
    cfg["port_info"] = [{"src_mac": p.src_mac, "dest_mac": p.dest_mac} for p in ports]
    return yaml.safe_dump([cfg], sort_keys=False, width=1000)
