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
    for key, pat in (("rx_packets", r"RX-packets:\s*(\d+)"), ("rx_dropped", r"RX-dropped:\s*(\d+)"),
                     ("tx_packets", r"TX-packets:\s*(\d+)"), ("tx_dropped", r"TX-dropped:\s*(\d+)")):
        vals = re.findall(pat, block)
        if vals:
            out[key] = float(vals[-1])
    m = re.search(r"CPU cycles/packet=([0-9.]+).*?at\s+(\d+)\s*MHz", text)
    if m:
        out["cycles_per_packet"] = float(m.group(1))
        out["cycles_mhz"] = float(m.group(2))
    return out


class _Testpmd(EmbeddedSut):
    traffic = "l2"
    has_process = True
    mode = "io"

    def __init__(self, testbed, flows=None):
        super().__init__(testbed, flows)
        self.proc: Optional[subprocess.Popen] = None
        self._log = None
        self._mark = 0

    def argv(self) -> List[str]:
        a, b = self.ports()
        core = self.cpus[0]
        argv = [
            "dpdk-testpmd", f"--lcores=0@{core},1@{core}", "--no-huge", "-m", "512", "--no-pci",
            f"--file-prefix={self.tb.topology.prefix}testpmd", "--log-level=lib.eal:notice",
        ]
        for i, p in enumerate((a, b)):
            argv.append(f"--vdev=net_af_packet{i},iface={p.name},qpairs=1,qdisc_bypass=1,framecnt=4096")
        argv += ["--", "-i", "--nb-cores=1", "--rxq=1", "--txq=1", "--record-core-cycles",
                 "--total-num-mbufs=16384", f"--forward-mode={self.mode}"]
        if self.mode == "mac":
            tga, tgb = self.tg_ports()
            # port 0 transmits towards TG port1 and vice versa (paired ports)
            argv += [f"--eth-peer=0,{tga.mac}", f"--eth-peer=1,{tgb.mac}"]
        return argv

    def _start(self) -> None:
        require_tool("dpdk-testpmd")
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            ns_argv(["stdbuf", "-oL", "-eL"] + self.argv(), self.ns, self.cpus), stdin=subprocess.PIPE, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True,
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
            time.sleep(0.05)
        raise SutError(f"testpmd: {needle!r} not seen within {timeout:g} s ({self.exit_status()})\n"
                       f"--- last log lines ---\n{self.last_log()}")

    def ready(self) -> Optional[str]:
        if not self.alive():
            return "testpmd is not running"
        if "Start automatic packet forwarding" in self.last_log(400) or "forwards packets on" in self.last_log(400):
            return None
        return "forwarding not started"

    def trial_begin(self) -> None:
        # Restart forwarding so the statistics printed at stop cover this trial only.
        self.command("stop")
        self._wait_log("Done.", timeout=10, since_mark=True)
        self.command("start")
        self._wait_log("testpmd>", timeout=10, since_mark=True)

    def trial_end(self, rx_packets: int) -> Dict[str, float]:
        self.command("stop")
        text = self._wait_log("Done.", timeout=10, since_mark=True)
        stats = parse_forward_stats(text)
        self.command("start")
        return stats

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
