"""DPDK testpmd with net_af_packet vdevs (no hugepages, no PCI), io or mac forwarding.

testpmd runs interactively with its stdin held by dpgate: each trial is bracketed by
``start``/``stop``, so the forwarding statistics printed at ``stop`` (including
``CPU cycles/packet`` from ``--record-core-cycles``) belong to that trial alone.
Both EAL lcores (main and forwarding) are mapped onto the SUT core (``--lcores``).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from typing import Dict, List, Optional

from dpgate.exec.runner import ns_argv, require_tool, run, stop_process
from dpgate.model.errors import SutError
from dpgate.testbeds.embedded.suts.base import EmbeddedSut, register


def parse_forward_stats(text: str) -> Dict[str, float]:
    """Totals and cycles from the block testpmd prints at ``stop``.

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
    # DPDK 22.11 counts every polling cycle ("total cycles"), later releases only busy ones.
    m = re.search(r"\((busy|total) cycles=(\d+) / total (?:io )?packets=(\d+)\)", text)
    if m:
        out["cycles"] = float(m.group(2))
        out["cycles_packets"] = float(m.group(3))
        out["cycles_include_idle"] = 1.0 if m.group(1) == "total" else 0.0
    return out


def stats_delta(before: Dict[str, float], after: Dict[str, float]) -> Dict[str, float]:
    """Per-trial statistics from two cumulative ``show fwd stats all`` readings.

    >>> stats_delta({"rx_packets": 10, "cycles": 100, "cycles_packets": 10},
    ...             {"rx_packets": 30, "cycles": 900, "cycles_packets": 30, "cycles_mhz": 2600})
    {'rx_packets': 20.0, 'cycles': 800.0, 'cycles_packets': 20.0, 'cycles_mhz': 2600, 'cycles_per_packet': 40.0}
    """
    out: Dict[str, float] = {}
    for k, v in after.items():
        if k in ("cycles_mhz", "cycles_include_idle", "cycles_per_packet"):
            continue
        out[k] = float(v - before.get(k, 0.0))
    for k in ("cycles_mhz", "cycles_include_idle"):
        if k in after:
            out[k] = after[k]
    if out.get("cycles_packets"):
        out["cycles_per_packet"] = round(out["cycles"] / out["cycles_packets"], 2)
    return out


#: Lookup table size (MB) of the noisy engine used for cost injection (beyond the caches).
NOISY_MB = 64


