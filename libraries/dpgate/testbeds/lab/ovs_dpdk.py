"""OVS-DPDK L2 port cross-connect (seed 000 Table 1 NF 6) through ovs-vsctl/ovs-ofctl argv lists.

Two ways to run it:

* the distribution's service (a physical lab DUT): ``systemctl restart openvswitch-switch``.
  Debian's openvswitch-switch-dpdk registers ``ovs-vswitchd-dpdk`` as an alternative of
  priority 50 < 100, so a restart runs the non-DPDK binary until the alternative is set
  (audit item 18): :meth:`OvsDpdk.start` sets it when the DPDK binary exists, and checks
  ``dpdk_initialized`` after the restart either way. ``dpdk-socket-mem`` lists one value
  per NUMA node up to the ports' node (``"0,1024"`` for node 1: a single ``"1024"`` covers
  node 0 only, audit item 19); :meth:`stop` turns dpdk-init off and restarts the service so
  the hugepages are released.
* a private instance (``state_dir`` given: the DUT namespace of a lab on one machine, a
  shared host): ``ovsdb-server`` with its own database and ``ovs-vswitchd-dpdk`` started by
  path, all sockets and files under ``state_dir``; without NICs or hugepages DPDK gets
  ``dpdk-extra="--no-huge -m <MB> --no-pci --file-prefix <unit>"`` and ports are vdevs
  (``dpdk-devargs=net_af_packet0,iface=...`` or ``net_memif...``).

Example::

    ovs = OvsDpdk(node, topo.dut, cores)
    ovs.configure_commands()[0]
    # ['ovs-vsctl', '--no-wait', 'set', 'Open_vSwitch', '.', 'other_config:dpdk-init=true']
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

from dpgate.model.errors import SutError
from dpgate.testbeds.lab import ports as ports_mod
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.service import start_unit, stop_unit, unit_active, unit_log, wait_until
from dpgate.testbeds.lab.testpmd import dut_ports

DPDK_VSWITCHD = "/usr/lib/openvswitch-switch-dpdk/ovs-vswitchd-dpdk"
SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"


def socket_mem(numa: int, mb: int = 1024) -> str:
    """``dpdk-socket-mem`` with ``mb`` on NUMA node ``numa`` and 0 on the nodes before it.

    >>> socket_mem(0), socket_mem(1)
    ('1024', '0,1024')
    """
    return ",".join(str(mb if i == numa else 0) for i in range(numa + 1))


def devargs(port: Any, index: int) -> str:
    """``options:dpdk-devargs`` value: the PCI address or the vdev string."""
    if ports_mod.port_kind(port) == "pci":
        return port.pci
    return ports_mod.vdev(port, index)


class OvsDpdk(LabSut):
    bridge = "dpgbr0"
    unit = "dpgate-ovs"

    def __init__(
        self,
        node: Any,
        dut: Any,
        cores: CoreAllocation,
        socket_mem: str = "",
        rxq: int = 1,
        state_dir: str = "",
        no_huge_mb: int = 1024,
    ):
        self.node, self.dut, self.cores, self.rxq = node, dut, cores, rxq
        numa = dut.numa if getattr(dut, "numa", None) is not None else cores.numa
        self.socket_mem = socket_mem or globals()["socket_mem"](numa)
        self.state_dir, self.no_huge_mb = state_dir, no_huge_mb

    # -- argv builders --------------------------------------------------------------------
    def _vsctl(self) -> List[str]:
        return ["ovs-vsctl"] + ([f"--db=unix:{self.state_dir}/db.sock"] if self.state_dir else [])

    def _ofctl_target(self) -> str:
        return f"unix:{self.state_dir}/{self.bridge}.mgmt" if self.state_dir else self.bridge

    def port_names(self) -> List[str]:
        return [f"dpdk{i}" for i in range(2)]

    def configure_commands(self) -> List[List[str]]:
        vs = self._vsctl() + ["--no-wait"]
        oc = "other_config:"
        cmds = [
            vs + ["set", "Open_vSwitch", ".", f"{oc}dpdk-init=true"],
            vs + ["set", "Open_vSwitch", ".", f"{oc}dpdk-lcore-mask={hex(1 << self.cores.main)}"],
            vs + ["set", "Open_vSwitch", ".", f"{oc}pmd-cpu-mask={self.cores.mask}"],
        ]
        if ports_mod.virtual_only(dut_ports(self.dut)):
            cmds.append(
                vs
                + [
                    "set",
                    "Open_vSwitch",
                    ".",
                    f"{oc}dpdk-extra=--no-huge --legacy-mem -m {self.no_huge_mb} --no-pci --file-prefix {self.unit}",
                ]
            )
        else:
            cmds.append(vs + ["set", "Open_vSwitch", ".", f"{oc}dpdk-socket-mem={self.socket_mem}"])
        return cmds

    def start_commands(self) -> List[List[str]]:
        br, vs = self.bridge, self._vsctl()
        cmds = [] if self.state_dir else [["systemctl", "restart", "openvswitch-switch"]]
        cmds += [
            vs + ["--if-exists", "del-br", br],
            vs + ["add-br", br, "--", "set", "bridge", br, "datapath_type=netdev"],
        ]
        counters: Dict[str, int] = {}
        for name, port in zip(self.port_names(), dut_ports(self.dut)):
            kind = ports_mod.port_kind(port)
            n = counters.get(kind, 0)
            counters[kind] = n + 1
            cmds.append(
                vs
                + [
                    "add-port",
                    br,
                    name,
                    "--",
                    "set",
                    "Interface",
                    name,
                    "type=dpdk",
                    f"options:dpdk-devargs={devargs(port, n)}",
                    f"options:n_rxq={self.rxq}",
                ]
            )
        a, b = self.port_names()
        t = self._ofctl_target()
        cmds += [
            ["ovs-ofctl", "del-flows", t],
            ["ovs-ofctl", "add-flow", t, f"in_port={a},actions=output:{b}"],
            ["ovs-ofctl", "add-flow", t, f"in_port={b},actions=output:{a}"],
        ]
        return cmds

    # -- lifecycle ----------------------------------------------------------------------
    def _start_private(self) -> None:
        d, run = self.state_dir, self.node.run
        run(["mkdir", "-p", d], timeout=30)
        run(["rm", "-f", f"{d}/conf.db", f"{d}/db.sock"], check=False, timeout=30)
        run(["ovsdb-tool", "create", f"{d}/conf.db", SCHEMA], timeout=30)
        env = ["/usr/bin/env", f"OVS_RUNDIR={d}", f"OVS_DBDIR={d}", f"OVS_LOGDIR={d}"]
        start_unit(
            self.node,
            f"{self.unit}-db",
            env + ["ovsdb-server", f"{d}/conf.db", f"--remote=punix:{d}/db.sock", f"--unixctl={d}/ovsdb.ctl"],
        )
        wait_until(
            lambda: run(["test", "-S", f"{d}/db.sock"], check=False, timeout=10).returncode == 0,
            30,
            "ovsdb-server",
            log=lambda: unit_log(self.node, f"{self.unit}-db"),
        )
        run(self._vsctl() + ["--no-wait", "init"], timeout=30)

    def configure(self) -> None:
        if self.state_dir:
            self._start_private()
        for argv in self.configure_commands():
            self.node.run(argv)

    def start(self) -> None:
        if self.state_dir:
            d = self.state_dir
            start_unit(
                self.node,
                self.unit,
                [
                    "/usr/bin/env",
                    f"OVS_RUNDIR={d}",
                    f"OVS_DBDIR={d}",
                    f"OVS_LOGDIR={d}",
                    DPDK_VSWITCHD,
                    f"unix:{d}/db.sock",
                    f"--unixctl={d}/vswitchd.ctl",
                ],
            )
        else:
            self.node.run(
                ["update-alternatives", "--set", "ovs-vswitchd", DPDK_VSWITCHD], check=False, timeout=30
            )
        cmds = self.start_commands()
        if not self.state_dir:
            self.node.run(cmds.pop(0), timeout=60)
        wait_until(self._dpdk_initialized, 60, "OVS-DPDK (dpdk_initialized)", log=self._log)
        for argv in cmds:
            self.node.run(argv, timeout=60)
        self.ready()

    def _dpdk_initialized(self) -> bool:
        out = self.node.run(
            self._vsctl() + ["get", "Open_vSwitch", ".", "dpdk_initialized"], check=False, timeout=15
        ).stdout.strip()
        if out == "false" and not self.state_dir and "dpdk" not in self.version().lower():
            raise SutError(
                "OVS runs without DPDK (dpdk_initialized=false): install openvswitch-switch-dpdk and "
                f"update-alternatives --set ovs-vswitchd {DPDK_VSWITCHD}"
            )
        return out == "true"

    def _log(self) -> str:
        return unit_log(self.node, self.unit) if self.state_dir else ""

    def ready(self) -> None:
        self.node.run(
            self._vsctl()
            + ["--timeout=30", "wait-until", "Interface", self.port_names()[0], "link_state=up"],
            timeout=40,
        )

    def alive(self) -> str:
        if self.state_dir:
            return unit_active(self.node, self.unit)
        return (
            self.node.run(
                ["systemctl", "is-active", "openvswitch-switch"], check=False, timeout=15
            ).stdout.strip()
            or "no state"
        )

    def stop(self) -> None:
        """Remove the bridge, turn DPDK off and release its memory (restart / stop the daemons)."""
        vs = self._vsctl()
        if self.state_dir:
            stop_unit(self.node, self.unit)
            stop_unit(self.node, f"{self.unit}-db")
            return
        self.node.run(vs + ["--if-exists", "del-br", self.bridge], check=False)
        self.node.run(
            vs + ["--no-wait", "set", "Open_vSwitch", ".", "other_config:dpdk-init=false"], check=False
        )
        self.node.run(["systemctl", "restart", "openvswitch-switch"], check=False, timeout=60)

    def stats(self) -> Dict[str, Any]:
        appctl = ["ovs-appctl"] + ([f"--target={self.state_dir}/vswitchd.ctl"] if self.state_dir else [])
        text = self.node.run(appctl + ["dpif-netdev/pmd-stats-show"]).stdout
        return {
            "pmd_stats": text,
            "ports": parse_dump_ports(
                self.node.run(["ovs-ofctl", "dump-ports", self._ofctl_target()]).stdout
            ),
        }

    def version(self) -> str:
        binary = DPDK_VSWITCHD if self.state_dir else "ovs-vswitchd"
        out = self.node.run([binary, "--version"]).stdout
        m = re.search(r"\(Open vSwitch\)\s+(\S+)", out)
        dpdk = re.search(r"DPDK\s+(\S+)", out)
        ver = m.group(1) if m else out.strip()
        return f"{ver} (DPDK {dpdk.group(1)})" if m and dpdk else ver


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
