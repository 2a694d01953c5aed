"""DPDK testpmd (io forwarding, L2 packet looping point-to-point; seed 000 Table 1 NF 2).

Runs non-interactive with ``--stats-period`` (keeps forwarding until stopped, prints port
statistics to its log), as a transient systemd unit on the DUT.

Example::

    tp = Testpmd(node, topo.dut, allocate(cpus, 1, ht=False))
    tp.argv()[:3]        # ['dpdk-testpmd', '-l', '1,2']
"""

from __future__ import annotations

import re
from typing import Any, Dict, List

from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab import ports as ports_mod
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.service import start_unit, stop_unit, unit_active, unit_log, wait_until


def eal_args(
    cores: CoreAllocation,
    ports: List[Any],
    mem_channels: int = 4,
    file_prefix: str = "dpgate",
    main_works: bool = False,
) -> List[str]:
    """EAL options for the DUT ports of any kind (PCI, af_packet, memif): see ``dpgate.testbeds.lab.ports``."""
    return ports_mod.eal_args(cores, ports, file_prefix, mem_channels=mem_channels, main_works=main_works)


def dut_ports(dut: Any, n: int = 2) -> List[Any]:
    """The first ``n`` DUT ports; each must be PCI or virtual (one ConfigError naming the port)."""
    out = list(dut.ports[:n])
    for p in out:
        ports_mod.port_kind(p)
    return out


def dut_pcis(dut: Any, n: int = 2) -> List[str]:
    pcis = [p.pci for p in dut.ports[:n]]
    if not all(pcis):
        raise ConfigError(f"DPDK apps need a pci address on each DUT interface, got {pcis}")
    return pcis


def parse_port_stats(log: str) -> Dict[int, Dict[str, int]]:
    """The last ``Port statistics`` of each port in testpmd output: RX-packets, RX-missed, RX-errors, TX-packets, TX-errors."""
    out: Dict[int, Dict[str, int]] = {}
    port = None
    for line in log.splitlines():
        m = re.search(r"NIC statistics for port (\d+)", line)
        if m:
            port = int(m.group(1))
            out[port] = {}
            continue
        if port is None:
            continue
        for key, val in re.findall(r"([A-Z]X-[a-z]+):\s+(\d+)", line):
            out[port][key] = int(val)
    return out


def parse_dpdk_version(log: str) -> str:
    m = re.search(r"RTE Version: '([^']+)'", log)
    return m.group(1) if m else "unknown"


class Testpmd(LabSut):
    __test__ = False  # not a pytest class despite the name
    unit = "dpgate-testpmd"
    binary = "dpdk-testpmd"

    def __init__(
        self,
        node: Any,
        dut: Any,
        cores: CoreAllocation,
        rxq: int = 1,
        descriptors: int = 1024,
        burst: int = 64,
    ):
        self.node, self.dut, self.cores = node, dut, cores
        self.rxq, self.descriptors, self.burst = rxq, descriptors, burst

    def app_args(self) -> List[str]:
        n = len(self.cores.workers)
        extra = ["--total-num-mbufs=32768"] if ports_mod.virtual_only(dut_ports(self.dut)) else []
        return extra + [
            "--forward-mode=io",
            f"--nb-cores={n}",
            f"--rxq={self.rxq}",
            f"--txq={self.rxq}",
            f"--rxd={self.descriptors}",
            f"--txd={self.descriptors}",
            f"--burst={self.burst}",
            "--stats-period=1",
            "--numa",
        ]

    def argv(self) -> List[str]:
        return (
            [self.binary]
            + eal_args(self.cores, dut_ports(self.dut), file_prefix=self.unit)
            + ["--"]
            + self.app_args()
        )

    def configure(self) -> None:
        """Nothing to write: everything is on the command line."""

    def start(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        start_unit(self.node, self.unit, self.argv())
        self.ready(timeout_s, **wait_kw)

    def _log(self) -> str:
        return unit_log(self.node, self.unit)

    def ready(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        wait_until(
            lambda: "NIC statistics for port" in self._log() or "io packet forwarding" in self._log(),
            timeout_s,
            self.binary,
            log=self._log,
            **wait_kw,
        )
        ports_mod.check_port_macs(self._log(), dut_ports(self.dut), self.binary)

    def alive(self) -> str:
        """``active`` while the process runs, else its state."""
        return unit_active(self.node, self.unit)

    def stop(self) -> None:
        stop_unit(self.node, self.unit)

    def stats(self) -> Dict[int, Dict[str, int]]:
        return parse_port_stats(self._log())

    def version(self) -> str:
        return parse_dpdk_version(self._log())
