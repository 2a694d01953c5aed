"""`dpgate gate` with its history store, end to end on the embedded testbed (short runs).

Run 1 starts the history; run 2 (into the same outdir, with a stale record of an older
run planted there) is compared with it and added; run 3 injects a 10 % CPU steal on the
SUT core: its records say so, it is compared but not added, and its stealer is gone
afterwards. These check the mechanics; the noise behaviour of the verdicts is measured by
benchmarks/regression_gate.py and by full gate runs (README)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from dpgate.exec.hostcpu import cpu_facts
from dpgate.outputs.results import load_records
from dpgate.regression.cycles import MEMORY_KEYS
from dpgate.regression.history import cpp_clean, disturbed, slow_host
from dpgate.telemetry.placement import CPP_KEY, SCALED_KEY, rests_where

PREFIX = "it9-"
#: What makes two scaled cpp_at_load figures comparable (regression/cycles.py scaled_verdict).
SCALED_ALIKE = ("cpp_scaled_speed", "cpp_speed_exponent", *MEMORY_KEYS)
SUITE = "suites/embedded/linux-xconnect-ndrpdr.robot"


@pytest.fixture
def gate(dpgate_cmd, leftovers, tmp_path):
    argv0, env = dpgate_cmd
    left = leftovers(PREFIX)
    thresholds = tmp_path / "th.yaml"
    thresholds.write_text("nfs:\n  linux-xconnect:\n    all: {ndr_min: 1 kpps, pdr_min: 1 kpps}\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def run(outdir, *extra, timeout=300):
        argv = argv0 + [
            "gate",
            "--outdir",
            str(outdir),
            "--prefix",
            PREFIX,
            "--include",
            "64B",
            "--thresholds",
            str(thresholds),
            "--variable",
            "SEARCH_TIME_LIMIT:8",
            "--variable",
            "PER_COMMIT_DURATION_SUM:3",
            "--mrr-trials",
            "2",
            *extra,
            os.path.join(root, SUITE),
        ]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout, cwd=root)

    yield run
    left.assert_clean()


def history_lines(hist):
    files = list(hist.rglob("*.jsonl")) if hist.exists() else []
    assert len(files) <= 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines()] if files else []


def entry(rec):
    """What a run adds to the history: all its metrics ("full"), its cpp_at_load alone when
    others' CPU time disturbed its search but not its cpp trials ("cpp"), else nothing."""
    if not disturbed(rec):
        return "full"
    return "cpp" if cpp_clean(rec) and kept(rec) else None


def kept(rec):
    """The cycles figures a run adds: one over trials of both core placements is not kept, each
    judged by the placement of its own trials (telemetry/placement.py)."""
    m = rec["metrics"]
    pairs = (("cpp_at_load", CPP_KEY), ("cpp_at_load_scaled", SCALED_KEY))
    return [k for k, key in pairs if k in m and rests_where(m, key) != "mixed"]


def far(entry_or_rec, key=CPP_KEY) -> bool:
    """Whether a cpp_at_load (``key``: the figure whose placement, placement.py) rests on far
    trials: held against far runs only."""
    return rests_where(entry_or_rec, key) == "far"


def check_entry(line, rec, kind):
    assert line["commit"] == rec["commit"], (line, rec["commit"])
    # the CPU that measured it, both ways: the history compares runs of one CPU
    assert {k: line.get(k) for k in cpu_facts()} == cpu_facts(), line
    if kind == "full":
        assert len(line["samples"]["mrr_pps"]) == 2 and line["ndr_pps"] > 0, line
    else:
        assert "ndr_pps" not in line, line
    for k in ("cpp_at_load", "cpp_at_load_scaled"):
        assert line.get(k) == (rec["metrics"][k] if k in kept(rec) else None), (k, line)


