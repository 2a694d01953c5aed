"""What one telemetry window holds: the probe's ``Plan`` (a reason per tool that cannot
count, and the TMAM method chosen) and the ``Capture`` of raw tool outputs, whose
``record(packets)`` derives the per-packet values. ``dpgate.telemetry.collector`` probes
and runs the tools; this module only turns their outputs into a TelemetryRecord.

    >>> Plan(None, None, None, None).anything
    True
    >>> off = NotSupported("no perf")
    >>> Capture(Plan(off, off, off, off), 2.0).record(0.0).info
    {}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from . import METRIC_KEYS, TMAM_KEYS, NotSupported, TelemetryError, TelemetryRecord
from .pcm import mem_bytes_per_packet, parse_memory, parse_pcie, pcie_per_packet, reason_from_output
from .perf import CACHE_EVENTS, TMAM_RAW_EVENTS, derive, not_installed, parse_perf_stat
from .tmam import Tmam, parse_toplev_csv, tmam_from_events

PERF_EVENTS = ("cycles", "instructions") + CACHE_EVENTS
PROBE_S = 0.05
#: TMAM methods in the order they are tried.
TMAM_METHODS = ("perf-metric-TopdownL1", "perf-topdown", "toplev", "perf-raw-events")
#: perf options of each perf TMAM method; --topdown implies --metric-only (perf-stat.txt), which
#: would drop the cycles/instructions counts: --no-metric-only keeps the event lines.
PERF_TMAM_OPTIONS = {
    "perf-metric-TopdownL1": ("-M", "TopdownL1"),
    "perf-topdown": ("--topdown", "--no-metric-only"),
}


@dataclass(frozen=True)
class Plan:
    """What probe() found: a reason per tool that cannot count, and the TMAM method."""

    perf: Optional[NotSupported]
    pcie: Optional[NotSupported]
    memory: Optional[NotSupported]
    tmam: Optional[NotSupported]
    tmam_method: Optional[str] = None
    toplev: Optional[str] = None
    cores: Tuple[str, ...] = ()

    @property
    def anything(self) -> bool:
        return self.perf is None or self.pcie is None or self.memory is None


@dataclass(frozen=True)
class Capture:
    """Raw tool outputs of one window; ``record(packets)`` derives the per-packet values."""

    plan: Plan
    duration_s: float
    outputs: Dict[str, Any] = field(default_factory=dict)  # tool -> Result or NotSupported
    slots_per_cycle: int = 4

    def record(self, packets: float) -> TelemetryRecord:
        p = self.plan
        rec = TelemetryRecord.unsupported(p.perf, p.pcie, p.memory, p.tmam)
        values: Dict[str, Any] = dict(rec.values)
        info = {"telemetry_window_s": f"{self.duration_s:g}"} if self.outputs else {}
        pps = packets / self.duration_s if self.duration_s > 0 else 0.0
        no_pkts = NotSupported("no packets forwarded during the capture window")
        if "perf" in self.outputs:
            values.update(self._perf(self.outputs["perf"], packets))
            for key in ("ipc_pmu", "tmam_pmu"):  # hybrid CPUs: which core PMU the values are from
                if key in values:
                    info[key] = str(values.pop(key))
        if "toplev" in self.outputs:
            values.update(self._toplev(self.outputs["toplev"]))
        if p.tmam_method and (
            "toplev" in self.outputs or ("perf" in self.outputs and p.tmam_method != "toplev")
        ):
            info["tmam_source"] = p.tmam_method
        if "pcm-pcie" in self.outputs:
            values.update(
                self._pcm(
                    "pcm-pcie",
                    [k for k in METRIC_KEYS if k.startswith(("ddio", "pcie", "wil"))],
                    lambda text: pcie_per_packet(parse_pcie(text, interval_s=self.duration_s), pps),
                    pps,
                    no_pkts,
                )
            )
        if "pcm-memory" in self.outputs:
            values.update(
                self._pcm(
                    "pcm-memory",
                    ["mem_bytes_per_packet"],
                    lambda text: {"mem_bytes_per_packet": mem_bytes_per_packet(parse_memory(text), pps)},
                    pps,
                    no_pkts,
                )
            )
        return TelemetryRecord(values, info)

    def _pcm(
        self, tool: str, keys: List[str], derive: Any, pps: float, no_pkts: NotSupported
    ) -> Dict[str, Any]:
        """Values of one pcm tool's output, or its reason (tool's own, no packets, unparsable) for ``keys``."""
        out = self.outputs[tool]
        reason = (
            out
            if isinstance(out, NotSupported)
            else reason_from_output((out.stdout or "") + (out.stderr or ""), out.returncode, tool)
        )
        if reason is None and not pps > 0:
            reason = no_pkts
        if reason is None:
            try:
                return dict(derive(out.stdout))
            except TelemetryError as err:
                reason = NotSupported(f"{tool} output not understood: {err}")
        return {k: reason for k in keys}

    def _perf(self, out: Any, packets: float) -> Dict[str, Any]:
        keys = ["ipc", "ipp", "cpp_measured", "cache_misses_per_packet", "llc_load_misses_per_packet"]
        method = self.plan.tmam_method
        if method and method.startswith("perf"):
            keys += list(TMAM_KEYS)
        if isinstance(out, NotSupported):
            return {k: out for k in keys}
        if out.returncode != 0:
            tail = (out.stderr or out.stdout or "").strip().splitlines()[-1:] or ["no output"]
            why = not_installed(out) or NotSupported(f"perf stat failed (exit {out.returncode}): {tail[0]}")
            return {k: why for k in keys}
        try:
            stat = parse_perf_stat(out.stderr)
        except TelemetryError as err:
            return {k: NotSupported(f"perf stat output not understood: {err}") for k in keys}
        vals: Dict[str, Any] = dict(derive(stat, packets))
        if stat.ipc_pmu:
            vals["ipc_pmu"] = stat.ipc_pmu
        if method and method.startswith("perf"):
            try:
                pmu: Optional[str] = None
                if method == "perf-raw-events":
                    missing = [e for e in TMAM_RAW_EVENTS if e in stat.unsupported]
                    if missing:
                        raise TelemetryError(f"{', '.join(missing)} not counted")
                    tmam: Optional[Tmam] = tmam_from_events(stat.counts, self.slots_per_cycle)
                else:
                    tmam, pmu = stat.tmam_with_pmu()
                if tmam is None:
                    raise TelemetryError("perf printed no level-1 topdown metrics")
                if pmu:
                    vals["tmam_pmu"] = pmu
                vals.update(tmam.as_dict())
            except TelemetryError as err:
                vals.update({k: NotSupported(f"TMAM ({method}): {err}") for k in TMAM_KEYS})
        return vals

    @staticmethod
    def _toplev(out: Any) -> Dict[str, Any]:
        if isinstance(out, NotSupported):
            return {k: out for k in TMAM_KEYS}
        try:
            return dict(parse_toplev_csv((out.stderr or "") + "\n" + (out.stdout or "")).as_dict())
        except TelemetryError as err:
            why = f"toplev failed (exit {out.returncode}): {err}" if out.returncode else f"toplev: {err}"
            return {k: NotSupported(why) for k in TMAM_KEYS}
