"""Tables and sections of the ``dpgate report`` page (see :mod:`dpgate.outputs.report`).

:class:`Case` is one test of the report (identity parsed from its CSIT-style name, and its
numbers); the section builders turn a list of cases into HTML and write their PNG plots
(via :mod:`dpgate.outputs.report_plots`) into the report directory: efficiency at 64 B,
NDR/PDR per NF, HT and multi-core speedups, TMAM level 1 and latency.
"""

from __future__ import annotations

import html
import os
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from dpgate.metrics import multi_core_speedup
from dpgate.model.names import CASE_NAME
from dpgate.model.record import F
from dpgate.outputs import report_plots as plots
from dpgate.telemetry import TMAM_KEYS
from dpgate.telemetry.tmam import Tmam, plot_tmam_bars

_SIZE_ORDER = {"64B": 0, "IMIX": 1}


@dataclass(frozen=True)
class Case:
    """One test of the report: identity parsed from its CSIT-style name, and its numbers."""

    name: str
    nf: str
    size: str
    threads: Optional[int]  # None: the name has no thread count (embedded "1c")
    cores: int  # physical cores
    status: str
    message: str
    metrics: Dict[str, Any]
    latency: Optional[Dict[str, Any]] = None

    @property
    def tag(self) -> str:
        return f"{self.threads}T{self.cores}C" if self.threads else f"{self.cores}C"

    @property
    def ht(self) -> bool:
        return bool(self.threads and self.threads > self.cores)

    def num(self, key: str) -> Optional[float]:
        v = self.metrics.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def text(self, key: str) -> str:
        """A metric as shown in a table: a number, or the host's reason, or '-'."""
        v = self.metrics.get(key)
        if isinstance(v, bool) or v is None:
            return "-" if v is None else str(v)
        if isinstance(v, (int, float)):
            return f"{v:.2f}" if abs(v) < 10 else f"{v:.0f}"
        return str(v)


def case_of(rec: Dict[str, Any]) -> Case:
    name = rec.get(F.NAME, "?")
    m = CASE_NAME.match(name)
    metrics = rec.get(F.METRICS) or {}
    if m:
        size, cores = m.group("size").upper(), int(m.group("cores"))
        threads = int(m.group("threads")) if m.group("threads") else None
        nf = rec.get(F.NF) or m.group("rest")
    else:
        size, cores, threads = str(metrics.get("frame_size", "?")), int(metrics.get("cores", 1) or 1), None
        nf = rec.get(F.NF, "?")
    return Case(
        name,
        nf,
        size,
        threads,
        cores,
        rec.get(F.STATUS, "?"),
        rec.get(F.MESSAGE, ""),
        metrics,
        rec.get(F.LATENCY) if isinstance(rec.get(F.LATENCY), dict) else None,
    )


def pct(cur: Optional[float], base: Optional[float]) -> str:
    return f"{(cur - base) / base * 100:+.1f} %" if cur is not None and base else "-"


def esc(text: Any) -> str:
    return html.escape(str(text))


