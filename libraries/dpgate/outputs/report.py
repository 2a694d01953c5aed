"""``dpgate report``: a static sign-off page (HTML + PNG plots) from one run's results.

    dpgate report results/ [--baseline results-v1.0/] [--history history/] [--out report/]

Sections, following seed 000 ("Benchmarking and Analysis of Software Data Planes"):

* verdicts: every test with its gate status and message, NDR/PDR, the change against a
  baseline run (``--baseline``: e.g. the previous release) and the regression verdict
  against a history store (``--history``, see ``dpgate compare``);
* efficiency at 64 B (Tables 4-5; Figures 7, 9, 10, 11): NDR, instructions/packet,
  instructions/cycle, cycles/packet (derived from the frequency, measured by perf, reported
  by the SUT, from the SUT core's busy time) per NF and core configuration;
* per NF: NDR/PDR per frame size and core configuration (plot and table);
* speedups (Figures 13-14): Hyper-Threading (2T1C vs 1T1C) and multi-core against perfect
  linear scaling, when the results hold the same NF at several core counts (lab runs;
  the embedded testbed has one SUT core, and the page says so);
* TMAM level 1 (Figure 20): stacked Retiring / Bad Speculation / Frontend / Backend bars
  when perf could count them, else the host's reason.

Values a host could not measure are shown with their reason ("not supported: ..."), never
as numbers. Every PNG the page references is written next to it.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Dict, List, Optional

from dpgate.model.errors import ConfigError
from dpgate.model.record import F
from dpgate.outputs.report_tables import (
    Case,
    case_of,
    efficiency_section,
    esc,
    latency_section,
    pct,
    per_nf_section,
    speedup_data,
    speedups_section,
    table,
    tmam_section,
)
from dpgate.outputs.results import load_records
from dpgate.regression.compare import compare

__all__ = ["Case", "build_report", "case_of", "speedup_data"]


def _cases(outdir: str) -> List[Case]:
    return [case_of(r) for r in load_records(outdir) if "ndr_pps" in (r.get(F.METRICS) or {})]


# -- sections ---------------------------------------------------------------------------
def _verdicts(cases: List[Case], base: Dict[str, Case], regress: Dict[str, str]) -> str:
    head = ["test", "NDR Mpps", "PDR Mpps", "NDR vs baseline", "PDR vs baseline"]
    if regress:
        head.append("vs history")
    head.append("gate verdict")
    rows, classes = [], []
    for c in cases:
        b = base.get(c.name)
        row = [
            c.name,
            f"{(c.num('ndr_pps') or 0.0) / 1e6:.3f}",
            f"{(c.num('pdr_pps') or 0.0) / 1e6:.3f}",
            pct(c.num("ndr_pps"), b.num("ndr_pps") if b else None),
            pct(c.num("pdr_pps"), b.num("pdr_pps") if b else None),
        ]
        if regress:
            row.append(regress.get(c.name, "-"))
        row.append(f"{c.status} {c.message}".strip())
        rows.append(row)
        classes.append(c.status)
    return "<h2>Verdicts</h2>" + table(head, rows, classes)


def _regression_verdicts(outdir: str, history: str) -> Dict[str, str]:

    out: Dict[str, List[str]] = defaultdict(list)
    for v in compare(outdir, history):
        change = f" {v.change_pct:+.1f} %" if v.change_pct is not None else ""
        out[v.test].append(f"{v.metric.split('_')[0].upper()} {v.verdict}{change}")
    return {k: "; ".join(v) for k, v in out.items()}


def build_report(
    outdir: str, dest: str, baseline: Optional[str] = None, history: Optional[str] = None
) -> str:
    cases = _cases(outdir)
    if not cases:
        raise ConfigError(f"no finished dpgate results under {outdir!r}/dpgate/tests", path="outdir")
    base = {c.name: c for c in _cases(baseline)} if baseline else {}
    regress = _regression_verdicts(outdir, history) if history else {}
    os.makedirs(dest, exist_ok=True)
    passed = sum(c.status == "PASS" for c in cases)
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>dpgate sign-off report</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:0.5em 0 1em}"
        "td,th{border:1px solid #999;padding:3px 8px;text-align:right}.FAIL,.ERROR{background:#f8d0d0}"
        ".PASS{background:#d8f0d8}.SKIP{background:#f0f0c0}img{display:block;max-width:100%}</style>"
        "</head><body><h1>dpgate sign-off report</h1>",
        f"<p>results: {esc(os.path.abspath(outdir))}"
        + (f"<br>baseline: {esc(os.path.abspath(baseline))}" if baseline else "")
        + (f"<br>history: {esc(os.path.abspath(history))}" if history else "")
        + f"<br>{passed} of {len(cases)} tests passed their gates</p>",
        _verdicts(cases, base, regress),
        efficiency_section(cases, dest),
        per_nf_section(cases, dest),
        speedups_section(cases, dest),
        tmam_section(cases, dest),
        latency_section(cases),
        "</body></html>",
    ]
    path = os.path.join(dest, "index.html")
    with open(path, "w") as fh:
        fh.write("\n".join(parts))
    return path
