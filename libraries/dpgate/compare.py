"""Regression check against history (jumpavg), history store, and CI metric files.

    dpgate history add results/ --store history/ [--commit SHA]
    dpgate compare results/ --history history/ [--min-change 3]   # exit 1 on regression

History: one JSON line per run and test in ``<store>/<testbed>/<test-id>.jsonl`` with the
commit (``--commit``, else CI_COMMIT_SHA / GIT_COMMIT), time, NDR and PDR.

Verdict per test: jumpavg classifies the history plus the current value into groups of
similar averages; the current run is a ``regression``/``progression`` only when jumpavg
puts it in a new group with that comment **and** it differs from the previous group's
average by at least ``min_change`` (default 3 %), so a single noisy run does not flap.
Otherwise ``normal``; ``no history`` when the test has none. A drop of a result that sits
at the generator's ceiling (``limited_by=generator``) is ``generator-limited``, not a
regression: the SUT kept up with everything the generator could send.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence

from .errors import ConfigError
from .results import load_records, test_id

METRICS = ("ndr_pps", "pdr_pps")


@dataclass(frozen=True)
class Verdict:
    test: str
    metric: str
    verdict: str  # regression | progression | normal | no history | generator-limited
    current: float
    baseline: Optional[float]
    change_pct: Optional[float]
    history_len: int

    def line(self) -> str:
        if self.baseline is None:
            return f"{self.test} {self.metric}: {self.verdict} (current {self.current / 1e6:.3f} Mpps)"
        return (f"{self.test} {self.metric}: {self.verdict}: {self.current / 1e6:.3f} Mpps vs "
                f"{self.baseline / 1e6:.3f} Mpps ({self.change_pct:+.1f} %, {self.history_len} runs of history)")


def classify_current(history: Sequence[float], current: Sequence[float], min_change: float = 0.03) -> Verdict:
    """Classify ``current`` (one or more samples of this run) against ``history``.

    >>> classify_current([10.0] * 20, [10.1]).verdict
    'normal'
    >>> classify_current([10.0, 10.1, 9.9] * 7, [8.5, 8.6, 8.4]).verdict
    'regression'
    """
    import jumpavg

    cur = sum(current) / len(current)
    if not history:
        return Verdict("", "", "no history", cur, None, None, 0)
    values: List = list(history) + [list(current) if len(current) > 1 else current[0]]
    groups = jumpavg.classify(values)
    last = groups[-1]
    if len(groups) == 1 or len(last) > 1:
        # the current run joined an existing group: compare with the group without it
        base_vals = history[-(len(last) - 1):] if len(last) > 1 else history
        baseline = sum(base_vals) / len(base_vals)
        comment = "normal"
    else:
        prev = groups[-2]
        baseline = prev.stats.avg
        comment = last.comment
    change = (cur - baseline) / baseline if baseline else 0.0
    verdict = comment if comment in ("regression", "progression") and abs(change) >= min_change else "normal"
    return Verdict("", "", verdict, cur, baseline, change * 100, len(history))


def history_path(store: str, testbed: str, longname: str) -> str:
    return os.path.join(store, testbed or "unknown", test_id(longname) + ".jsonl")


def read_history(store: str, testbed: str, longname: str) -> List[Dict]:
    path = history_path(store, testbed, longname)
    if not os.path.exists(path):
        return []
    out = []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError:
                    raise ConfigError(f"line {n} is not JSON (corrupted history?)", path) from None
    return out


def add_to_history(outdir: str, store: str, commit: Optional[str] = None) -> int:
    commit = commit or os.environ.get("CI_COMMIT_SHA") or os.environ.get("GIT_COMMIT") or "unknown"
    n = 0
    for rec in load_records(outdir):
        m = rec.get("metrics", {})
        if rec.get("status") not in ("PASS", "FAIL") or "ndr_pps" not in m:
            continue
        path = history_path(store, rec.get("testbed", ""), rec["longname"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as fh:
            fh.write(json.dumps({"commit": commit, "time": rec.get("started", time.time()),
                                 "sut_version": rec.get("sut_version"),
                                 **{k: m[k] for k in METRICS if k in m}}) + "\n")
        n += 1
    return n


def compare(outdir: str, store: str, min_change: float = 0.03) -> List[Verdict]:
    out = []
    for rec in load_records(outdir):
        m = rec.get("metrics", {})
        hist = read_history(store, rec.get("testbed", ""), rec["longname"])
        for metric in METRICS:
            if metric not in m:
                continue
            v = classify_current([h[metric] for h in hist if metric in h], [float(m[metric])], min_change)
            if m.get("limited_by") == "generator" and v.verdict == "regression":
                # NDR/PDR at the generator's ceiling measure the generator, not the SUT: the
                # SUT kept up with everything sent, so this cannot be a SUT regression.
                v = Verdict("", "", "generator-limited", v.current, v.baseline, v.change_pct, v.history_len)
            out.append(Verdict(rec.get("name", rec["longname"]), metric, v.verdict, v.current, v.baseline,
                               v.change_pct, v.history_len))
    return out


# -- CI metric files ------------------------------------------------------------------------
def _num_metrics(rec: Dict) -> Dict[str, float]:
    return {k: float(v) for k, v in sorted((rec.get("metrics") or {}).items())
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def write_openmetrics(records: Iterable[Dict], path: str) -> str:
    """GitLab metrics report: ``dpgate_<metric>{test="...",suite="..."} <value>``."""
    lines = []
    for rec in records:
        labels = f'test="{_esc(rec.get("name", ""))}",suite="{_esc(rec.get("suite", ""))}"'
        for key, value in _num_metrics(rec).items():
            lines.append(f"dpgate_{key}{{{labels}}} {value:.6g}")
        lines.append(f'dpgate_passed{{{labels}}} {1 if rec.get("status") == "PASS" else 0}')
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
            m = r.get("metrics", {})
            w.writerow([r.get("name", ""), r.get("status", ""), m.get("ndr_pps", ""), m.get("pdr_pps", ""),
                        m.get("cpp", ""), m.get("trials", ""), m.get("search_seconds", "")])
    return path


# -- command line ------------------------------------------------------------------------------
def add_parser(sub) -> None:
    c = sub.add_parser("compare", help="compare a run with the history of the same tests (jumpavg)")
    c.add_argument("outdir", help="output directory of the run (with dpgate/tests/)")
    c.add_argument("--history", required=True, help="history store directory")
    c.add_argument("--min-change", type=float, default=3.0, help="minimum relative change in %% (default 3)")
    c.set_defaults(func=cmd_compare)
    h = sub.add_parser("history", help="history store: 'add' a run's results")
    h.add_argument("action", choices=("add",))
    h.add_argument("outdir")
    h.add_argument("--store", required=True)
    h.add_argument("--commit", default=None)
    h.set_defaults(func=cmd_history)


def cmd_compare(args) -> int:
    if not os.path.isdir(os.path.join(args.outdir, "dpgate", "tests")):
        raise ConfigError(f"{args.outdir!r} has no dpgate/tests/ results: pass the --outdir of a dpgate gate run",
                          path="outdir")
    verdicts = compare(args.outdir, args.history, args.min_change / 100.0)
    for v in verdicts:
        print(v.line())
    bad = [v for v in verdicts if v.verdict == "regression"]
    print(f"{len(bad)} regression(s) in {len(verdicts)} checks", file=sys.stderr)
    return 1 if bad else 0


def cmd_history(args) -> int:
    n = add_to_history(args.outdir, args.store, args.commit)
    print(f"added {n} test result(s) to {args.store}")
    return 0
