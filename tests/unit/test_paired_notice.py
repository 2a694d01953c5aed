"""A rise the paired check sees within its allowance: said, never failed
(dpgate.telemetry.paired_notice), through the gate keyword and the gate's summary."""

from __future__ import annotations

import dataclasses
from typing import Any, Dict, List

import pytest
from robot.api import Failure
from test_paired import drifting_pairs

import dpgate.robot.gate_checks as gate_checks
import dpgate.robot.paired as paired_kw
from dpgate.cli.gate_summary import paired_summary
from dpgate.robotlib import Gates
from dpgate.telemetry.paired import PairedCpp, estimate
from dpgate.telemetry.paired_notice import RISE_SEEN, rise_seen


def test_a_sure_rise_within_the_allowance_is_seen_and_passes():
    est = estimate(drifting_pairs(1.035, n=16, noise=0.01))  # +3.5 %, 16 pairs of 1 % noise
    assert 0 < est.low and est.change < 0.05
    assert "within the allowed +5.0 %" in rise_seen(est, 0.05)
    assert rise_seen(est, 0.02) == ""  # beyond that allowance it is a FAIL, which says it
    assert rise_seen(estimate(drifting_pairs(1.0, n=16, noise=0.01, seed=3)), 0.05) == ""  # A/A
    assert rise_seen(estimate(drifting_pairs(1.035, n=4, noise=0.05)), 0.05) == ""  # not sure


def test_a_rise_seen_needs_what_a_fail_needs():
    sure = PairedCpp(0.04, 0.01, 0.07, 16)
    assert rise_seen(sure, 0.05)
    # only scaling shows it: the sides ran at different speeds
    assert rise_seen(dataclasses.replace(sure, exponent=1.0, unscaled=-0.01), 0.05) == ""
    # at saturation the pairs at one core speed must have risen too
    sat = dataclasses.replace(sure, saturated=True, one_speed=-0.005, one_speed_pairs=9)
    assert rise_seen(sat, 0.05) == ""
    assert rise_seen(dataclasses.replace(sat, one_speed=0.03), 0.05)
    # beside a neighbour nothing is seen (a rise there is held inconclusive too)
    assert rise_seen(dataclasses.replace(sure, disturbance=0.5), 0.05, dmax=0.10) == ""
    assert rise_seen(dataclasses.replace(sure, disturbance=0.05), 0.05, dmax=0.10)
    # per kernel cycle flat, the busy cycles judged beside it rose beyond doubt: seen, by them
    kern = PairedCpp(0.0, -0.02, 0.02, 16, reference=3000.0, also=PairedCpp(0.045, 0.02, 0.07, 16))
    assert "busy cycles' pairs agree on (cpp_at_load +4.5 %" in rise_seen(kern, 0.05)
    assert "99 % CI +2.0 to +7.0 %" in rise_seen(kern, 0.05)


def _capture(monkeypatch) -> List[Dict[str, Any]]:
    got: List[Dict[str, Any]] = []
    monkeypatch.setattr(paired_kw, "record", lambda **f: got.append(f))
    monkeypatch.setattr(gate_checks, "record", lambda **f: got.append(f))
    monkeypatch.setattr(paired_kw.logger, "warn", lambda msg, *a, **k: got.append({"warn": msg}))
    return got


def test_the_keyword_passes_a_seen_rise_and_records_it(monkeypatch):
    got = _capture(monkeypatch)
    Gates().cycles_should_not_rise_against_baseline(PairedCpp(0.039, 0.010, 0.068, 16), "5%")
    metrics = [f["metrics"] for f in got if "metrics" in f]
    gates = [g for f in got for g in f.get("gates", [])]
    assert metrics == [{RISE_SEEN: True}]
    assert gates[0]["passed"] is True and "a rise the pairs agree on" in gates[0]["message"]
    assert any("paired check:" in f.get("warn", "") for f in got)
    got.clear()
    Gates().cycles_should_not_rise_against_baseline(PairedCpp(0.003, -0.035, 0.042, 16), "5%")
    assert [f["metrics"] for f in got if "metrics" in f] == [{RISE_SEEN: False}]
    assert not any("warn" in f for f in got)
    got.clear()
    with pytest.raises(Failure):
        Gates().cycles_should_not_rise_against_baseline(PairedCpp(0.09, 0.06, 0.12, 16), "5%")
    assert [f["metrics"] for f in got if "metrics" in f] == [{RISE_SEEN: True}]
    got.clear()
    Gates().cycles_should_not_rise_against_baseline(PairedCpp(0.09, -0.01, 0.2, 16), "5%")  # SKIP
    assert not [f for f in got if "metrics" in f]


def test_the_summary_marks_a_pass_with_a_rise_seen():
    gate = {"name": "cpp_paired", "passed": True, "message": "cpp_at_load +3.9 % ..."}
    seen = {"name": "a", "metrics": {RISE_SEEN: True}, "gates": [gate]}
    quiet = {"name": "b", "metrics": {RISE_SEEN: False}, "gates": [gate]}
    lines = paired_summary([seen, quiet]).splitlines()
    assert lines[1].startswith("  a: PASS, RISE SEEN:") and lines[2].startswith("  b: PASS:")


def _junit(path, status: str, paired: str, seen_rise: bool, change: float) -> None:
    from dpgate.model.record import gate_entry
    from dpgate.outputs.junit import write_junit

    path.mkdir(parents=True)
    gate = gate_entry("cpp_paired", paired == "PASS", f"cpp_at_load {change * 100:+.1f} % ...", change, 0.05)
    rec = {
        "name": "64B-1c-testpmd-mac-ndrpdr",
        "suite": "Testpmd",
        "status": status,
        "message": "" if status == "PASS" else "regression_cpp_kernel: +6.3 %",
        "metrics": {"cpp_paired_change": change, RISE_SEEN: seen_rise},
        "gates": [gate],
    }
    write_junit([rec], str(path / "junit.xml"))


def test_gate_signal_counts_a_run_failed_and_seen_once(tmp_path, capsys):
    """A "+5 %" run the history FAILED whose paired gate passed with the rise seen is one run
    reported, and a healthy PASS with a rise seen is counted as a false notice."""
    from helpers import load_benchmark

    bench = load_benchmark("gate_signal")
    base = tmp_path / "testpmd-mac"
    _junit(base / "healthy-0", "PASS", "PASS", False, -0.019)
    _junit(base / "healthy-1", "PASS", "PASS", True, 0.031)  # a false notice
    _junit(base / "inject-5-0", "FAIL", "PASS", True, 0.041)  # caught by the history, seen by the pairs
    _junit(base / "inject-5-1", "PASS", "PASS", True, 0.038)  # only seen
    argv = ["--suts", "testpmd-mac", "--k", "2", "--hogged", "0", "--steps", "5", "--inject-runs", "2"]
    bench.main(argv + ["--paired", "--report-only", "--outdir", str(tmp_path)])
    out = capsys.readouterr().out
    assert "detected in 1/2 runs, a PASS with the rise seen in 2" in out, out
    assert "detected or a rise seen +5 % in 2/2" in out, out
    assert "a PASS with a rise seen in 1)" in out, out  # the healthy run's
    assert "healthy: -1.9 % P, +3.1 % P! (quiet spread" in out, out  # marked in the paired line