def table(head: Sequence[str], rows: Sequence[Sequence[Any]], classes: Optional[Sequence[str]] = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>"]
    for i, row in enumerate(rows):
        cls = f" class='{esc(classes[i])}'" if classes else ""
        left = " style='text-align:left'"
        cells = "".join(
            f"<td{left if j in (0, len(row) - 1) else ''}>{esc(c)}</td>" for j, c in enumerate(row)
        )
        out.append(f"<tr{cls}>{cells}</tr>")
    return "\n".join(out) + "</table>"


def img(dest: str, name: str, alt: str) -> str:
    if not os.path.exists(os.path.join(dest, name)):
        raise RuntimeError(f"report plot {name} was not written")  # pragma: no cover - plots raise first
    return f"<img src='{esc(name)}' alt='{esc(alt)}'>"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def efficiency_section(cases: List[Case], dest: str) -> str:
    sel = [c for c in cases if c.size == "64B"] or cases
    sel = sorted(sel, key=lambda c: (c.nf, c.cores, c.threads or 0))
    size = sel[0].size if sel else "64B"
    reasons: List[str] = []

    def cell(c: Case, key: str) -> str:
        text = c.text(key)
        if text.startswith("not supported"):
            if text not in reasons:
                reasons.append(text)
            return f"n/s [{reasons.index(text) + 1}]"
        return text

    rows = [
        [
            f"{c.nf} {c.tag}",
            f"{(c.num('ndr_pps') or 0.0) / 1e6:.3f}",
            cell(c, "ipp"),
            cell(c, "ipc"),
            c.text("cpp"),
            cell(c, "cpp_measured"),
            c.text("cpp_sut_measured"),
            c.text("cpp_busy"),
        ]
        for c in sel
    ]
    html_table = table(
        [
            f"NF, cores ({size})",
            "NDR Mpps",
            "IPP",
            "IPC",
            "CPP derived",
            "CPP perf",
            "CPP SUT-reported",
            "CPP busy",
        ],
        rows,
    )
    if reasons:
        html_table += "<p>" + "<br>".join(f"n/s [{i}]: {esc(r)}" for i, r in enumerate(reasons, 1)) + "</p>"
    plot_rows = [
        {
            "label": f"{c.nf} {c.tag}",
            "ipp": c.num("ipp"),
            "ipc": c.num("ipc"),
            "cpp": c.num("cpp"),
            "mpps": (c.num("ndr_pps") or 0) / 1e6,
        }
        for c in sel
    ]
    plots.efficiency_bars(plot_rows, os.path.join(dest, "efficiency.png"))
    return (
        "<h2>Efficiency (seed 000 Tables 4-5, Figures 7, 9, 10, 11)</h2>"
        "<p>CPP derived = core Hz x cores / NDR pps; CPP perf = cycles counted by perf / packets; "
        "CPP SUT-reported = the SUT's own counter (testpmd, OVS PMD); CPP busy = SUT core busy time x Hz / "
        "forwarded pps. They are related by CPP = IPP / IPC.</p>"
        + html_table
        + img(dest, "efficiency.png", "efficiency bars")
    )


def per_nf_section(cases: List[Case], dest: str) -> str:
    parts = []
    by_nf: Dict[str, List[Case]] = defaultdict(list)
    for c in cases:
        by_nf[c.nf].append(c)
    for nf in sorted(by_nf):
        rows = sorted(by_nf[nf], key=lambda c: (_SIZE_ORDER.get(c.size, 2), c.size, c.cores, c.threads or 0))
        png = f"nf-{slug(nf)}.png"
        plots.throughput_bars(
            nf,
            [
                {
                    "size": c.size,
                    "cores": c.tag,
                    "ndr": c.num("ndr_pps") or 0.0,
                    "pdr": c.num("pdr_pps") or 0.0,
                }
                for c in rows
            ],
            os.path.join(dest, png),
        )
        html_table = table(
            ["test", "NDR Mpps", "PDR Mpps", "CPP", "limited by", "search"],
            [
                [
                    c.name,
                    f"{(c.num('ndr_pps') or 0.0) / 1e6:.3f}",
                    f"{(c.num('pdr_pps') or 0.0) / 1e6:.3f}",
                    c.text("cpp"),
                    c.text("limited_by"),
                    f"{c.text('search_profile')}, {c.text('trials')} trials, {c.text('search_seconds')} s",
                ]
                for c in rows
            ],
            [c.status for c in rows],
        )
        parts.append(f"<h3>{esc(nf)}</h3>{img(dest, png, f'NDR/PDR of {nf}')}{html_table}")
    return "<h2>Throughput per NF</h2>" + "\n".join(parts)


def speedup_data(
    cases: List[Case],
) -> Tuple[List[Tuple[str, float]], Dict[Tuple[str, str], Dict[str, List[Tuple[int, float]]]]]:
    """(HT points ``("nf size NC", 2T/1T ratio)``, multi-core series per (nf, size): label -> [(cores, pps)])."""
    by_key: Dict[Tuple[str, str], Dict[Tuple[int, bool], float]] = defaultdict(dict)
    for c in cases:
        pps = c.num("ndr_pps")
        if pps:
            by_key[(c.nf, c.size)][(c.cores, c.ht)] = pps
    ht_points: List[Tuple[str, float]] = []
    series: Dict[Tuple[str, str], Dict[str, List[Tuple[int, float]]]] = {}
    for (nf, size), vals in sorted(by_key.items()):
        for (cores, ht), pps in sorted(vals.items()):
            if ht and (cores, False) in vals:
                ht_points.append((f"{nf} {size} {cores}C", pps / vals[(cores, False)]))
        lines: Dict[str, List[Tuple[int, float]]] = defaultdict(list)
        for (cores, ht), pps in vals.items():
            lines["HT" if ht else "no HT"].append((cores, pps))
        lines = {k: v for k, v in lines.items() if len(v) > 1 and 1 in dict(v)}
        if lines:
            series[(nf, size)] = lines
    return ht_points, series


def speedups_section(cases: List[Case], dest: str) -> str:

    ht_points, series = speedup_data(cases)
    if not ht_points and not series:
        return (
            "<h2>Speedups (seed 000 Figures 13-14)</h2><p>Not applicable: these results hold each NF at one "
            "core configuration (e.g. the embedded testbed's single SUT core). Run lab suites at 1, 2 and 4 cores "
            "with HT off and on to get the HT and multi-core speedup plots.</p>"
        )
    parts = ["<h2>Speedups (seed 000 Figures 13-14)</h2>"]
    if ht_points:
        plots.ht_speedup_bars(ht_points, os.path.join(dest, "ht-speedup.png"))
        parts.append(img(dest, "ht-speedup.png", "HT speedup"))
        parts.append(table(["NF, size, cores", "HT speedup"], [[k, f"{v:.2f}x"] for k, v in ht_points]))
    rows = []
    for (nf, size), lines in sorted(series.items()):
        png = f"multicore-{slug(nf)}-{slug(size)}.png"
        plots.multicore_lines(f"{nf} {size}", lines, os.path.join(dest, png))
        parts.append(img(dest, png, f"multi-core speedup of {nf} {size}"))
        for label, pts in sorted(lines.items()):
            one = dict(pts)[1]
            for cores, pps in sorted(pts):
                if cores > 1:
                    s = multi_core_speedup(one, pps, cores)
                    rows.append(
                        [
                            f"{nf} {size} {label} {cores}C",
                            f"{s.measured:.2f}x",
                            f"{s.ideal:.0f}x",
                            f"{s.deviation_pct:+.1f} %",
                        ]
                    )
    if rows:
        parts.append(table(["NF, size, HT, cores", "speedup", "perfect", "vs perfect"], rows))
    return "\n".join(parts)


def tmam_section(cases: List[Case], dest: str) -> str:

    have = {
        f"{c.nf} {c.size} {c.tag}": Tmam(*(c.num(k) or 0.0 for k in TMAM_KEYS))
        for c in cases
        if all(c.num(k) is not None for k in TMAM_KEYS)
    }
    if not have:
        reasons = sorted(
            {
                str(c.metrics.get("tmam_retiring"))
                for c in cases
                if isinstance(c.metrics.get("tmam_retiring"), str)
            }
        )
        why = "; ".join(reasons) if reasons else "no TMAM telemetry in these results"
        return f"<h2>TMAM level 1 (seed 000 Figure 20)</h2><p>Not available: {esc(why)}</p>"
    plot_tmam_bars(have, os.path.join(dest, "tmam.png"))
    rows = [
        [
            k,
            *(
                f"{getattr(t, a) * 100:.1f} %"
                for a in ("retiring", "bad_speculation", "frontend_bound", "backend_bound")
            ),
        ]
        for k, t in have.items()
    ]
    return (
        "<h2>TMAM level 1 (seed 000 Figure 20)</h2>"
        + img(dest, "tmam.png", "TMAM level 1")
        + table(["test", "Retiring", "Bad Speculation", "Frontend Bound", "Backend Bound"], rows)
    )


def latency_section(cases: List[Case]) -> str:
    """Latency trials (lab runs with TRex latency streams): per test, load and direction."""
    rows = []
    for c in cases:
        for label, entry in sorted((c.latency or {}).items(), key=lambda kv: -kv[1].get("load_pps", 0)):
            for direction, lat in sorted((entry.get("directions") or {}).items()):
                if isinstance(lat, dict):
                    rows.append(
                        [
                            f"{c.name} {label}",
                            f"{entry.get('load_pps', 0) / 1e6:.3f}",
                            direction,
                            *(
                                str(lat.get(k, "-"))
                                for k in ("min_us", "avg_us", "p50_us", "p99_us", "p99.9_us", "max_us")
                            ),
                        ]
                    )
    if not rows:
        return ""
    return "<h2>Latency (us)</h2>" + table(
        ["test, load", "Mpps", "direction", "min", "avg", "p50", "p99", "p99.9", "max"], rows
    )
