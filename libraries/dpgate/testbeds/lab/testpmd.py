"""DPDK testpmd (io forwarding, L2 packet looping point-to-point; seed 000 Table 1 NF 2).

On a lab DUT it runs non-interactive with ``--stats-period`` (keeps forwarding until
stopped, prints port statistics to its log), as a transient systemd unit.

``interactive=True`` (the embedded testbed's testpmd-io/testpmd-mac, a ``console`` service
of ``dpgate.testbeds.lab.service``): ``-i --record-core-cycles``, forwarding started with
``start`` once the prompt shows, and :meth:`Testpmd.forward_stats` asks ``show fwd stats all``
(cumulative counters and busy cycles; forwarding keeps running, unlike ``stop``/``start``
which cost tens of ms per trial), so two readings give one trial's counters
(:func:`stats_delta`). ``mode="mac"`` rewrites MACs towards ``eth_peers``; ``noise_reads``
selects DPDK's noisy-VNF engine (io forwarding plus random lookup-table reads per packet,
cost injection: ``dpgate.testbeds.embedded.suts.cost``).

Example::

    tp = Testpmd(node, topo.dut, allocate(cpus, 1, ht=False))
    tp.argv()[:3]        # ['dpdk-testpmd', '-l', '1,2']
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Sequence

from dpgate.model.errors import ConfigError, SutError
from dpgate.testbeds.lab import ports as ports_mod
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.service import (
    start_unit,
    stop_unit,
    unit_active,
    unit_command,
    unit_log,
    wait_until,
)

#: Lookup table size (MB) of the noisy engine used for cost injection (beyond the caches).
NOISY_MB = 64
#: Forwarding modes this driver runs (the noisy engine is io plus lookups: ``noise_reads``).
MODES = ("io", "mac")
PROMPT = "testpmd>"


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


def parse_forward_stats(text: str) -> Dict[str, float]:
    """Totals and cycles from the block testpmd prints at ``stop`` or ``show fwd stats all``.

    >>> parse_forward_stats("RX-packets: 10  RX-dropped: 0  RX-total: 10\\n"
    ...                     "  CPU cycles/packet=812.35 (busy cycles=1 / total packets=1) at 2994 MHz Clock\\n")["cycles_per_packet"]
    812.35
    """
    out: Dict[str, float] = {}
    m = re.search(r"Accumulated forward statistics for all ports\+*\s*(.*?)\+{5,}", text, re.S)
    block = m.group(1) if m else text
    for key, pat in (
        ("rx_packets", r"RX-packets:\s*(\d+)"),
        ("rx_dropped", r"RX-dropped:\s*(\d+)"),
        ("tx_packets", r"TX-packets:\s*(\d+)"),
        ("tx_dropped", r"TX-dropped:\s*(\d+)"),
    ):
        vals = re.findall(pat, block)
        if vals:
            out[key] = float(vals[-1])
    m = re.search(r"CPU cycles/packet=([0-9.]+).*?at\s+(\d+)\s*MHz", text)
    if m:
        out["cycles_per_packet"] = float(m.group(1))
        out["cycles_mhz"] = float(m.group(2))
    # Busy cycles in every release: the cycles of the forwarding calls whose receive burst got
    # frames (a call that finds none returns before it counts). DPDK 22.11 labels their sum
    # "total cycles", 23.03+ "busy cycles". Measured on testpmd 22.11 here: 10 % of the core's
    # cycles at 10 kpps, 69 % at 200 kpps, not the 100 % an idle-inclusive count would give.
    m = re.search(r"\((?:busy|total) cycles=(\d+) / total (?:[a-z]+ )?packets=(\d+)\)", text)
    if m:
        out["cycles"] = float(m.group(1))
        out["cycles_packets"] = float(m.group(2))
    return out


def stats_delta(before: Dict[str, float], after: Dict[str, float]) -> Dict[str, float]:
    """Per-trial statistics from two cumulative ``show fwd stats all`` readings.

    >>> stats_delta({"rx_packets": 10, "cycles": 100, "cycles_packets": 10},
    ...             {"rx_packets": 30, "cycles": 900, "cycles_packets": 30, "cycles_mhz": 2600})
    {'rx_packets': 20.0, 'cycles': 800.0, 'cycles_packets': 20.0, 'cycles_mhz': 2600, 'cycles_per_packet': 40.0}
    """
    out: Dict[str, float] = {}
    for k, v in after.items():
        if k in ("cycles_mhz", "cycles_per_packet"):
            continue
        out[k] = float(v - before.get(k, 0.0))
    if "cycles_mhz" in after:
        out["cycles_mhz"] = after["cycles_mhz"]
    if out.get("cycles_packets"):
        out["cycles_per_packet"] = round(out["cycles"] / out["cycles_packets"], 2)
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
        mode: str = "io",
        eth_peers: Sequence[str] = (),
        noise_reads: int = 0,
        interactive: bool = False,
        binary: str = "",
    ):
        """``eth_peers[i]``: destination MAC of frames sent on topology port ``i`` (``mode="mac"``);
        ``binary``: the testpmd to run (default ``dpdk-testpmd`` from PATH)."""
        self.binary = binary or self.binary
        if mode not in MODES:
            raise ConfigError(
                f"testpmd forwarding mode {mode!r}: expected one of {', '.join(MODES)}", path="mode"
            )
        if noise_reads and mode != "io":
            raise ConfigError(
                f"cost injection needs testpmd io forwarding (DPDK 22.11's noisy engine forwards like io), not {mode}",
                path="inject_cost",
            )
        self.node, self.dut, self.cores = node, dut, cores
        self.rxq, self.descriptors, self.burst = rxq, descriptors, burst
        self.mode, self.eth_peers, self.noise_reads = mode, list(eth_peers), int(noise_reads)
        self.interactive = interactive
        self._version: Optional[str] = None

    def forward_args(self) -> List[str]:
        if self.noise_reads:
            # DPDK's noisy VNF: io forwarding plus random reads of a lookup table per packet.
            return [
                "--forward-mode=noisy",
                f"--noisy-lkup-memory={NOISY_MB}",
                f"--noisy-lkup-num-reads={self.noise_reads}",
            ]
        args = [f"--forward-mode={self.mode}"]
        if self.mode == "mac":
            ids = ports_mod.dpdk_port_ids(dut_ports(self.dut))
            args += [f"--eth-peer={ids[i]},{mac}" for i, mac in enumerate(self.eth_peers)]
        return args

    def app_args(self) -> List[str]:
        n = len(self.cores.workers)
        extra = ["--total-num-mbufs=32768"] if ports_mod.virtual_only(dut_ports(self.dut)) else []
        head = ["-i", "--record-core-cycles"] if self.interactive else []
        tail = [] if self.interactive else ["--stats-period=1"]
        return (
            head
            + extra
            + self.forward_args()
            + [
                f"--nb-cores={n}",
                f"--rxq={self.rxq}",
                f"--txq={self.rxq}",
                f"--rxd={self.descriptors}",
                f"--txd={self.descriptors}",
                f"--burst={self.burst}",
                "--numa",
            ]
            + tail
        )

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
        if self.interactive:
            self._start_forwarding(timeout_s, **wait_kw)
        self.ready(timeout_s, **wait_kw)
        self._version = parse_dpdk_version(self._log(400))

    def _start_forwarding(self, timeout_s: float, **wait_kw: Any) -> None:
        """Wait for the prompt (or the process's end), then ``start``: forwarding runs."""
        wait_kw.setdefault("interval_s", 0.02)
        wait_until(
            lambda: PROMPT in self._log() or self.alive() != "active",
            timeout_s,
            self.binary,
            log=self._log,
            **wait_kw,
        )
        if self.alive() != "active":
            tail = " | ".join(self._log().strip().splitlines()[-5:])
            raise SutError(f"{self.binary} exited while starting ({self.alive()}): {tail}")
        out = unit_command(self.node, self.unit, "start", until=PROMPT)
        if "forwards packets on" not in out:
            raise SutError(
                f"{self.binary}: forwarding did not start: {' | '.join(out.strip().splitlines()[-5:])}"
            )

    def _log(self, lines: int = 200) -> str:
        return unit_log(self.node, self.unit, lines)

    def ready(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        if not self.interactive:
            wait_until(
                lambda: "NIC statistics for port" in self._log() or "io packet forwarding" in self._log(),
                timeout_s,
                self.binary,
                log=self._log,
                **wait_kw,
            )
        ports_mod.check_port_macs(self._log(400), dut_ports(self.dut), self.binary)

    def alive(self) -> str:
        """``active`` while the process runs, else its state."""
        return unit_active(self.node, self.unit)

    def stop(self) -> None:
        stop_unit(self.node, self.unit)

    def forward_stats(self) -> Dict[str, float]:
        """Cumulative forwarding counters and cycles of an interactive testpmd (``show fwd stats all``)."""
        return parse_forward_stats(unit_command(self.node, self.unit, "show fwd stats all", until=PROMPT))

    def stats(self) -> Dict[int, Dict[str, int]]:
        if self.interactive:
            return parse_port_stats(unit_command(self.node, self.unit, "show port stats all", until=PROMPT))
        return parse_port_stats(self._log())

    def version(self) -> str:
        """``DPDK 22.11.11``: from the ``-v`` line of this run's log (read once at start)."""
        return self._version or parse_dpdk_version(self._log(400))
