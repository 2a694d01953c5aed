"""Replay a history store with other ``--history-span`` values: which span your own runs allow.

The regression check floors each allowance at the case's declared noise until the history's runs
span ``--history-span`` hours (default 24, :data:`dpgate.regression.classify.HISTORY_SPAN_H`):
runs back to back see one hour's scatter, and a host drifts more over a day. A shorter span
lets the history's own scatter decide sooner, so the check catches smaller steps in a CI job's
first day, and FAILs more healthy runs where the host drifts. Which way that trade falls
depends on the host; the history store holds the runs to measure it on.

:func:`replay` judges every stored run of every test, in time order, against the runs stored
before it, as the gate would have judged it with each span: a ``regression`` on a stored run is
a FAIL that span would have given a run the gate passed (the store keeps passed runs only, and
no injected ones), unless the run's trials were disturbed (held, as the gate holds them). A run
a span FAILs is left out of that span's history for the runs after it, as the gate, which
stores passed runs only, would have left it out. Runs from other outputs (``against``: e.g. the
records of runs with ``--inject-cost 10``) are judged against the stored runs before them that
the span kept: what each span catches of a known step.

Each run is judged with the allowances it declared (kept in the store since this module was
written, ``dpgate.regression.history.DECLARED``); an older entry takes its case's from
``noises`` (a thresholds file), found by the entry's NF and frame size or, for entries without
them, by the test name's ``<frame>-<n>c-<nf>-<kind>`` form.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from statistics import median
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from dpgate.regression.classify import Verdict
from dpgate.regression.compare import held_reason, verdicts_against
from dpgate.regression.history import DECLARED, read_history
from dpgate.telemetry.disturbance import DISTURBANCE_MAX

#: a case's declared allowances by (NF, frame size), e.g. from a thresholds file (cli/history.py)
Noises = Callable[[str, str], Dict[str, float]]

_NAME = re.compile(r"^(?P<frame>\d+B|IMIX)-\d+c-(?P<nf>.+)-(?:ndrpdr|mrr)$", re.IGNORECASE)


def case_of(entry: Dict, name: str) -> Optional[Tuple[str, str]]:
    """The (NF, frame size) of a stored run: its own, else read from the test's name.

    >>> case_of({}, "64B-1c-linux-bridge-ndrpdr"), case_of({"nf": "vpp-ip4", "frame_size": 64}, "x")
    (('linux-bridge', '64B'), ('vpp-ip4', '64'))
    >>> case_of({}, "my-own-test") is None
    True
    """
    if entry.get("nf") and entry.get("frame_size") is not None:
        return str(entry["nf"]), str(entry["frame_size"])
    hit = _NAME.match(name)
    return (hit["nf"], hit["frame"]) if hit else None


def entry_record(entry: Dict, longname: str, testbed: str, noises: Optional[Noises] = None) -> Dict:
    """A stored run as a record the check judges: its metrics, its samples, and the allowances
    it declared (older entries: those ``noises`` gives its case)."""
    metrics = {k: v for k, v in entry.items() if k not in ("samples", "commit", "time")}
    if noises is not None and not any(k in entry for k in DECLARED):
        case = case_of(entry, longname.rsplit(".", 1)[-1])
        if case is not None:
            metrics.update(noises(*case))
    return {
        "name": longname.rsplit(".", 1)[-1],
        "longname": longname,
        "testbed": testbed,
        "started": entry.get("time"),
        "metrics": metrics,
        "samples": entry.get("samples") or {},
    }


@dataclass
class SpanResult:
    """What the check said of the runs it judged with one ``--history-span``."""

    span_h: float
    judged: int = 0  # runs judged against at least one earlier run
    fails: List[Verdict] = field(default_factory=list)  # regressions not held
    held: List[Verdict] = field(default_factory=list)  # regressions held: disturbed trials
    inconclusive: int = 0
    failed_runs: int = 0
    allowances: Dict[str, List[float]] = field(default_factory=dict)  # by metric, in %

    def line(self, what: str = "stored (passed) runs", left_out: bool = True) -> str:
        """One line of what the span said; ``left_out``: its FAILed runs left the history after
        them (stored runs; not ``--against`` runs, which never enter it)."""
        allow = ", ".join(f"{k} {median(v):.1f} %" for k, v in sorted(self.allowances.items()) if v)
        return (
            f"--history-span {self.span_h:g}: {self.failed_runs} of {self.judged} {what} FAIL"
            f" ({len(self.fails)} checks), {len(self.held)} held (disturbed), {self.inconclusive}"
            f" inconclusive; median allowance {allow or 'none'}"
            + (
                f"; {self.failed_runs} left out of the history after them"
                if left_out and self.failed_runs
                else ""
            )
        )


def _judge(
    result: SpanResult,
    rec: Dict,
    before: Sequence[Dict],
    min_change: float,
    disturbance_max: float,
) -> bool:
    """Judge ``rec`` against ``before`` into ``result``; True when the span FAILs it."""
    verdicts = verdicts_against(rec, list(before), min_change, history_span_h=result.span_h)
    if not any(v.baseline is not None for v in verdicts):
        return False
    result.judged += 1
    failed = False
    for v in verdicts:
        if v.allowance_pct is not None:
            result.allowances.setdefault(v.metric, []).append(v.allowance_pct)
        if v.verdict == "inconclusive":
            result.inconclusive += 1
        elif v.verdict == "regression":
            if held_reason(rec["metrics"], v, disturbance_max):
                result.held.append(v)
            else:
                result.fails.append(v)
                failed = True
    result.failed_runs += failed
    return failed


def stored_tests(store: str) -> List[Tuple[str, str, List[Dict]]]:
    """Every test in ``store``: (testbed, long name, its runs in time order)."""
    out = []
    for path in sorted(glob.glob(os.path.join(store, "*", "*.jsonl"))):
        testbed = os.path.basename(os.path.dirname(path))
        longname = os.path.basename(path)[: -len(".jsonl")]
        runs = sorted(read_history(store, testbed, longname), key=lambda e: float(e.get("time") or 0))
        out.append((testbed, longname, runs))
    return out


def replay(
    store: str,
    spans: Iterable[float],
    min_change: float = 0.03,
    noises: Optional[Noises] = None,
    against: Sequence[Dict] = (),
    disturbance_max: float = DISTURBANCE_MAX,
) -> List[Tuple[SpanResult, SpanResult]]:
    """Per span: (the stored runs judged in order, each against the runs before it that the span
    kept, and the ``against`` records judged against the runs the span kept before each one's
    start)."""
    tests = stored_tests(store)
    out = []
    for span in spans:
        own, other = SpanResult(float(span)), SpanResult(float(span))
        kept: Dict[Tuple[str, str], List[Dict]] = {}
        for testbed, longname, runs in tests:
            history = kept.setdefault((testbed, longname), [])
            for entry in runs:
                rec = entry_record(entry, longname, testbed, noises)
                if not _judge(own, rec, history, min_change, disturbance_max):
                    history.append(entry)  # the gate stores passed runs only
        for rec in against:
            runs = kept.get((rec.get("testbed", ""), rec["longname"]), [])
            start = rec.get("started")
            before = [e for e in runs if start is None or float(e.get("time") or 0) < float(start)]
            _judge(other, rec, before, min_change, disturbance_max)
        out.append((own, other))
    return out
