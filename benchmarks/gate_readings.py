"""What benchmarks/gate_signal.py reads of one finished gate run: its JUnit case (verdict,
message, properties, every gate's line) and, from its trials.jsonl, the framework overhead
between trials, the frames back after their settle and the generator that ran each trial; and
the spreads its report prints (over all runs, and by the placement a cycles figure rests on).

Every figure of gate_signal's report but the overhead comes from the JUnit a CI user reads.
"""

from __future__ import annotations

import collections
import json
import math
import os
import statistics
import xml.etree.ElementTree as ET
from typing import Dict, List, Optional

from dpgate.telemetry.placement import CPP_KEY, SCALED_KEY, rests_where

#: Robot's message for a test whose suite setup failed: the run measured nothing.
SETUP_FAILED = "Parent suite setup failed"


def read_case(junit: str) -> Dict:
    """Verdict, message and numeric properties of the (single) testcase of a JUnit file; a
    failure in the suite's setup (the gate refused to run: nothing was measured) is ERROR,
    never FAIL, so that a refused injection does not count as a detection."""
    tree = ET.parse(junit)
    case = next(tree.iter("testcase"), None)
    if case is None:
        return {"verdict": "ERROR", "message": "no testcase in JUnit", "props": {}}
    verdict, message = "PASS", ""
    for tag, name in (("failure", "FAIL"), ("error", "ERROR"), ("skipped", "SKIP")):
        el = case.find(tag)
        if el is not None:
            verdict, message = name, (el.get("message") or el.text or "").strip()
            break
    if verdict == "FAIL" and message.startswith(SETUP_FAILED):
        verdict = "ERROR"  # refused before measuring (e.g. an uncalibrated --inject-cost): no verdict
    out = case.findtext("system-out") or ""
    # every gate's verdict line (``gate.regression_cpp=PASS: ...``) is in system-out
    gates = dict(
        ln.strip().split("=", 1) for ln in out.splitlines() if ln.strip().startswith("gate.") and "=" in ln
    )
    props: Dict[str, object] = {}
    for p in case.iter("property"):
        name, value = p.get("name", ""), p.get("value", "")
        try:
            props[name] = float(value)
        except ValueError:
            props[name] = value
    return {"verdict": verdict, "message": message, "props": props, "gates": gates}


def trial_gaps(trials_jsonl: str) -> Dict[str, List[float]]:
    """Framework overhead between consecutive trials of a run (s): the time between their
    ``time`` stamps (each trial's end) minus the later trial's intended duration; whatever the
    gate did between them (search arithmetic, counter reads, cpp_at_load holds) counts.
    ``search``: up to the paired check's first trial (its baseline's, marked
    ``details.paired_side``); ``paired``: from there (the twin's bring-up, the switches between
    the sides, a polling side's spin-up wait). ``late``: the trials' ``late_after_last_settle``
    (frames that came back after a settle gave them up); ``generator``: each trial's."""
    out: Dict[str, List] = {"search": [], "paired": [], "late": [], "generator": []}
    if not os.path.exists(trials_jsonl):
        return out
    with open(trials_jsonl) as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    first = next((i for i, t in enumerate(rows) if (t.get("details") or {}).get("paired_side")), len(rows))
    out["late"] = [
        late for t in rows if (late := (t.get("details") or {}).get("late_after_last_settle")) is not None
    ]
    out["generator"] = [str((t.get("details") or {}).get("generator") or "?") for t in rows]
    for i in range(1, len(rows)):
        gap = rows[i]["time"] - rows[i - 1]["time"] - rows[i]["intended_duration_s"]
        out["search" if i < first else "paired"].append(gap)
    return out


def read_run(outdir: str) -> Dict:
    """The case of a finished run's ``junit.xml`` (ERROR when the run left none), with the
    overhead between its trials (:func:`trial_gaps`)."""
    junit = os.path.join(outdir, "junit.xml")
    if not os.path.exists(junit):
        return {"verdict": "ERROR", "message": "no junit.xml", "props": {}, "gaps": trial_gaps("")}
    return {**read_case(junit), "gaps": trial_gaps(os.path.join(outdir, "dpgate", "trials.jsonl"))}


