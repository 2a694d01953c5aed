"""JUnit XML written by dpgate (not ``robot --xunit``, which drops every metric).

One testcase per Robot test, classname = suite, a property per metric, the gate failure
message with its numbers, and system-out with one ``key=value`` line per metric (GitLab
shows system-out, not properties; Jenkins shows properties with ``keepProperties: true``).

The file is rewritten after every test from the per-test records, so an aborted run still
leaves a valid file for the tests that finished; ``dpgate junit`` rebuilds it offline.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List

import junitparser
from junitparser import xunit2

from dpgate.model.record import F, G
from dpgate.outputs.results import metric_items


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def testcase(rec: Dict[str, Any]) -> xunit2.TestCase:
    tc = xunit2.TestCase(
        rec.get(F.NAME, rec.get(F.LONGNAME, "?")),
        classname=rec.get(F.SUITE, ""),
        time=float(rec.get(F.ELAPSED_S) or 0.0),
    )
    lines: List[str] = []
    for key, value in metric_items(rec):
        tc.add_property(key, _fmt(value))
        lines.append(f"{key}={_fmt(value)}")
    for gate in rec.get(F.GATES, []):
        verdict = "SKIP" if gate.get(G.SKIPPED) else ("PASS" if gate[G.PASSED] else "FAIL")
        lines.append(f"gate.{gate[G.NAME]}={verdict}: {gate[G.MESSAGE]}")
    status = rec.get(F.STATUS, "RUNNING")
    message = rec.get(F.MESSAGE, "")
    if status == "FAIL":
        tc.result = [junitparser.Failure(message or "failed")]
        if message:
            tc.result[0].text = message
    elif status == "SKIP":
        tc.result = [junitparser.Skipped(message or "skipped")]
    elif status not in ("PASS",):
        tc.result = [junitparser.Error(f"test did not finish (status {status}): {message}".strip())]
    tc.system_out = "\n".join(lines) + ("\n" if lines else "")
    return tc


def write_junit(records: Iterable[Dict[str, Any]], path: str, name: str = "dpgate") -> str:
    by_suite: Dict[str, xunit2.TestSuite] = {}
    for rec in records:
        suite = rec.get(F.SUITE, "dpgate")
        if suite not in by_suite:
            by_suite[suite] = xunit2.TestSuite(suite)
        by_suite[suite].add_testcase(testcase(rec))
    xml = xunit2.JUnitXml(name)
    for ts in by_suite.values():
        ts.update_statistics()
        xml.add_testsuite(ts)
    xml.update_statistics()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    xml.write(tmp, pretty=True)
    os.replace(tmp, path)
    return path
