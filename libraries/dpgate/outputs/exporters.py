"""CI metric files from a run's records: OpenMetrics (GitLab metrics report) and CSV
(Jenkins Plot plugin)."""

from __future__ import annotations

import csv
from typing import Dict, Iterable

from dpgate.model.record import F


def _num_metrics(rec: Dict) -> Dict[str, float]:
    return {
        k: float(v)
        for k, v in sorted((rec.get(F.METRICS) or {}).items())
        if isinstance(v, (int, float)) and not isinstance(v, bool)
    }


def write_openmetrics(records: Iterable[Dict], path: str) -> str:
    """GitLab metrics report: ``dpgate_<metric>{test="...",suite="..."} <value>``."""
    lines = []
    for rec in records:
        labels = f'test="{_esc(rec.get(F.NAME, ""))}",suite="{_esc(rec.get(F.SUITE, ""))}"'
        for key, value in _num_metrics(rec).items():
            lines.append(f"dpgate_{key}{{{labels}}} {value:.6g}")
        lines.append(f"dpgate_passed{{{labels}}} {1 if rec.get(F.STATUS) == 'PASS' else 0}")
    with open(path, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def write_csv(records: Iterable[Dict], path: str) -> str:
    """Jenkins Plot plugin CSV: a header of test names, one row of values per metric file."""
    recs = list(records)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["test", "status", "ndr_pps", "pdr_pps", "cpp", "trials", "search_seconds"])
        for r in recs:
            m = r.get(F.METRICS, {})
            w.writerow(
                [
                    r.get(F.NAME, ""),
                    r.get(F.STATUS, ""),
                    m.get("ndr_pps", ""),
                    m.get("pdr_pps", ""),
                    m.get("cpp", ""),
                    m.get("trials", ""),
                    m.get("search_seconds", ""),
                ]
            )
    return path
