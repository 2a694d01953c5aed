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


#: Robot's messages for a test the run's stop cut short: the one running when a signal came
#: (``Execution terminated by signal``) and those after it or after a fatal error.
STOPPED_MARKS = ("Execution terminated by signal", "Test execution stopped due to a fatal error")


def stopped_by_run(rec: Dict[str, Any]) -> bool:
    """Whether a test's FAIL is Robot's for a run stopped around it (Ctrl-C, SIGTERM, a fatal
    error earlier), not a verdict on the SUT: it did not measure to its end, and JUnit says so
    with ``<error>`` ("not run to its end"), so that a CI reader does not count it as a
    performance failure (the run's exit status is already 130/143).

    >>> stopped_by_run({"status": "FAIL", "message": "Test execution stopped due to a fatal error."})
    True
    >>> stopped_by_run({"status": "FAIL", "message": "NDR 0.212 Mpps < floor 0.250 Mpps (-15.2 %)"})
    False
    """
    message = rec.get(F.MESSAGE) or ""
    return rec.get(F.STATUS) == "FAIL" and any(mark in message for mark in STOPPED_MARKS)


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
    if stopped_by_run(rec):
        tc.result = [junitparser.Error(f"not run to its end: the run was stopped ({message})")]
    elif status == "FAIL":
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
