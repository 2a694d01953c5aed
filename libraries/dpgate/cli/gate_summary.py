"""What ``dpgate gate`` prints after the run: the results table, the regression and paired
checks' verdicts, from the records the tests wrote."""

from __future__ import annotations

from typing import Dict, List

from dpgate.model.record import F
from dpgate.outputs.junit import stopped_by_run
from dpgate.telemetry.paired_notice import RISE_SEEN


def history_summary(records: List[Dict], hist: str) -> str:
    """The regression check's verdicts as the tests recorded them."""
    lines = [f"regression check against {hist}:"]
    for r in records:
        for g in r.get(F.GATES, []):
            if g.get("name", "").startswith("regression_"):
                lines.append(f"  {g['message']}")
    if len(lines) == 1:
        lines.append("  (no test reached the regression check)")
    return "\n".join(lines)


def paired_summary(records: List[Dict]) -> str:
    """The paired check's verdicts (``--paired``), one line per test; empty without it.

    >>> print(paired_summary([{"name": "t", "gates": [{"name": "cpp_paired", "passed": True, "message": "m"}]}]))
    paired check against a baseline twin beside the SUT:
      t: PASS: m
    >>> seen = {"name": "u", "metrics": {"cpp_paired_rise_seen": True}, "gates": [{"name": "cpp_paired", "passed": True, "message": "m"}]}
    >>> print(paired_summary([seen]).splitlines()[1])
      u: PASS, RISE SEEN: m
    """
    lines = []
    for r in records:
        seen = (r.get(F.METRICS) or {}).get(RISE_SEEN) is True
        for g in r.get(F.GATES, []):
            if g.get("name") == "cpp_paired":
                verdict = "SKIP" if g.get("skipped") else ("PASS" if g.get("passed") else "FAIL")
                verdict += ", RISE SEEN" if seen and verdict == "PASS" else ""
                lines.append(f"  {r.get(F.NAME, '?')}: {verdict}: {g.get('message', '')}")
    return "\n".join(["paired check against a baseline twin beside the SUT:"] + lines) if lines else ""


def summary_table(records: List[Dict]) -> str:
    head = f"{'test':44s} {'NDR Mpps':>9s} {'PDR Mpps':>9s} {'CPP':>8s}  verdict"
    lines = [head, "-" * len(head)]
    for r in records:
        m = r.get(F.METRICS, {})
        ndr = f"{m['ndr_pps'] / 1e6:.3f}" if "ndr_pps" in m else "-"
        pdr = f"{m['pdr_pps'] / 1e6:.3f}" if "pdr_pps" in m else "-"
        cpp = f"{m['cpp']:.0f}" if isinstance(m.get("cpp"), (int, float)) else "-"
        verdict = "NOT RUN" if stopped_by_run(r) else r.get(F.STATUS, "?")
        if verdict != "PASS" and r.get(F.MESSAGE):
            verdict += ": " + r[F.MESSAGE].splitlines()[0][:100]
        lines.append(f"{r.get(F.NAME, '?')[:44]:44s} {ndr:>9s} {pdr:>9s} {cpp:>8s}  {verdict}")
    if len(lines) == 2:
        lines.append("(no test produced a result)")
    return "\n".join(lines)
