"""Per-test result records, written as they are produced so a crash loses nothing.

Layout under the run's output directory::

    dpgate/trials.jsonl            one line per trial, appended as each trial ends
    dpgate/tests/<test-id>.json    one record per test, rewritten as it progresses

A record is a plain JSON object (schema ``dpgate.result/1``): test identity, the search
result, derived metrics, telemetry, gate verdicts and the final status.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from typing import Any, Dict, Iterable, List, Optional

SCHEMA = "dpgate.result/1"


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
        import dataclasses

        return dataclasses.asdict(obj)
    return str(obj)


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
        rec = load_record(path) if os.path.exists(path) else {"schema": SCHEMA, "longname": longname}
        for key, value in fields.items():
            if isinstance(value, dict) and isinstance(rec.get(key), dict):
                rec[key] = {**rec[key], **value}
            elif isinstance(value, list) and key == "gates":
                rec[key] = rec.get(key, []) + value
            else:
                rec[key] = value
        atomic_write_json(path, rec)
        return rec

    def get(self, longname: str) -> Optional[Dict[str, Any]]:
        path = self.record_path(longname)
        return load_record(path) if os.path.exists(path) else None


def load_record(path: str) -> Dict[str, Any]:
    with open(path) as fh:
        rec = json.load(fh)
    if rec.get("schema") != SCHEMA:
        from .errors import ConfigError

        raise ConfigError(f"not a dpgate result (schema {rec.get('schema')!r}, expected {SCHEMA!r})", path)
    return rec


def load_records(outdir: str) -> List[Dict[str, Any]]:
    d = os.path.join(outdir, "dpgate", "tests")
    if not os.path.isdir(d):
        return []
    recs = [load_record(os.path.join(d, f)) for f in sorted(os.listdir(d)) if f.endswith(".json")]
    return sorted(recs, key=lambda r: r.get("started", 0))


def metric_items(rec: Dict[str, Any]) -> Iterable:
    """(key, value) of every metric of a record, in a stable order."""
    return sorted((rec.get("metrics") or {}).items())