def test_gate_keeps_history_compares_and_never_adds_injected_runs(gate, tmp_path):
    out, hist = tmp_path / "results", tmp_path / "history"

    r1 = gate(out, "--history", str(hist), "--commit", "c1")
    assert r1.returncode == 0, r1.stdout[-3000:] + r1.stderr[-3000:]
    assert "regression check against" in r1.stdout and "no history" in r1.stdout
    # a run whose trials others' CPU time disturbed stays out of the history, but for its
    # cpp_at_load when its own trials were clean (CI at 324dc44 and fd5a128: 10.7 % in the search)
    (rec1,) = load_records(str(out))
    assert {k: rec1["metrics"].get(k) for k in cpu_facts()} == cpu_facts(), rec1["metrics"]
    added = ["c1"] if entry(rec1) else []
    lines = history_lines(hist)
    assert [h["commit"] for h in lines] == added, rec1["metrics"].get("disturbance_foreign")
    h1 = lines[0] if lines else {}
    if h1:
        check_entry(h1, rec1, entry(rec1))

    stale = out / "dpgate" / "tests" / "Old.Suite.64B-1c-gone-ndrpdr.json"
    stale.write_text(
        json.dumps(
            {
                "schema": "dpgate.result/2",
                "test_id": "Old.Suite.64B-1c-gone-ndrpdr",
                "longname": "Old.Suite.64B-1c-gone-ndrpdr",
                "name": "64B-1c-gone-ndrpdr",
                "suite": "Old.Suite",
                "status": "PASS",
            }
        )
    )
    # the declared noise floors the allowance until the history spans --history-span (default 24 h)
    assert rec1["metrics"]["regression_history_span_h"] == 24.0, rec1["metrics"]
    r2 = gate(out, "--history", str(hist), "--commit", "c2", "--min-change", "80", "--history-span", "90 min")
    assert r2.returncode == 0, r2.stdout[-3000:] + r2.stderr[-3000:]
    assert not stale.exists() and "64B-1c-gone-ndrpdr" not in (out / "junit.xml").read_text()
    (rec,) = load_records(str(out))
    assert rec["commit"] == "c2" and rec["trials"] and rec["profile"] == "per-commit"
    assert rec["metrics"]["regression_history_span_h"] == 1.5, rec["metrics"]
    gates = {g["name"]: g for g in rec["gates"]}
    assert {"regression_ndr", "regression_pdr", "regression_mrr"} <= set(gates)
    # a first run measured in a slow host phase is history for cpp_at_load only: the
    # throughput comparison leaves it out (regression/history.py slow_host)
    expect = "1 runs of history" if "ndr_pps" in h1 and not slow_host(h1) else "no history"
    assert expect in gates["regression_mrr"]["message"], (h1, gates["regression_mrr"])
    if "cpp_at_load" in h1 and "regression_cpp" in gates and not far(h1) and not far(rec):
        # compared with every history run of its placement (a far one: with 3 far runs)
        assert "1 runs of history" in gates["regression_cpp"]["message"], gates["regression_cpp"]
    if "sut_core_speed" in h1 and "cpp_at_load" in h1:  # kernel SUT, timed: scaled to 30 M it/s
        # the scaled figure is kept unless its own trials were a mix of the two placements
        # (CI at 96f2b47 on the Zen 3 host: cpp_at_load near, the scaled figure mixed)
        mixed = rests_where(rec1["metrics"], SCALED_KEY) == "mixed"
        assert h1["cpp_scaled_speed"] == 30.0 and (h1.get("cpp_at_load_scaled", 0) > 0 or mixed), h1
    added += ["c2"] if entry(rec) else []
    lines = history_lines(hist)
    assert [h["commit"] for h in lines] == added, rec["metrics"].get("disturbance_foreign")
    if entry(rec):
        check_entry(lines[-1], rec, entry(rec))
    assert "regression_mrr" in (out / "junit.xml").read_text()

    r3 = gate(out, "--history", str(hist), "--commit", "c3", "--sut-cpu-steal", "10", "--min-change", "80")
    # The injected stealer's time is the SUT's own (handicap.py: part of the SUT under test),
    # so at this fixture's low cpp_load it can move cpp_at_load past even an 80 % allowance
    # (CI once: 52,632 -> 560,409 cycles/packet): a FAIL here must be that detection, never
    # an error or a floor.
    assert r3.returncode in (0, 1), r3.stdout[-3000:] + r3.stderr[-3000:]
    if r3.returncode == 1:
        assert "FAIL: regression vs history" in r3.stdout, r3.stdout[-3000:]
    (rec,) = load_records(str(out))
    assert rec["metrics"]["injected_sut_cpu_steal"] == pytest.approx(0.10)
    # the scaled figure is held against history runs scaled alike (regression/cycles.py: the
    # same speed, exponent and memory scaling) by the placement of its own trials (SCALED_KEY),
    # which can differ from cpp_at_load's: CI at 8ff222b read "cpp_at_load: no history" where
    # the test had counted two entries by cpp_at_load's placement
    m3 = rec["metrics"]
    scaled_history = [
        h
        for h in history_lines(hist)
        if "cpp_at_load_scaled" in h
        and not far(h, SCALED_KEY)
        and all(h.get(k) == m3.get(k) for k in SCALED_ALIKE)
    ]
    if len(scaled_history) == 2 and "cpp_at_load_scaled" in m3 and not far(rec, SCALED_KEY):
        # two history runs scaled alike: the cycles check holds the scaled figures, all of them
        msg = {g["name"]: g for g in rec["gates"]}["regression_cpp"]["message"]
        assert "cpp_at_load_scaled" in msg and "2 runs of history" in msg, msg
    assert "runs with injected faults are never added" in r3.stdout
    assert [h["commit"] for h in history_lines(hist)] == added
    stealers = subprocess.run(
        ["pgrep", "-f", "dpgate.testbeds.embedded.handicap"], capture_output=True, text=True
    ).stdout.split()
    assert stealers == [], "CPU stealer left running"
