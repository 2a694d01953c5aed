"""OVS-DPDK L2 port cross-connect (seed 000 Table 1 NF 6) through ovs-vsctl/ovs-ofctl argv lists.

Example::

    ovs = OvsDpdk(node, topo.dut, cores)
    ovs.configure_commands()[0]
    # ['ovs-vsctl', '--no-wait', 'set', 'Open_vSwitch', '.', 'other_config:dpdk-init=true']
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.testpmd import dut_pcis


class OvsDpdk(LabSut):
    bridge = "dpgbr0"

    def __init__(self, node: Any, dut: Any, cores: CoreAllocation, socket_mem: str = "1024", rxq: int = 1):
        self.node, self.dut, self.cores, self.socket_mem, self.rxq = node, dut, cores, socket_mem, rxq

    def port_names(self) -> List[str]:
        return [f"dpdk{i}" for i in range(2)]

    def configure_commands(self) -> List[List[str]]:
        vs = ["ovs-vsctl", "--no-wait"]
        oc = "other_config:"
        cmds = [
            vs + ["set", "Open_vSwitch", ".", f"{oc}dpdk-init=true"],
            vs + ["set", "Open_vSwitch", ".", f"{oc}dpdk-lcore-mask={hex(1 << self.cores.main)}"],
            vs + ["set", "Open_vSwitch", ".", f"{oc}pmd-cpu-mask={self.cores.mask}"],
            vs + ["set", "Open_vSwitch", ".", f"{oc}dpdk-socket-mem={self.socket_mem}"],
        ]
        return cmds

    def start_commands(self) -> List[List[str]]:
        br = self.bridge
        cmds = [["systemctl", "restart", "openvswitch-switch"],
                ["ovs-vsctl", "--if-exists", "del-br", br],
                ["ovs-vsctl", "add-br", br, "--", "set", "bridge", br, "datapath_type=netdev"]]
        for name, pci in zip(self.port_names(), dut_pcis(self.dut)):
            cmds.append(["ovs-vsctl", "add-port", br, name, "--", "set", "Interface", name, "type=dpdk",
                         f"options:dpdk-devargs={pci}", f"options:n_rxq={self.rxq}"])
        a, b = self.port_names()
        cmds += [["ovs-ofctl", "del-flows", br],
                 ["ovs-ofctl", "add-flow", br, f"in_port={a},actions=output:{b}"],
                 ["ovs-ofctl", "add-flow", br, f"in_port={b},actions=output:{a}"]]
        return cmds

    def configure(self) -> None:
        for argv in self.configure_commands():
            self.node.run(argv)

    def start(self) -> None:
        for argv in self.start_commands():
            self.node.run(argv, timeout=60)
        self.ready()

    def ready(self) -> None:
        self.node.run(["ovs-vsctl", "--timeout=30", "wait-until", "Interface", self.port_names()[0],
                       "link_state=up"], timeout=40)

    def stop(self) -> None:
        self.node.run(["ovs-vsctl", "--if-exists", "del-br", self.bridge], check=False)

    def stats(self) -> Dict[str, Any]:
        text = self.node.run(["ovs-appctl", "dpif-netdev/pmd-stats-show"]).stdout
        return {"pmd_stats": text, "ports": parse_dump_ports(self.node.run(["ovs-ofctl", "dump-ports", self.bridge]).stdout)}

    def version(self) -> str:
        out = self.node.run(["ovs-vswitchd", "--version"]).stdout
        m = re.search(r"\(Open vSwitch\)\s+(\S+)", out)
        return m.group(1) if m else out.strip()


def parse_dump_ports(text: str) -> Dict[str, Dict[str, int]]:
    """``ovs-ofctl dump-ports`` → {port: {'rx_pkts', 'rx_drop', 'tx_pkts', 'tx_drop', ...}}."""
    out: Dict[str, Dict[str, int]] = {}
    port = None
    for line in text.splitlines():
        m = re.match(r"\s*port\s+\"?([^:\"]+)\"?:\s*(rx.*)", line)
        if m:
            port = m.group(1).strip()
            out[port] = {}
            line = m.group(2)
        if port is None:
            continue
        kind = "rx" if line.strip().startswith("rx") else "tx" if line.strip().startswith("tx") else None
        if kind is None:
            continue
        for key, val in re.findall(r"(\w+)=(\d+)", line):
            out[port][f"{kind}_{key}"] = int(val)
    return out
