"""benchmarks/gate_signal.py reads the gate's own JUnit: the paired check's change and verdict
come out of a file written by dpgate's JUnit writer, and the paired line counts detections."""

from __future__ import annotations

import os
import re

import pytest
from helpers import load_benchmark

from dpgate.outputs.junit import write_junit
from dpgate.telemetry.paired import estimate, verdict


def record(name, ratio, status):
    est = estimate([(1000.0, 1000.0 * ratio * (1 + d)) for d in (0.0, 0.01, -0.01, 0.005)], 37_500.0)
    v, text = verdict(est, 0.05)
    gate = {
        "name": "cpp_paired",
        "passed": v != "FAIL",
        "message": text,
        "value": est.change,
        "threshold": 0.05,
    }
    if v == "SKIP":
        gate["skipped"] = True
    return {
        "name": name,
        "suite": "Testpmd-Mac-Ndrpdr",
        "status": status,
        "message": text if status == "FAIL" else "",
        "metrics": {"ndr_pps": 300_000.0, **est.metrics()},
        "gates": [gate],
    }


def test_paired_change_and_verdict_read_back_from_junit(tmp_path):
    bench = load_benchmark("gate_signal")
    runs = {}
    for name, ratio, status in (("healthy", 1.0, "PASS"), ("inject", 1.11, "FAIL")):
        path = tmp_path / f"{name}.xml"
        write_junit([record("64B-1c-testpmd-mac-ndrpdr", ratio, status)], str(path))
        runs[name] = bench.read_case(str(path))
    assert abs(runs["healthy"]["props"]["cpp_paired_change"]) < 0.01
    assert runs["inject"]["verdict"] == "FAIL"
    assert runs["inject"]["gates"]["gate.cpp_paired"].startswith("FAIL: cpp_at_load +11.")
    healthy = dict(runs["healthy"], hog=True)
    line = bench.paired_line([healthy], {10.0: [runs["inject"]]})
    assert line is not None
    assert re.search(r"healthy: [+-]0\.\d % Ph \| \+10 %: \+1[01]\.\d % F", line), line
    assert "(1/1 FAIL)" in line
    # runs without the paired check: no line
    plain = {"verdict": "PASS", "message": "", "props": {"ndr_pps": 1.0}, "gates": {}}
    assert bench.paired_line([plain], {}) is None


def test_keep_healthy_reads_finished_runs_and_runs_the_missing(tmp_path, monkeypatch):
    """--keep-healthy: a healthy run whose output.xml exists is read back, not run again (no
    hog started for it); one without is run."""
    bench = load_benchmark("gate_signal")
    done = tmp_path / "l3fwd-ip4" / "healthy-0"
    done.mkdir(parents=True)
    (done / "output.xml").write_text("<robot/>")
    calls = []

    def fake_run_gate(sut, prefix, outdir, history, extra, report_only=False):
        calls.append((os.path.basename(outdir), report_only))
        return {
            "verdict": "PASS",
            "message": "",
            "props": {},
            "gates": {},
            "gaps": {"search": [], "paired": []},
        }

    monkeypatch.setattr(bench, "run_gate", fake_run_gate)
    monkeypatch.setattr(bench, "hogs", lambda cpus: pytest.fail("no hog: no healthy run is hogged here"))
    argv = ["--suts", "l3fwd-ip4", "--k", "2", "--hogged", "0", "--steps", "", "--outdir", str(tmp_path)]
    assert bench.main(argv + ["--keep-healthy"]) == 0
    assert calls == [("healthy-0", True), ("healthy-1", False)]
    calls.clear()
    bench.main(argv)  # without it every healthy run runs again
    assert calls == [("healthy-0", False), ("healthy-1", False)]


@pytest.mark.parametrize("name", ["gate_signal", "gate_readings"])
def test_docstring_examples(name):
    """The report's lines as the docstrings show them (the overhead line, the paired line)."""
    import doctest

    bench = load_benchmark(name)
    result = doctest.testmod(bench)
    assert result.failed == 0 and result.attempted > 0, result


def test_a_verdict_per_kernel_cycle_shows_the_busy_cycles_beside_it(tmp_path):
    """A polling SUT judged per kernel cycle: its JUnit carries the busy cycles' change too,
    and the paired line prints both (``+9.3 % (busy +6.4 %) F``)."""
    bench = load_benchmark("gate_signal")
    rec = record("64B-1c-ovs-afxdp-xconnect-ndrpdr", 1.10, "FAIL")
    rec["metrics"].update({"cpp_paired_busy_change": 0.064, "cpp_paired_kernel_cpp": 2453.0})
    path = tmp_path / "inject.xml"
    write_junit([rec], str(path))
    run = bench.read_case(str(path))
    assert run["props"]["cpp_paired_busy_change"] == 0.064
    line = bench.paired_line([], {10.0: [run]})
    assert line is not None and re.search(r"\+10\.\d % \(busy \+6\.4 %\) F", line), line


def test_the_history_line_reads_both_cycle_checks_back_from_junit(tmp_path):
    """The regression checks' gates as the JUnit writer writes them: the busy cycles' and the
    per-kernel one's change and verdict per run (``+1.7 % P/+9.1 % F``)."""
    from dpgate.model.record import gate_entry
    from dpgate.regression.classify import Verdict

    bench = load_benchmark("gate_signal")
    busy = Verdict("t", "cpp_at_load", "normal", 4650.0, 4574.0, 1.66, 3, 15.0, "declared noise")
    pk = Verdict("t", "cpp_at_load_per_kernel", "regression", 1.336, 1.225, 9.06, 3, 7.0, "declared noise")
    rec = record("64B-1c-testpmd-mac-ndrpdr", 1.0, "FAIL")
    rec["gates"] = [
        gate_entry("regression_cpp", True, busy.line(), busy.current, busy.baseline),
        gate_entry("regression_cpp_kernel", False, pk.line(), pk.current, pk.baseline),
    ]
    path = tmp_path / "inject.xml"
    write_junit([rec], str(path))
    line = bench.history_line([{"gates": {}, "hog": True}], {10.0: [bench.read_case(str(path))]})
    assert line == "  history      healthy: -/-h | +10 %: +1.7 % P/+9.1 % F", line


def test_a_run_refused_in_suite_setup_is_no_detection(tmp_path):
    """An --inject-cost the host class has no row for makes the gate refuse in suite setup
    (gk77: l3fwd-ip4 on a fast host): that run measured nothing, so it reads ERROR, not FAIL,
    and the summary names the missing calibration instead of stopping."""
    bench = load_benchmark("gate_signal")
    rec = {
        "name": "64B-1c-l3fwd-ip4-ndrpdr",
        "suite": "L3Fwd-Ip4-Ndrpdr",
        "status": "FAIL",
        "message": "Parent suite setup failed: inject_cost: cost injection for SUT 'l3fwd-ip4' is not calibrated",
        "metrics": {},
        "gates": [],
    }
    path = tmp_path / "refused.xml"
    write_junit([rec], str(path))
    run = bench.read_case(str(path))
    assert run["verdict"] == "ERROR", run
    rec["message"] = "NDR 11.2 Mpps < floor 12.0 Mpps (-6.7 %)"
    write_junit([rec], str(path))
    assert bench.read_case(str(path))["verdict"] == "FAIL"
    assert bench.injected_aim("no-such-sut", 10.0, [run]).startswith("not calibrated: ")
