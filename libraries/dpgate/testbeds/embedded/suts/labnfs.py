"""Embedded SUTs run through the lab drivers: DPDK l3fwd (IPv4 LPM) and OVS-DPDK L2 cross-connect
(here), DPDK testpmd io/mac (``dpgate.testbeds.embedded.suts.testpmd``).

The embedded testbed's SUT namespace is a DUT whose ports are af_packet on its veths: the
same ``dpgate.testbeds.lab`` drivers that run on a lab DUT (``dpgate.testbeds.lab.l3fwd.L3fwd``,
``dpgate.testbeds.lab.ovs_dpdk.OvsDpdk``) run here through a ``LocalNode`` in that namespace, with
``start-stop-daemon`` (never a systemd unit: a unit would run outside the namespace), or as
our child holding its stdin (``service_mode = "console"``, ``dpgate.testbeds.lab.console``:
testpmd, asked for its counters per trial), the SUT's one CPU as DPDK main and worker lcore,
and every file under the testbed's work dir.
Debian packages only: l3fwd is built by ``.ci/install`` from dpdk-doc's examples, OVS-DPDK is
``openvswitch-switch-dpdk`` (a private ovsdb-server/ovs-vswitchd-dpdk, never the host's service).

Example::

    dpgate trial --sut l3fwd-ip4 --rate 50kpps
"""

from __future__ import annotations

import dataclasses
import os
import types
from typing import Any, Dict, Optional

from dpgate.exec.remote import LocalNode
from dpgate.model.errors import SutError
from dpgate.testbeds.embedded.suts.base import EmbeddedSut, register
from dpgate.testbeds.lab.cores import CoreAllocation


class _LabDriverSut(EmbeddedSut):
    has_process = True
    #: DPDK poll-mode drivers: 100 % of their core at any load, so their CPU time per packet
    #: is Hz / load, not a cost (cpp_at_load comes from their own busy-cycle report, if any)
    polls = True
    lab_nf = ""
    #: how the driver's process runs: ``daemon`` (start-stop-daemon) or ``console`` (our child)
    service_mode = "daemon"
    #: the program whose build can be chosen (:mod:`dpgate.config.binaries`), if any
    program = ""

    def __init__(self, testbed, flows=None):
        super().__init__(testbed, flows)
        self.driver: Any = None
        #: the build to run instead of the installed ``program`` (:meth:`use_binaries`)
        self.binary: Optional[str] = None

    def use_binaries(self, binaries: Dict[str, str]) -> Optional[str]:
        """Run the build ``binaries`` gives for this SUT's program (before ``start``); returns it."""
        self.binary = binaries.get(self.program) if self.program else None
        return self.binary

    def _driver(self) -> Any:
        from dpgate.testbeds.lab.nfs import make_sut

        topo = self.tb.topology
        ports = [dataclasses.replace(p, kind="af_packet") for p in self.ports()]
        tgs = self.tg_ports()
        dut = types.SimpleNamespace(ports=ports, numa=0, namespace=self.ns, name="SUT")
        shim = types.SimpleNamespace(
            dut=dut, prefix=topo.prefix, run_dir=self.tb.workdir, pairs=lambda: list(zip(tgs, ports))
        )
        # console processes are pinned to the SUT CPUs (taskset), as every embedded SUT
        node = LocalNode(ns=self.ns, cpus=self.cpus if self.service_mode == "console" else None)
        node._dpgate_service_mode = self.service_mode  # type: ignore[attr-defined]  # a unit would leave the namespace
        cpu = self.cpus[0]
        return make_sut(
            self.lab_nf,
            node,
            shim,
            CoreAllocation(main=cpu, workers=(cpu,), phy_cores=1, threads_per_core=1, numa=0),
            flows=self.flows,
            options=dict(self.driver_options(), **({"binary": self.binary} if self.binary else {})),
        )

    def driver_options(self) -> Dict[str, Any]:
        """Keyword arguments for the lab driver beyond the lab NF catalogue's (see ``make_sut``)."""
        return {}

    def _start(self) -> None:
        from dpgate.testbeds.lab.service import STATE_DIR

        self.driver = self._driver()
        self.log_path = f"{STATE_DIR}/{self.driver.unit}.log"  # named in SutError messages
        self.driver.configure()
        self.driver.start()

    def _stop(self) -> None:
        if self.driver is not None:
            self.driver.stop()
            from dpgate.testbeds.lab.service import STATE_DIR

            for unit in (self.driver.unit, f"{self.driver.unit}-db"):
                self.driver.node.run(["rm", "-f", f"{STATE_DIR}/{unit}.log"], check=False)

    def ready(self) -> Optional[str]:
        return None if self.alive() else "not running"

    def alive(self) -> bool:
        return self.driver is not None and self.driver.alive() == "active"

    def exit_status(self) -> str:
        return "never started" if self.driver is None else self.driver.alive()

    def last_log(self, lines: int = 15) -> str:
        if self.driver is None:
            return ""
        from dpgate.testbeds.lab.service import unit_log

        try:
            return "\n".join(unit_log(self.driver.node, self.driver.unit, lines).splitlines()[-lines:])
        except Exception as err:  # the log is a courtesy in an error message
            return f"(log not readable: {err})"

    def version(self) -> str:
        if self.driver is None:
            raise SutError(f"SUT {self.name} is not started")
        return f"{self.lab_nf} {self.driver.version()}"


@register
class L3fwdIp4(_LabDriverSut):
    name = "l3fwd-ip4"
    lab_nf = "l3fwd-ip4"
    program = "dpdk-l3fwd"
    traffic = "ip4"
    description = "DPDK l3fwd LPM IPv4 forwarding (lab driver), net_af_packet ports"


@register
class OvsDpdkXconnect(_LabDriverSut):
    """Its PMD thread's own busy cycles per packet come from ``dpif-netdev/pmd-stats-show``
    (``avg processing cycles per packet``: the iterations that handled packets, as testpmd's
    ``--record-core-cycles``), cleared before each trial, asked over the daemon's control
    socket (no ovs-appctl start per trial)."""

    name = "ovsdpdk-xconnect"
    #: the last late frame of 55 recorded trials with any came 8.3 ms after the stop (p99 8.0)
    settle_s = 0.012
    lab_nf = "ovsdpdk-xconnect"
    traffic = "l2"
    description = "OVS-DPDK L2 cross-connect (lab driver, private instance), net_af_packet ports"

    def _pmd_stats(self, method: str) -> str:
        from dpgate.testbeds.embedded.suts.ovs import unixctl_text

        if self.driver is None or not self.driver.state_dir:
            return ""
        return unixctl_text(os.path.join(self.driver.state_dir, "vswitchd.ctl"), method)

    def trial_begin(self) -> None:
        self._pmd_stats("dpif-netdev/pmd-stats-clear")

    def trial_end(self, rx_packets: int) -> Dict[str, float]:
        from dpgate.testbeds.embedded.suts.ovs import TRIAL_KEYS, parse_pmd_stats

        stats = parse_pmd_stats(self._pmd_stats("dpif-netdev/pmd-stats-show"))
        return {k: v for k, v in stats.items() if k in TRIAL_KEYS}
