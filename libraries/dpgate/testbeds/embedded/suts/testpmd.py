"""DPDK testpmd with net_af_packet ports (no hugepages, no PCI), io or mac forwarding, run
by the lab driver (``dpgate.testbeds.lab.testpmd.Testpmd``) as labnfs.py runs l3fwd and OVS-DPDK.

testpmd runs interactively as a console service (our child, its stdin held, pinned to the
SUT CPU; both EAL lcores, main and forwarding, on that CPU): each trial's counters and
``CPU cycles/packet`` (``--record-core-cycles``) are the difference of two ``show fwd stats
all`` readings, the last trial's end being this trial's start (no traffic flows in between).

Example::

    dpgate trial --sut testpmd-mac --rate 50kpps
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from dpgate.exec.runner import run
from dpgate.model.errors import SutError
from dpgate.testbeds.embedded.suts.base import EmbeddedSut, register
from dpgate.testbeds.embedded.suts.labnfs import _LabDriverSut
from dpgate.testbeds.lab.console import console_process
from dpgate.testbeds.lab.testpmd import stats_delta


class _Testpmd(_LabDriverSut):
    lab_nf = "testpmd-io"
    traffic = "l2"
    polls = True
    service_mode = "console"
    mode = "io"
    program = "dpdk-testpmd"

    def __init__(self, testbed, flows=None):
        super().__init__(testbed, flows)
        #: cumulative statistics at the end of the last trial (this trial's baseline)
        self._base: Optional[Dict[str, float]] = None

    def driver_options(self) -> Dict[str, Any]:
        # port i sends towards the TG port it is linked to (paired ports)
        peers = [t.mac for t in self.tg_ports()] if self.mode == "mac" else []
        return dict(mode=self.mode, eth_peers=peers, interactive=True)

    def _start(self) -> None:
        try:
            super()._start()
        finally:  # our child: its exit status is known exactly (check_alive says "signal 9")
            self.proc = console_process(self.driver.node, self.driver.unit) if self.driver else None

    def _stop(self) -> None:
        try:
            super()._stop()
        finally:
            self.proc = None

    def exit_status(self) -> str:
        return EmbeddedSut.exit_status(self)  # from our child's exit code, not the unit state

    def _cumulative(self) -> Dict[str, float]:
        self.check_alive()
        try:
            return self.driver.forward_stats()
        except SutError:
            self.check_alive()  # died meanwhile: say so with its exit status and log
            raise

    def trial_begin(self) -> None:
        if self._base is None:
            self._base = self._cumulative()

    def trial_end(self, rx_packets: int) -> Dict[str, float]:
        now = self._cumulative()
        stats = stats_delta(self._base or {}, now)
        self._base = now
        return stats

    def version(self) -> str:
        """``dpdk <Debian package version> testpmd``; the binary's own ``RTE Version`` without the
        package, and with the path when a build was chosen (``--sut-binary``)."""
        if self.binary:
            return f"dpdk {self.driver.version() if self.driver else 'unknown'} testpmd ({self.binary})"
        pkg = run(["dpkg-query", "-W", "-f=${Version}", "dpdk"], check=False).stdout.strip()
        if not pkg and self.driver is not None:
            pkg = self.driver.version()
        return f"dpdk {pkg or 'unknown'} testpmd"


@register
class TestpmdIo(_Testpmd):
    name = "testpmd-io"
    #: the last late frame of 269 recorded trials with any came 7.7 ms after the stop (p99 7.4);
    #: testpmd-mac's up to 17.4 ms (p99 11.8), so it keeps the generator's 20 ms
    settle_s = 0.012
    mode = "io"
    description = "DPDK testpmd io forwarding, net_af_packet ports"


@register
class TestpmdMac(_Testpmd):
    name = "testpmd-mac"
    mode = "mac"
    description = "DPDK testpmd mac forwarding (rewrites MACs), net_af_packet ports"
