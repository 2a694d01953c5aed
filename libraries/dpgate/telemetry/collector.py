"""Capture telemetry on the SUT cores during a trial (perf stat; pcm-pcie where supported).

    c = TelemetryCollector([1])
    c.probe()                       # (perf reason or None, pcm reason or None)
    rec = c.measure(2.0, packets)   # TelemetryRecord: numbers, or NotSupported with reasons

Unsupported hosts get NotSupported values without running anything: never a fake number.
"""

from __future__ import annotations

import subprocess
from typing import Callable, Optional, Sequence, Tuple

from . import NotSupported, TelemetryRecord
from .pcm import parse_pcie, pcie_per_packet, probe_pcm, reason_from_output
from .perf import derive, parse_perf_stat, perf_stat_argv, probe_perf

PERF_EVENTS = ("cycles", "instructions")


class TelemetryCollector:
    def __init__(self, cpus: Sequence[int], runner: Callable = subprocess.run):
        self.cpus = list(cpus)
        self.runner = runner
        self._probe: Optional[Tuple[Optional[NotSupported], Optional[NotSupported]]] = None

    def probe(self) -> Tuple[Optional[NotSupported], Optional[NotSupported]]:
        if self._probe is None:
            self._probe = (probe_perf(self.runner), probe_pcm(self.runner))
        return self._probe

    @property
    def supported(self) -> bool:
        perf, pcm = self.probe()
        return perf is None or pcm is None

    def measure(self, duration_s: float, packets: float) -> TelemetryRecord:
        """Count for ``duration_s`` while traffic runs; ``packets`` forwarded meanwhile."""
        perf_reason, pcm_reason = self.probe()
        rec = TelemetryRecord.unsupported(perf_reason, pcm_reason)
        values = dict(rec.values)
        pcm_proc = None
        if pcm_reason is None:
            pcm_proc = subprocess.Popen(["pcm-pcie", "-csv", "-e", "-i=1", f"{duration_s:g}"],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if perf_reason is None:
            res = self.runner(perf_stat_argv(self.cpus, PERF_EVENTS, duration_s), capture_output=True,
                              text=True, timeout=duration_s + 30)
            values.update(derive(parse_perf_stat(res.stderr), packets))
        if pcm_proc is not None:
            out, _ = pcm_proc.communicate(timeout=duration_s + 30)
            reason = reason_from_output(out, pcm_proc.returncode)
            if reason is None:
                pps = packets / duration_s if duration_s else 0.0
                csv = out[out.index("Skt"):] if "Skt" in out else out
                values.update(pcie_per_packet(parse_pcie(csv), pps).as_dict())
            else:
                for k in list(values):
                    if k.startswith(("ddio", "pcie", "wil")):
                        values[k] = reason
        return TelemetryRecord(values)
