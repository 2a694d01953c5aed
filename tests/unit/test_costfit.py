"""A cost row from readings of injected steps (``dpgate.testbeds.embedded.suts.costfit``), and
benchmarks/gate_signal.py's line that prints it from the gate's own JUnit."""

from __future__ import annotations

from helpers import load_benchmark

from dpgate.outputs.junit import write_junit
from dpgate.testbeds.embedded.suts import cost
from dpgate.testbeds.embedded.suts.costfit import StepReading, fit_row


def readings(per_load, at_zero, loads, half=0.02, base=10_000.0):
    """Readings on the line, each +-``half`` (99 %)."""
    return [
        StepReading(
            n, at_zero + per_load * n, at_zero + per_load * n - half, at_zero + per_load * n + half, base
        )
        for n in loads
    ]


def test_fit_recovers_the_line_and_its_row():
    fit = fit_row(readings(0.0004, 0.04, [1, 1, 110, 265, 575, 575]))
    assert fit is not None
    assert abs(fit.per_load - 0.0004) < 1e-9 and abs(fit.at_zero - 0.04) < 1e-9
    assert fit.row == (10_000.0, 4.0, 400.0)
    # the row aims the table's steps where the line puts them
    table = {"x": fit.row}
    assert abs(cost.expected_percent("x", cost.units_for("x", 10, table), table) - 10) < 0.05


def test_fit_weights_each_reading_by_its_interval():
    precise = readings(0.001, 0.0, [10, 100], half=0.005)
    wild = [StepReading(50, 0.5, 0.0, 1.0, 10_000.0)]  # +50 %, but its interval is 100 points wide
    fit = fit_row(precise + wild)
    assert fit is not None and abs(fit.per_load - 0.001) < 2e-5 and abs(fit.at_zero) < 0.005
    unweighted = fit_row(
        readings(0.001, 0.0, [10, 100], half=0.005) + [StepReading(50, 0.5, 0.49, 0.51, 10_000.0)]
    )
    assert unweighted is not None and unweighted.at_zero > 0.05  # the same reading, held precise, pulls it


def test_a_line_below_zero_at_no_load_makes_no_negative_classifier():
    fit = fit_row(readings(0.009, -0.004, [3, 10]))
    assert fit is not None and fit.at_zero < 0
    assert fit.row[2] == 0.0 and fit.row[1] == 90.0


def test_no_row_from_one_load_count_or_no_interval():
    assert fit_row(readings(0.001, 0.02, [10, 10, 10])) is None
    assert fit_row([StepReading(1, 0.02, 0.02, 0.02, 1.0), StepReading(9, 0.05, 0.05, 0.05, 1.0)]) is None
    assert fit_row([]) is None


def _run(tmp_path, name, loads, change):
    path = tmp_path / f"{name}.xml"
    metrics = {
        "injected_cost_loads": loads,
        "cpp_paired_change": change,
        "cpp_paired_low": change - 0.03,
        "cpp_paired_high": change + 0.03,
        "cpp_paired_baseline": 13_500.0,
    }
    rec = {
        "name": "64B-1c-ovs-xconnect-ndrpdr",
        "suite": "Ovs",
        "status": "PASS",
        "message": "",
        "metrics": metrics,
    }
    write_junit([rec], str(path))
    return path


def test_gate_signal_prints_the_row_from_the_runs_junit(tmp_path):
    bench = load_benchmark("gate_signal")
    injected = {
        1.5: [bench.read_case(str(_run(tmp_path, "a", 1, 0.04)))],
        10.0: [bench.read_case(str(_run(tmp_path, "b", 265, 0.1456)))],
    }
    line = bench.row_line(injected)
    assert line is not None
    assert "0.0400 % a load" in line and "+3.96 % at none" in line and "2 runs" in line, line
    assert "row (13500.0, 5.4, 535.0)" in line, line
    assert bench.row_line({10.0: injected[10.0]}) is None  # one load count: no line


def test_gate_signal_counts_frames_back_after_their_settle(tmp_path):
    """The overhead line also says what the settle gave up on that came back after all (the
    trials' ``late_after_last_settle``): a quiet time too short for a SUT shows there."""
    import json

    bench = load_benchmark("gate_signal")
    rows = [
        {"time": 1.0, "intended_duration_s": 1.0, "details": {"generator": "tcpreplay"}},
        {
            "time": 2.03,
            "intended_duration_s": 1.0,
            "details": {"late_after_last_settle": 0, "generator": "dpgen"},
        },
        {"time": 3.05, "intended_duration_s": 1.0, "details": {"late_after_last_settle": 7}},
        {
            "time": 4.1,
            "intended_duration_s": 1.0,
            "details": {"paired_side": "baseline", "late_after_last_settle": 0},
        },
    ]
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    gaps = bench.trial_gaps(str(path))
    assert gaps["late"] == [0, 7, 0] and len(gaps["search"]) == 2 and len(gaps["paired"]) == 1
    line = bench.overhead_line([{"gaps": gaps}])
    assert "frames back after their settle 7 (in 1 of 3 trials);" in line, line
    # which generator ran: tcpreplay's process per trial costs tens of ms more than dpgen
    assert line.endswith("generator ? (2 trials), tcpreplay (1 trials), dpgen (1 trials)"), line