class _Testpmd(EmbeddedSut):
    traffic = "l2"
    has_process = True
    polls = True
    mode = "io"
    #: random lookup-table reads per packet (cost injection, ``dpgate.testbeds.embedded.suts.cost``); 0 = none
    noise_reads = 0

    def __init__(self, testbed, flows=None):
        super().__init__(testbed, flows)
        self.proc: Optional[subprocess.Popen] = None
        self._log = None
        self._mark = 0
        #: cumulative statistics at the end of the last trial (this trial's baseline)
        self._base: Optional[Dict[str, float]] = None

    def argv(self) -> List[str]:
        a, b = self.ports()
        core = self.cpus[0]
        argv = [
            "dpdk-testpmd",
            f"--lcores=0@{core},1@{core}",
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
            f"--file-prefix={self.tb.topology.prefix}testpmd",
            "--log-level=lib.eal:notice",
        ]
        for i, p in enumerate((a, b)):
            argv.append(f"--vdev=net_af_packet{i},iface={p.name},qpairs=1,qdisc_bypass=1,framecnt=4096")
        argv += [
            "--",
            "-i",
            "--nb-cores=1",
            "--rxq=1",
            "--txq=1",
            "--record-core-cycles",
            "--total-num-mbufs=16384",
        ]
        if self.noise_reads:
            # DPDK's noisy VNF: io forwarding plus random reads of a lookup table per packet.
            argv += [
                "--forward-mode=noisy",
                f"--noisy-lkup-memory={NOISY_MB}",
                f"--noisy-lkup-num-reads={self.noise_reads}",
            ]
        else:
            argv.append(f"--forward-mode={self.mode}")
        if self.mode == "mac":
            tga, tgb = self.tg_ports()
            # port 0 transmits towards TG port1 and vice versa (paired ports)
            argv += [f"--eth-peer=0,{tga.mac}", f"--eth-peer=1,{tgb.mac}"]
        return argv

    def _start(self) -> None:
        require_tool("dpdk-testpmd")
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            ns_argv(["stdbuf", "-oL", "-eL"] + self.argv(), self.ns, self.cpus),
            stdin=subprocess.PIPE,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_log("testpmd>", timeout=30)
        self.command("start")

    def command(self, cmd: str) -> None:
        if not self.alive():
            self.check_alive()
        self._mark = os.path.getsize(self.log_path)
        try:
            self.proc.stdin.write((cmd + "\n").encode())  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except BrokenPipeError:
            self.check_alive()
            raise

    def output_since_mark(self) -> str:
        with open(self.log_path, "rb") as fh:
            fh.seek(self._mark)
            return fh.read().decode(errors="replace")

    def _wait_log(self, needle: str, timeout: float, since_mark: bool = False) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            text = self.output_since_mark() if since_mark else self.last_log(200)
            if needle in text:
                return text
            if not self.alive():
                break
            time.sleep(0.002)
        raise SutError(
            f"testpmd: {needle!r} not seen within {timeout:g} s ({self.exit_status()})\n--- last log lines ---\n{self.last_log()}"
        )

    def ready(self) -> Optional[str]:
        if not self.alive():
            return "testpmd is not running"
        if "Start automatic packet forwarding" in self.last_log(
            400
        ) or "forwards packets on" in self.last_log(400):
            return None
        return "forwarding not started"

    def _cumulative(self) -> Dict[str, float]:
        """Cumulative forwarding statistics (``show fwd stats all``: one command, forwarding
        keeps running, unlike ``stop``/``start`` which cost tens of ms per trial)."""
        self.command("show fwd stats all")
        return parse_forward_stats(self._wait_log("testpmd>", timeout=10, since_mark=True))

    def trial_begin(self) -> None:
        # The last trial's end reading is this trial's start (no traffic flows in between).
        if self._base is None:
            self._base = self._cumulative()

    def trial_end(self, rx_packets: int) -> Dict[str, float]:
        now = self._cumulative()
        stats = stats_delta(self._base or {}, now)
        self._base = now
        return stats

    def set_noise(self, reads: int) -> Dict:
        """Restart testpmd with ``reads`` random lookup reads per packet (noisy engine)."""
        if self.mode != "io":
            from dpgate.model.errors import ConfigError

            raise ConfigError(
                f"cost injection needs testpmd io forwarding (DPDK 22.11's noisy engine forwards like io), not {self.mode}",
                path="inject_cost",
            )
        self.stop()
        self.noise_reads = int(reads)
        self._base = None
        self.start()
        return {
            "method": "testpmd noisy forwarding",
            "lookup_reads_per_packet": self.noise_reads,
            "lookup_memory_mb": NOISY_MB,
        }

    def version(self) -> str:
        res = run(["dpkg-query", "-W", "-f=${Version}", "dpdk"], check=False)
        return f"dpdk {res.stdout.strip() or 'unknown'} testpmd"

    def _stop(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                try:
                    self.proc.stdin.write(b"quit\n")  # type: ignore[union-attr]
                    self.proc.stdin.flush()  # type: ignore[union-attr]
                    self.proc.wait(5)
                except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
                    pass
            stop_process(self.proc)
            self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None


@register
class TestpmdIo(_Testpmd):
    name = "testpmd-io"
    mode = "io"
    description = "DPDK testpmd io forwarding, net_af_packet ports"


@register
class TestpmdMac(_Testpmd):
    name = "testpmd-mac"
    mode = "mac"
    description = "DPDK testpmd mac forwarding (rewrites MACs), net_af_packet ports"
