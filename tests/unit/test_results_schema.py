"""Result records: schema dpgate.result/2 round trip, validation errors naming the field,
upgrade of /1 records, the commit taken from the CI environment."""

import json

import pytest

from dpgate.model.errors import ConfigError
from dpgate.model.trial import TrialResult
from dpgate.outputs.results import SCHEMA, ResultStore, load_record, load_records, run_commit
from dpgate.outputs.results import test_id as make_test_id

TRIAL = TrialResult.from_counts(100_000, 1.0, tx_packets=100_000, rx_packets=99_900).to_dict()


def full_record(store: ResultStore, name="64B-1c-linux-ip4-ndrpdr"):
    longname = f"Embedded.Linux-Ip4.{name}"
    store.update(
        longname, suite="Embedded.Linux-Ip4", name=name, status="RUNNING", started=1.0, tags=["64B", "1C"]
    )
    store.update(
        longname,
        metrics={
            "ndr_pps": 541312.0,
            "pdr_pps": 541312.0,
            "ipc": "not supported (x)",
            "search_complete": False,
        },
        nf="linux-ip4",
        sut_version="Linux 6.1",
        testbed="embedded",
        prefix="dpg0-",
        profile="per-commit",
        trials=[TRIAL],
        latency=None,
        latency_note="not measured",
        samples={"mrr_pps": [1.0, 2.0]},
    )
    store.update(
        longname, gates=[{"name": "ndr_min", "passed": True, "message": "NDR ok", "value": 1, "threshold": 0}]
    )
    store.update(longname, status="PASS", message="", elapsed_s=12.5)
    return store.record_path(longname)


def test_round_trip_keeps_every_field(tmp_path, monkeypatch):
    monkeypatch.setenv("CI_COMMIT_SHA", "abc123")
    monkeypatch.delenv("DPGATE_COMMIT", raising=False)
    path = full_record(ResultStore(str(tmp_path)))
    rec = load_record(path)
    assert rec["schema"] == SCHEMA == "dpgate.result/2"
    assert rec["test_id"] == make_test_id(rec["longname"]) and rec["commit"] == "abc123"
    assert rec["trials"][0]["loss_packets"] == 100 and rec["profile"] == "per-commit"
    assert rec["metrics"]["ndr_pps"] == 541312.0 and rec["gates"][0]["passed"] is True
    assert [r["name"] for r in load_records(str(tmp_path))] == ["64B-1c-linux-ip4-ndrpdr"]


def test_commit_precedence(monkeypatch):
    for var in ("DPGATE_COMMIT", "CI_COMMIT_SHA", "GIT_COMMIT", "GITHUB_SHA"):
        monkeypatch.delenv(var, raising=False)
    assert run_commit() is None
    monkeypatch.setenv("GIT_COMMIT", "jenkins")
    assert run_commit() == "jenkins"
    monkeypatch.setenv("DPGATE_COMMIT", "explicit")
    assert run_commit() == "explicit"


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"status": "DONE"}, "status"),
        ({"metrics": {"ndr_pps": -5}}, "metrics.ndr_pps"),
        ({"metrics": {"ndr_pps": [1, 2]}}, "metrics.ndr_pps"),
        ({"trials": [dict(TRIAL, loss_ratio=1.5)]}, "trials.0.loss_ratio"),
        ({"trials": [{"intended_load_pps": 1.0}]}, "trials.0"),
        ({"gates": [{"name": "x", "passed": "yes", "message": "m"}]}, "gates.0.passed"),
        ({"test_id": "a/b"}, "test_id"),
        ({"samples": {"mrr_pps": []}}, "samples.mrr_pps"),
    ],
)
def test_invalid_records_name_the_field(tmp_path, patch, field):
    path = full_record(ResultStore(str(tmp_path)))
    rec = json.load(open(path))
    rec.update(patch)
    json.dump(rec, open(path, "w"))
    with pytest.raises(ConfigError) as err:
        load_record(path)
    assert f"invalid dpgate result: {field}:" in str(err.value) and path in str(err.value)


def test_truncated_or_foreign_files_are_clear_errors(tmp_path):
    bad = tmp_path / "t.json"
    bad.write_text('{"schema": "dpgate.result/2", "longn')
    with pytest.raises(ConfigError, match="not JSON .*truncated or corrupted"):
        load_record(str(bad))
    bad.write_text('{"schema": "other/1"}')
    with pytest.raises(ConfigError, match="not a dpgate result .*'other/1'"):
        load_record(str(bad))
    bad.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        load_record(str(bad))


def test_version_1_records_are_upgraded_on_read(tmp_path):
    old = {
        "schema": "dpgate.result/1",
        "longname": "Embedded.Linux-Ip4.64B-1c-linux-ip4-ndrpdr",
        "suite": "Embedded.Linux-Ip4",
        "name": "64B-1c-linux-ip4-ndrpdr",
        "status": "PASS",
        "metrics": {"ndr_pps": 5e5, "pdr_pps": 5e5, "search_profile": "per-commit"},
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    rec = load_record(str(path))
    assert rec["schema"] == SCHEMA and rec["test_id"] == "Embedded.Linux-Ip4.64B-1c-linux-ip4-ndrpdr"
    assert rec["profile"] == "per-commit" and rec["commit"] is None


def test_records_are_valid_from_their_first_write_without_a_listener(tmp_path):
    """Robot runs without DpgateListener: keywords record before any status is set."""
    store = ResultStore(str(tmp_path))
    store.update("Suite.Sub.64B-1c-x-ndrpdr", metrics={"ndr_pps": 1.0})
    rec = store.update("Suite.Sub.64B-1c-x-ndrpdr", metrics={"pdr_pps": 2.0})
    assert (rec["status"], rec["name"], rec["suite"]) == ("RUNNING", "64B-1c-x-ndrpdr", "Suite.Sub")
    assert load_record(store.record_path("Suite.Sub.64B-1c-x-ndrpdr"))["metrics"] == {
        "ndr_pps": 1.0,
        "pdr_pps": 2.0,
    }


def test_typed_record_matches_the_schema():
    """model.record's TestRecord and field names are the schema's properties, no more, no less."""
    import dataclasses
    import json
    import os

    import dpgate
    from dpgate.model.record import SCHEMA, STATUSES, F, TestRecord

    path = os.path.join(os.path.dirname(dpgate.__file__), "schemas", "result-2.schema.json")
    schema = json.load(open(path))
    props = set(schema["properties"])
    assert {f.name for f in dataclasses.fields(TestRecord)} == props
    assert {v for k, v in vars(F).items() if k.isupper()} == props
    required = {
        f.name
        for f in dataclasses.fields(TestRecord)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    }
    assert required == set(schema["required"])
    assert schema["properties"]["schema"]["const"] == SCHEMA
    assert tuple(schema["properties"]["status"]["enum"]) == STATUSES
