"""Telemetry rows for the sign-off report: IPC, IPP, CPP (derived and measured), TMAM.

    rows = report_rows(records)                    # records: result dicts (name, metrics)
    plot_tmam_bars(tmam_bars(rows), "tmam.png")    # tests whose TMAM was measured
    rows_pdr = report_rows(records, suffix="_pdr") # the capture at PDR

A value the host could not measure is None in the row, and its reason is in
``row.reasons[<key>]`` (``"not supported (perf: cycles <not supported> ...)"``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional

from . import TMAM_KEYS
from .tmam import Tmam


@dataclass(frozen=True)
class TelemetryRow:
    name: str
    ipc: Optional[float]
    ipp: Optional[float]
    cpp: Optional[float]  # derived: core Hz x cores / pps
    cpp_measured: Optional[float]  # perf: cycles / packets during the capture
    tmam: Optional[Tmam]  # the four level-1 fractions, or None
    reasons: Dict[str, str] = field(default_factory=dict)

    def as_tuple(self):
        return (self.name, self.ipc, self.ipp, self.cpp, self.cpp_measured, self.tmam)


def _num(metrics: Mapping[str, Any], key: str, reasons: Dict[str, str]) -> Optional[float]:
    v = metrics.get(key)
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    reasons[key] = str(v)
    return None


def _parts(rec: Any):
    if isinstance(rec, Mapping):
        name = rec.get("name") or rec.get("test_id") or "?"
        return str(name), rec.get("metrics") or {}
    return str(getattr(rec, "name", "?")), getattr(rec, "metrics", {}) or {}


def report_rows(records: Iterable[Any], suffix: str = "") -> List[TelemetryRow]:
    """One row per record (a result dict with ``name`` and ``metrics``, or an object with
    ``.name`` and ``.metrics``). ``suffix="_pdr"`` reads the capture at PDR."""
    rows: List[TelemetryRow] = []
    for rec in records:
        name, m = _parts(rec)
        reasons: Dict[str, str] = {}
        cpp_key = "cpp" if not suffix else f"cpp{suffix}"
        vals = {k: _num(m, k + suffix, reasons) for k in TMAM_KEYS}
        tmam = (
            Tmam(*(vals[k] or 0.0 for k in TMAM_KEYS)) if all(v is not None for v in vals.values()) else None
        )
        row = TelemetryRow(
            name,
            _num(m, "ipc" + suffix, reasons),
            _num(m, "ipp" + suffix, reasons),
            _num(m, cpp_key, reasons),
            _num(m, "cpp_measured" + suffix, reasons),
            tmam,
            reasons,
        )
        whole = m.get("telemetry" + suffix)  # one line instead of every key (e.g. no counters at PDR)
        if isinstance(whole, str):
            for key in ("ipc", "ipp", "cpp_measured") + TMAM_KEYS:
                reasons.setdefault(key, whole)
        rows.append(row)
    return rows


def tmam_bars(rows: Iterable[TelemetryRow]) -> Dict[str, Tmam]:
    """``{test name: Tmam}`` of the rows that have TMAM, for ``plot_tmam_bars``."""
    return {r.name: r.tmam for r in rows if r.tmam is not None}