def overhead_line(runs: List[Dict]) -> str:
    """Median and p90 of the overhead between trials, the search's and the paired check's apart.

    >>> overhead_line([{"gaps": {"search": [0.010, 0.030, 0.020], "paired": [0.3, 0.04]}}])
    'overhead between search trials median 20 ms, p90 30 ms (3 gaps); paired trials median 170 ms, p90 300 ms (2)'
    >>> overhead_line([{"gaps": {"search": [0.01], "paired": [], "late": [0, 3, 0], "generator": ["tcpreplay"] * 3}}])
    'overhead between search trials median 10 ms, p90 10 ms (1 gaps); frames back after their settle 3 (in 1 of 3 trials); generator tcpreplay (3 trials)'
    """

    def stats(gaps: List[float]) -> str:
        g = sorted(gaps)
        p90 = g[max(0, math.ceil(0.9 * len(g)) - 1)]
        return f"median {statistics.median(g) * 1e3:.0f} ms, p90 {p90 * 1e3:.0f} ms"

    search, paired, late = (
        [g for r in runs for g in r["gaps"].get(k, [])] for k in ("search", "paired", "late")
    )
    text = (
        f"overhead between search trials {stats(search)} ({len(search)} gaps)" if search else "overhead n/a"
    )
    text += f"; paired trials {stats(paired)} ({len(paired)})" if paired else ""
    if late:
        text += f"; frames back after their settle {sum(late)} (in {sum(n > 0 for n in late)} of {len(late)} trials)"
    gens = collections.Counter(g for r in runs for g in r["gaps"].get("generator", []))
    if gens:  # tcpreplay starts a process per trial (tens of ms more): say which ran
        text += "; generator " + ", ".join(f"{g} ({n} trials)" for g, n in gens.most_common())
    return text


def spread(vals: List[float]) -> Optional[float]:
    """max/min - 1 of the positive values, None with fewer than two.

    >>> round(spread([1.0, 1.1]), 3), spread([1.0])
    (0.1, None)
    """
    v = [x for x in vals if isinstance(x, float) and x > 0]
    return max(v) / min(v) - 1 if len(v) >= 2 else None


def by_placement(props: List[Dict], metric: str) -> str:
    """The spread of a cycles figure over runs resting on one placement of the cores, as the
    history check compares them (``dpgate.telemetry.placement``: a far run only with far ones);
    empty for a throughput metric or when every run rests on one placement.

    >>> runs = [{"cpp_at_load": 5354.0, "cpp_at_load_placement": "far"}]
    >>> runs += [{"cpp_at_load": x, "cpp_at_load_placement": "near"} for x in (4786.0, 4554.0)]
    >>> by_placement(runs, "cpp_at_load"), by_placement(runs[1:], "cpp_at_load"), by_placement(runs, "ndr_pps")
    (' (by placement: near 2 runs +5.1 %, far 1 run n/a)', '', '')
    """
    if not metric.startswith("cpp_at_load"):
        return ""
    key = SCALED_KEY if metric.endswith("_scaled") else CPP_KEY
    groups: Dict[str, List[float]] = {}
    for p in props:
        if isinstance(p.get(metric), float):
            groups.setdefault(str(rests_where(p, key)), []).append(p[metric])
    if len(groups) < 2:
        return ""
    cells = [
        f"{k} {len(v)} run{'s' if len(v) > 1 else ''} {fmt(spread(v))}"
        for k, v in sorted(groups.items(), key=lambda kv: -len(kv[1]))
    ]
    return " (by placement: " + ", ".join(cells) + ")"


def fmt(x: Optional[float], pct: bool = True) -> str:
    if x is None:
        return "n/a"
    return f"{x * 100:+.1f} %" if pct else f"{x:.4g}"


def seen(r: Dict) -> bool:
    """Whether a run's paired check PASSed on a rise its pairs agree on (``cpp_paired_rise_seen``).

    >>> seen({"props": {"cpp_paired_rise_seen": "True"}, "gates": {"gate.cpp_paired": "PASS: m"}})
    True
    >>> seen({"props": {"cpp_paired_rise_seen": "True"}, "gates": {"gate.cpp_paired": "FAIL: m"}})
    False
    """
    passed = r.get("gates", {}).get("gate.cpp_paired", "").startswith("PASS")
    return passed and str(r["props"].get("cpp_paired_rise_seen")) == "True"
