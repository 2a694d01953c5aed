"""The lab NF catalogue: which driver, traffic and test-name part each seed NF uses.

Seed 000 Table 1 NFs 2-7, named as the suites in ``suites/lab/`` and the keys of
``variables/lab-*.yaml``:

==================  =========================================  =======  ===============================
NF                  what                                       traffic  case name (64B, 1 core, HT on)
==================  =========================================  =======  ===============================
testpmd-io          DPDK testpmd io: L2 loop, point-to-point   l2       64B-2t1c-eth-l2xcbase-testpmd-ndrpdr
l3fwd-ip4           DPDK l3fwd LPM IPv4 forwarding             ip4      64B-2t1c-ethip4-ip4base-l3fwd-ndrpdr
vpp-l2patch         VPP L2 port patch                          l2       64B-2t1c-eth-l2patch-ndrpdr
vpp-l2bd            VPP MAC learning and switching             l2       64B-2t1c-eth-l2bdbasemaclrn-ndrpdr
ovsdpdk-xconnect    OVS-DPDK L2 port cross-connect             l2       64B-2t1c-eth-l2xcbase-ovsdpdk-ndrpdr
vpp-ip4             VPP IPv4 routing, one /32 per flow         ip4      64B-2t1c-ethip4-ip4base-ndrpdr
==================  =========================================  =======  ===============================

Example::

    sut = make_sut("vpp-ip4", node, topo, cores)     # a dpgate.testbeds.lab.vpp.Vpp with /32 routes
    sut.configure(); sut.start(); sut.version()
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.traffic.profiles import DEFAULT_FLOWS, IP_DIR0_DST, IP_DIR0_SRC


@dataclass(frozen=True)
class LabNf:
    name: str
    driver: str  # testpmd, l3fwd, vpp, ovs
    traffic: str  # l2 or ip4 (dpgate.traffic.profiles kind)
    case: str  # test-name part between the core tag and "-ndrpdr"
    vpp_nf: Optional[str] = None
    doc: str = ""


LAB_NFS: Dict[str, LabNf] = {
    nf.name: nf
    for nf in (
        LabNf(
            "testpmd-io", "testpmd", "l2", "eth-l2xcbase-testpmd", doc="DPDK testpmd io forwarding (L2 loop)"
        ),
        LabNf("l3fwd-ip4", "l3fwd", "ip4", "ethip4-ip4base-l3fwd", doc="DPDK l3fwd LPM IPv4 forwarding"),
        LabNf("vpp-l2patch", "vpp", "l2", "eth-l2patch", vpp_nf="l2patch", doc="VPP L2 port patch"),
        LabNf(
            "vpp-l2bd", "vpp", "l2", "eth-l2bdbasemaclrn", vpp_nf="l2bd", doc="VPP MAC learning and switching"
        ),
        LabNf("ovsdpdk-xconnect", "ovs", "l2", "eth-l2xcbase-ovsdpdk", doc="OVS-DPDK L2 port cross-connect"),
        LabNf("vpp-ip4", "vpp", "ip4", "ethip4-ip4base", vpp_nf="ip4", doc="VPP IPv4 routing, /32 per flow"),
    )
}


def lab_nf(name: str) -> LabNf:
    if name not in LAB_NFS:
        raise ConfigError(f"unknown lab NF {name!r}: expected one of {', '.join(LAB_NFS)}", path="nf")
    return LAB_NFS[name]


def case_name(nf: str, frame_size: str, cores: CoreAllocation) -> str:
    """CSIT-style test name, e.g. ``IMIX-4t2c-eth-l2patch-ndrpdr``."""
    return f"{frame_size}-{cores.tag.lower()}-{lab_nf(nf).case}-ndrpdr"


def rx_queues(cores: CoreAllocation, ports: int = 2) -> int:
    """RX queues per port so every worker thread polls one queue (at least one per port)."""
    return max(1, len(cores.workers) // ports)


def l3fwd_routes() -> list:
    """LPM routes matching the ip4 traffic profile: direction 0 sends to 198.19.x.y (out port 1),
    direction 1 to 198.18.x.y (out port 0)."""
    return [(_net16(IP_DIR0_DST), 1), (_net16(IP_DIR0_SRC), 0)]


def _net16(ip: str) -> str:
    a, b = ip.split(".")[:2]
    return f"{a}.{b}.0.0/16"


def make_sut(
    nf: str,
    node: Any,
    topology: Any,
    cores: CoreAllocation,
    flows: Optional[int] = None,
    options: Optional[Dict[str, Any]] = None,
) -> LabSut:
    """The lab SUT driver of ``nf`` on ``node``, pinned to ``cores``.

    ``options``: driver keyword arguments beyond the catalogue's (testpmd's ``mode``,
    ``eth_peers``, ``noise_reads``, ``interactive``: the embedded testbed's testpmd SUTs;
    testpmd's and l3fwd's ``binary``: a build to run instead of the installed one).

    A lab on one machine (the DUT has a ``namespace``) keeps every file of the SUT under the
    topology's run dir, names units after the prefix, and takes VPP and l3fwd from
    ``dpgate.testbeds.lab.vendor`` (DPGATE_VPP / DPGATE_L3FWD or what .ci/install prepared).
    """
    spec = lab_nf(nf)
    dut = topology.dut
    q = rx_queues(cores)
    local = bool(getattr(dut, "namespace", None))
    state = f"{topology.run_dir}/dut" if local else ""
    sut = _make(spec, node, topology, cores, flows, q, state, dict(options or {}))
    if local:
        sut.unit = f"{topology.prefix}{sut.unit}"
    return sut


def _make(
    spec: LabNf,
    node: Any,
    topology: Any,
    cores: CoreAllocation,
    flows: Optional[int],
    q: int,
    state: str,
    options: Dict[str, Any],
):
    dut = topology.dut
    if spec.driver == "testpmd":
        from dpgate.testbeds.lab.testpmd import Testpmd

        return Testpmd(node, dut, cores, rxq=q, **options)
    binary = options.pop("binary", "") if spec.driver == "l3fwd" else ""
    if options:
        raise ConfigError(f"lab NF {spec.name} takes no driver options, got {sorted(options)}", path="nf")
    if spec.driver == "l3fwd":
        from dpgate.testbeds.lab.l3fwd import L3fwd

        tg_macs = {i: tg.mac for i, (tg, _) in enumerate(topology.pairs()[:2])}
        if state:
            from dpgate.testbeds.lab.vendor import require

            return L3fwd(
                node,
                dut,
                cores,
                routes=l3fwd_routes(),
                eth_dest=tg_macs,
                rule_path=f"{state}/l3fwd.rules",
                binary=binary or require("l3fwd"),
            )
        return L3fwd(node, dut, cores, routes=l3fwd_routes(), eth_dest=tg_macs, binary=binary)
    if spec.driver == "vpp":
        from dpgate.testbeds.lab.vpp import Vpp, ip4_routing, l2_static_macs

        neighbors: Sequence[Any] = ()
        routes: Sequence[Any] = ()
        if spec.vpp_nf == "ip4":
            neighbors, routes = ip4_routing(topology, flows or DEFAULT_FLOWS["ip4"])
        elif spec.vpp_nf == "l2bd":
            neighbors = l2_static_macs(topology)
        kw: Dict[str, Any] = {}
        if state:
            from dpgate.testbeds.lab.vendor import require

            vdir = require("VPP")
            kw = dict(
                conf_path=f"{state}/vpp/startup.conf",
                cli_sock=f"{state}/vpp/cli.sock",
                runtime_dir=f"{state}/vpp",
                log=f"{state}/vpp/vpp.log",
                vpp_bin=f"{vdir}/bin/vpp",
                vppctl_bin=f"{vdir}/bin/vppctl",
            )
        return Vpp(
            node,
            dut,
            cores,
            nf=spec.vpp_nf or "l2patch",
            rx_queues=q,
            neighbors=neighbors,
            routes=routes,
            **kw,
        )
    from dpgate.testbeds.lab.ovs_dpdk import OvsDpdk

    return OvsDpdk(node, dut, cores, rxq=q, state_dir=f"{state}/ovs" if state else "")
