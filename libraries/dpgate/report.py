"""``dpgate report``: a static sign-off page (HTML + PNG plots) from one or more runs.

    dpgate report results/ [--baseline results-v1.0/] [--out report/]

Per NF: NDR/PDR per frame size (bar plot), a table with NDR, PDR, CPP (derived and
measured), IPC when telemetry exists, the gate verdicts, and the change against a baseline
run. Multi-core and HT speedups (seed 000 Figures 12-14) are listed when the results hold
the same NF and frame size at several core counts (lab runs; the embedded testbed has one).
"""

from __future__ import annotations

import html
import os
import re
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

from .errors import ConfigError
from .results import load_records


def _case(rec: Dict) -> Tuple[str, str, str]:
    """(nf, frame size, cores tag) from a CSIT-style test name."""
    m = re.match(r"^(\d+B|IMIX)-(\d+t)?(\d+)c-(.+)-ndrpdr$", rec.get("name", ""), re.I)
    if not m:
        return rec.get("nf", "?"), rec.get("metrics", {}).get("frame_size", "?"), "1C"
    threads = (m.group(2) or "").upper()
    return m.group(4), m.group(1).upper(), f"{threads}{m.group(3)}C"


def _plot(nf: str, rows: List[Dict], path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['size']} {r['cores']}" for r in rows]
    ndr = [r["ndr"] / 1e6 for r in rows]
    pdr = [r["pdr"] / 1e6 for r in rows]
    x = range(len(rows))
    fig, ax = plt.subplots(figsize=(max(4, 1.4 * len(rows)), 3.2))
    ax.bar([i - 0.2 for i in x], ndr, width=0.4, label="NDR")
    ax.bar([i + 0.2 for i in x], pdr, width=0.4, label="PDR")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("Mpps")
    ax.set_title(nf)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def build_report(outdir: str, dest: str, baseline: Optional[str] = None) -> str:
    records = [r for r in load_records(outdir) if "ndr_pps" in r.get("metrics", {})]
    if not records:
        raise ConfigError(f"no finished dpgate results under {outdir!r}/dpgate/tests", path="outdir")
    base = {r.get("name"): r for r in load_records(baseline)} if baseline else {}
    os.makedirs(dest, exist_ok=True)
    by_nf: Dict[str, List[Dict]] = defaultdict(list)
    for rec in records:
        nf, size, cores = _case(rec)
        m = rec["metrics"]
        b = base.get(rec.get("name"), {}).get("metrics", {})
        by_nf[nf].append({
            "name": rec["name"], "size": size, "cores": cores, "ndr": float(m["ndr_pps"]),
            "pdr": float(m["pdr_pps"]), "cpp": m.get("cpp"), "cpp_busy": m.get("cpp_busy"),
            "cpp_sut": m.get("cpp_sut_measured"), "ipc": m.get("ipc", "n/a"), "status": rec.get("status", "?"),
            "message": rec.get("message", ""), "limited_by": m.get("limited_by", ""),
            "base_ndr": float(b["ndr_pps"]) if "ndr_pps" in b else None,
        })
    order = {"64B": 0, "IMIX": 1}
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>dpgate sign-off report</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
             "td,th{border:1px solid #999;padding:3px 8px;text-align:right}.FAIL{background:#f8d0d0}"
             ".PASS{background:#d8f0d8}</style></head><body><h1>dpgate sign-off report</h1>",
             f"<p>results: {html.escape(os.path.abspath(outdir))}"
             + (f"; baseline: {html.escape(os.path.abspath(baseline))}" if baseline else "") + "</p>"]
    for nf in sorted(by_nf):
        rows = sorted(by_nf[nf], key=lambda r: (order.get(r["size"], 2), r["size"], r["cores"]))
        png = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', nf)}.png"
        _plot(nf, rows, os.path.join(dest, png))
        parts.append(f"<h2>{html.escape(nf)}</h2><img src='{png}' alt='NDR/PDR of {html.escape(nf)}'>")
        parts.append("<table><tr><th>test</th><th>NDR Mpps</th><th>PDR Mpps</th><th>CPP</th><th>CPP busy</th>"
                     "<th>CPP SUT</th><th>IPC</th><th>vs baseline</th><th>limited by</th><th>verdict</th></tr>")
        for r in rows:
            delta = (f"{(r['ndr'] - r['base_ndr']) / r['base_ndr'] * 100:+.1f} %" if r["base_ndr"] else "-")
            parts.append(
                f"<tr class='{r['status']}'><td style='text-align:left'>{html.escape(r['name'])}</td>"
                f"<td>{r['ndr'] / 1e6:.3f}</td><td>{r['pdr'] / 1e6:.3f}</td><td>{_fmt(r['cpp'])}</td>"
                f"<td>{_fmt(r['cpp_busy'])}</td><td>{_fmt(r['cpp_sut'])}</td><td>{html.escape(str(r['ipc']))}</td>"
                f"<td>{delta}</td><td>{html.escape(str(r['limited_by']))}</td>"
                f"<td style='text-align:left'>{r['status']} {html.escape(r['message'])}</td></tr>")
        parts.append("</table>")
        speedups = _speedups(rows)
        if speedups:
            parts.append("<p>" + "<br>".join(html.escape(s) for s in speedups) + "</p>")
    parts.append("</body></html>")
    path = os.path.join(dest, "index.html")
    with open(path, "w") as fh:
        fh.write("\n".join(parts))
    return path


def _fmt(v) -> str:
    return f"{v:.0f}" if isinstance(v, (int, float)) else "-"


def _speedups(rows: List[Dict]) -> List[str]:
    from .metrics import multi_core_speedup

    out = []
    by_size: Dict[str, Dict[str, float]] = defaultdict(dict)
    for r in rows:
        by_size[r["size"]][r["cores"]] = r["ndr"]
    for size, cores in sorted(by_size.items()):
        one = cores.get("1C")
        for tag, pps in sorted(cores.items()):
            m = re.fullmatch(r"(\d+)C", tag)
            if one and m and int(m.group(1)) > 1:
                s = multi_core_speedup(one, pps, int(m.group(1)))
                out.append(f"{size}: {tag} speedup {s.measured:.2f}x vs perfect {s.ideal:.0f}x "
                           f"({s.deviation_pct:+.1f} %)")
    return out


def add_parser(sub) -> None:
    r = sub.add_parser("report", help="static HTML sign-off report with PNG plots")
    r.add_argument("outdir", help="output directory of a run (with dpgate/tests/)")
    r.add_argument("--baseline", default=None, help="output directory of the baseline run")
    r.add_argument("--out", default=None, help="report directory (default <outdir>/signoff)")
    r.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    path = build_report(args.outdir, args.out or os.path.join(args.outdir, "signoff"), args.baseline)
    print(f"report: {os.path.abspath(path)}")
    return 0
