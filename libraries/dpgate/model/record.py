"""One test's result record (``schemas/result-2.schema.json``) as a typed, frozen value.

The record is written field by field while the test runs (listener, keywords) and read by
JUnit, the gate summary, the report and the regression check. ``F`` names its fields once;
:class:`TestRecord` is the typed view of a finished record.

>>> rec = TestRecord.from_dict({"schema": SCHEMA, "test_id": "E.T", "longname": "E.T", "name": "T",
...                             "suite": "E", "status": "PASS", "metrics": {"ndr_pps": 1e6}})
>>> rec.status, rec.metrics["ndr_pps"], rec.to_dict()["name"]
('PASS', 1000000.0, 'T')
>>> TestRecord.from_dict({"name": "T"})
Traceback (most recent call last):
...
KeyError: 'record lacks required field(s): longname, schema, status, suite, test_id'
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

SCHEMA = "dpgate.result/2"
STATUSES = ("RUNNING", "PASS", "FAIL", "SKIP", "ERROR", "NOT RUN")


class F:
    """Record field names (the schema's top-level properties)."""

    SCHEMA = "schema"
    TEST_ID = "test_id"
    LONGNAME = "longname"
    NAME = "name"
    SUITE = "suite"
    TAGS = "tags"
    STATUS = "status"
    MESSAGE = "message"
    STARTED = "started"
    ELAPSED_S = "elapsed_s"
    TESTBED = "testbed"
    PREFIX = "prefix"
    NF = "nf"
    SUT_VERSION = "sut_version"
    COMMIT = "commit"
    PROFILE = "profile"
    METRICS = "metrics"
    SAMPLES = "samples"
    TRIALS = "trials"
    LATENCY = "latency"
    LATENCY_NOTE = "latency_note"
    GATES = "gates"


class G:
    """Field names of one entry of a record's ``gates`` list."""

    NAME = "name"
    PASSED = "passed"
    SKIPPED = "skipped"
    MESSAGE = "message"
    VALUE = "value"
    THRESHOLD = "threshold"


def gate_entry(
    name: str, passed: bool, message: str, value: Any, threshold: Any, skipped: bool = False
) -> Dict[str, Any]:
    """One ``gates`` entry; ``skipped`` appears only when true (inconclusive or policy skip).

    >>> gate_entry("ndr_min", False, "NDR 1 Mpps < floor 2 Mpps (-50.0 %)", 1e6, 2e6)["passed"]
    False
    >>> sorted(gate_entry("ipc_min", True, "not supported", None, 1.0, skipped=True))
    ['message', 'name', 'passed', 'skipped', 'threshold', 'value']
    """
    entry: Dict[str, Any] = {
        G.NAME: name,
        G.PASSED: passed,
        G.MESSAGE: message,
        G.VALUE: value,
        G.THRESHOLD: threshold,
    }
    if skipped:
        entry[G.SKIPPED] = True
    return entry


@dataclass(frozen=True)
class TestRecord:
    """A finished record; optional fields are ``None``/empty when the test did not set them."""

    __test__ = False  # not a pytest test class

    schema: str
    test_id: str
    longname: str
    name: str
    suite: str
    status: str
    tags: List[str] = field(default_factory=list)
    message: Optional[str] = None
    started: Optional[float] = None
    elapsed_s: Optional[float] = None
    testbed: Optional[str] = None
    prefix: Optional[str] = None
    nf: Optional[str] = None
    sut_version: Optional[str] = None
    commit: Optional[str] = None
    profile: Optional[str] = None
    metrics: Dict[str, Any] = field(default_factory=dict)
    samples: Dict[str, List[float]] = field(default_factory=dict)
    trials: List[Dict[str, Any]] = field(default_factory=list)
    latency: Optional[Dict[str, Any]] = None
    latency_note: Optional[str] = None
    gates: List[Dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TestRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        required = [
            f.name
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        missing = sorted(n for n in required if n not in data)
        if missing:
            raise KeyError(f"record lacks required field(s): {', '.join(missing)}")
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> Dict[str, Any]:
        """The fields that are set, as the JSON record stores them."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}
