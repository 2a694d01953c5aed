"""Per-test result records, written as they are produced so a crash loses nothing.

Layout under the run's output directory::

    dpgate/trials.jsonl            one line per trial, appended as each trial ends
    dpgate/tests/<test-id>.json    one record per test, rewritten as it progresses

A record is a plain JSON object, schema ``dpgate.result/2``
(``dpgate/schemas/result-2.schema.json``, documented in docs/results.md): test identity
(``test_id``, name, suite, tags), testbed, SUT version, commit, search profile, every
trial, NDR/PDR and derived metrics, samples for regression checks, latency, telemetry,
gate verdicts and the final status. Records are validated on read: a corrupted or
foreign file is one clear error naming the file and the field. Records of schema
``dpgate.result/1`` (before test_id/commit/trials existed) are read and upgraded.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import tempfile
import time
from typing import Any, Dict, Iterable, List, Optional

import jsonschema

from dpgate.model.errors import ConfigError
from dpgate.model.record import SCHEMA, F

OLD_SCHEMAS = ("dpgate.result/1",)
_SCHEMA_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "schemas", "result-2.schema.json"
)


def run_commit() -> Optional[str]:
    """The commit under test: ``DPGATE_COMMIT`` (``dpgate gate --commit``), else the CI's
    variable (GitLab ``CI_COMMIT_SHA``, Jenkins ``GIT_COMMIT``, GitHub ``GITHUB_SHA``)."""
    for var in ("DPGATE_COMMIT", "CI_COMMIT_SHA", "GIT_COMMIT", "GITHUB_SHA"):
        if os.environ.get(var):
            return os.environ[var]
    return None


def test_id(longname: str) -> str:
    """File-system safe id of a test: ``Embedded.Linux-Ip4.64B-1c-linux-ip4-ndrpdr``."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", longname).strip("_")[:200]


def atomic_write_json(path: str, data: Any) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp-")
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True, default=_jsonable)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if hasattr(obj, "__dataclass_fields__"):
        return dataclasses.asdict(obj)
    return str(obj)


def new_record(longname: str) -> Dict[str, Any]:
    """A valid record for a test that has just started (the listener fills in the rest)."""
    suite, _, name = longname.rpartition(".")
    return {
        F.SCHEMA: SCHEMA,
        F.LONGNAME: longname,
        F.TEST_ID: test_id(longname),
        F.NAME: name or longname,
        F.SUITE: suite,
        F.STATUS: "RUNNING",
        F.COMMIT: run_commit(),
    }


class ResultStore:
    """Writes trial lines and test records under ``<outdir>/dpgate``."""

    def __init__(self, outdir: str):
        self.root = os.path.join(outdir, "dpgate")
        self.tests_dir = os.path.join(self.root, "tests")
        os.makedirs(self.tests_dir, exist_ok=True)

    def append_trial(self, test: str, trial: Dict[str, Any]) -> None:
        line = json.dumps({"test": test, "time": time.time(), **trial}, sort_keys=True, default=_jsonable)
        with open(os.path.join(self.root, "trials.jsonl"), "a") as fh:
            fh.write(line + "\n")
            fh.flush()

    def record_path(self, longname: str) -> str:
        return os.path.join(self.tests_dir, test_id(longname) + ".json")

    def update(self, longname: str, **fields: Any) -> Dict[str, Any]:
        path = self.record_path(longname)
        rec = load_record(path) if os.path.exists(path) else new_record(longname)
        for key, value in fields.items():
            if isinstance(value, dict) and isinstance(rec.get(key), dict):
                rec[key] = {**rec[key], **value}
            elif isinstance(value, list) and key == F.GATES:
                rec[key] = rec.get(key, []) + value
            else:
                rec[key] = value
        atomic_write_json(path, rec)
        return rec

    def get(self, longname: str) -> Optional[Dict[str, Any]]:
        path = self.record_path(longname)
        return load_record(path) if os.path.exists(path) else None


def load_record(path: str) -> Dict[str, Any]:
    """Read and validate one record (upgrading ``dpgate.result/1``); ConfigError if invalid."""

    try:
        with open(path) as fh:
            rec = json.load(fh)
    except ValueError as err:
        raise ConfigError(f"not JSON ({err}): a truncated or corrupted result file", path) from None
    if not isinstance(rec, dict):
        raise ConfigError("not a dpgate result (expected a JSON object)", path)
    if rec.get(F.SCHEMA) in OLD_SCHEMAS:
        rec = upgrade(rec)
    if rec.get(F.SCHEMA) != SCHEMA:
        raise ConfigError(f"not a dpgate result (schema {rec.get(F.SCHEMA)!r}, expected {SCHEMA!r})", path)
    validate_record(rec, path)
    return rec


def upgrade(rec: Dict[str, Any]) -> Dict[str, Any]:
    """A ``dpgate.result/1`` record as ``/2``: the fields /2 added get their derivable values."""
    out = dict(rec)
    out[F.SCHEMA] = SCHEMA
    longname = out.get(F.LONGNAME, "")
    out.setdefault(F.TEST_ID, test_id(longname))
    out.setdefault(F.NAME, longname.rsplit(".", 1)[-1])
    out.setdefault(F.SUITE, longname.rsplit(".", 1)[0] if "." in longname else "")
    out.setdefault(F.STATUS, "RUNNING")
    out.setdefault(F.COMMIT, None)
    prof = (out.get(F.METRICS) or {}).get("search_profile")
    if prof and F.PROFILE not in out:
        out[F.PROFILE] = prof
    return out


@functools.lru_cache(maxsize=1)
def _validator():

    with open(_SCHEMA_FILE) as fh:
        return jsonschema.Draft202012Validator(json.load(fh))


def validate_record(rec: Dict[str, Any], path: str = "") -> None:
    """Validate against ``schemas/result-2.schema.json``; the error names the field."""

    errors = sorted(_validator().iter_errors(rec), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path) or "(record)"
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise ConfigError(f"invalid dpgate result: {where}: {err.message}{more}", path)


def load_records(outdir: str) -> List[Dict[str, Any]]:
    d = os.path.join(outdir, "dpgate", "tests")
    if not os.path.isdir(d):
        return []
    recs = [load_record(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".json")]
    return sorted(recs, key=lambda r: r.get(F.STARTED, 0))


def metric_items(rec: Dict[str, Any]) -> Iterable:
    """(key, value) of every metric of a record, in a stable order."""
    return sorted((rec.get(F.METRICS) or {}).items())
