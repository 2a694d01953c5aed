"""The speed-exponent fit and the paired replay over recorded runs (dpgate.telemetry.speedfit,
benchmarks/speed_exponent.py): records written as the gate writes them, read back."""

from __future__ import annotations

import json
import math

import pytest
from helpers import load_benchmark

from dpgate.model.trial import TrialResult
from dpgate.outputs.results import ResultStore
from dpgate.telemetry.paired import judge
from dpgate.telemetry.speedfit import fixed_load_points, paired_rows, pooled_fit

LOAD = 200_000.0
TEST = "Linux-Bridge-Ndrpdr.64B-1c-linux-bridge-ndrpdr"


def row(time, speed, cycles, side=None, foreign=0.02, superseded=False, load=LOAD, test=TEST):
    details = {"sut_core_speed": speed, "cpu": {"disturbance": foreign}, "xcore_placement": "near"}
    if side:
        details["paired_side"] = side
    if superseded:
        details["superseded"] = "disturbed 40.0% > 10%: measured again"
    return {
        "test": test,
        "time": time,
        "intended_load_pps": load,
        "intended_duration_s": 2.0,
        "intended_packets": int(2 * load),
        "tx_packets": int(2 * load),
        "rx_packets": int(2 * load),
        "loss_packets": 0,
        "loss_ratio": 0.0,
        "tg_shortfall": 0,
        "actual_duration_s": 2.0,
        "sut_cpu_cycles_per_packet": cycles,
        "sut_cycles_per_packet": None,
        "disturbance": foreign,
        "details": details,
    }


def cost(speed, level=4000.0, e=0.7):
    return level * (30.0 / speed) ** e


SPEEDS = [22.0, 36.0, 25.0, 40.0, 30.0, 21.0, 34.0, 27.0, 38.0, 24.0]


def recorded_run(step=1.10, e=0.7):
    """cpp_at_load trials (the SUT under test), then A B B A pairs with the SUT side ``step`` above the twin, every
    trial at its own core speed, cycles following it as speed^-e; one disturbed trial (way off
    the line) and one measured again, both to be left out."""
    rows = [row(t, s, cost(s, 4000.0 * step, e)) for t, s in enumerate((26.0, 33.0, 29.0))]
    rows.append(row(3.0, 30.0, 9000.0, foreign=0.4))  # disturbed: out of fit and pairs alike
    t = 10.0
    order = ["b", "s", "s", "b"] * 5
    for i, side in enumerate(order):
        speed = SPEEDS[i // 2] * (1.05 if side == "s" else 1.0)  # the SUT side's core 5 % faster
        level = 4000.0 * (step if side == "s" else 1.0)
        if i == 5:  # measured again: its retry follows at once
            rows.append(row(t, speed, 9999.0, side="baseline" if side == "b" else None, superseded=True))
            t += 1.0
        rows.append(row(t, speed, cost(speed, level, e), side="baseline" if side == "b" else None))
        t += 1.0
    return rows


def test_fit_recovers_the_exponent_and_leaves_out_what_the_gate_leaves_out():
    rows = recorded_run()
    groups = fixed_load_points(rows)
    assert sorted(k[2] for k in groups) == ["baseline", "sut"]  # cpp_at_load trials are SUT side
    fit = pooled_fit(groups.values())
    assert fit is not None
    assert fit.exponent == pytest.approx(0.7, abs=1e-6)  # the side's +10 % is not read as speed
    assert fit.points == 3 + 20 and fit.residual < 1e-6


def test_pairs_rebuilt_in_the_order_measured():
    pairs = paired_rows(recorded_run(), LOAD)
    assert len(pairs) == 10
    assert all(
        b["details"]["paired_side"] == "baseline" and "paired_side" not in s["details"] for b, s in pairs
    )
    assert all(abs(b["time"] - s["time"]) <= 2.0 for b, s in pairs)  # neighbours, not the cpp trials
    assert not any(r["details"].get("superseded") for p in pairs for r in p)


def test_pairing_stops_where_the_sequence_is_not_a_b_b_a():
    rows = [row(0, 30, 1, "baseline"), row(1, 30, 1), row(2, 30, 1, "baseline"), row(3, 30, 1, "baseline")]
    assert [(b["time"], s["time"]) for b, s in paired_rows(rows, LOAD)] == [(0, 1)]
    assert paired_rows([row(0, 30, 1)], LOAD) == []


def test_judge_scales_by_the_exponent_it_is_given():
    fields = set(TrialResult.__dataclass_fields__)
    pairs = [
        tuple(TrialResult(**{k: v for k, v in r.items() if k in fields}) for r in p)
        for p in paired_rows(recorded_run(), LOAD)
    ]
    right = judge(pairs, False, LOAD, 0.1, exponent=0.7)
    assert right.change == pytest.approx(0.10, abs=1e-6)
    none = judge(pairs, False, LOAD, 0.1, exponent=0.0)
    assert none.change == pytest.approx(none.unscaled, abs=1e-4)  # cycles rounded to 0.1
    assert abs(none.change - 0.10) > 0.005  # the sides ran at 5 % apart: scaling matters


def write_run(tmp_path, rows, metrics):
    """A gate run's result dir as the gate writes it: the record through ResultStore, the
    trials one JSON line each."""
    out = tmp_path / "gk" / "linux-bridge" / "inject-10-0"
    store = ResultStore(str(out))
    store.update(
        TEST,
        suite="Linux-Bridge-Ndrpdr",
        name="64B-1c-linux-bridge-ndrpdr",
        status="FAIL",
        nf="linux-bridge",
        metrics=metrics,
    )
    (out / "dpgate" / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "gk"


def test_benchmark_fits_and_replays_a_recorded_run(tmp_path, capsys):
    bench = load_benchmark("speed_exponent")
    metrics = {
        "host_cpu_model": "AMD EPYC",
        "host_cpu_id": "AuthenticAMD family 25 model 17",
        "frame_size": "64B",
        "cpp_paired_pps": LOAD,
        "cpp_paired_change": 0.0712,
        "cpp_paired_speed_exponent": 0.5,
        "injected_cost": 0.1,
    }
    top = write_run(tmp_path, recorded_run(), metrics)
    assert bench.main([str(top), "--model", "AMD EPYC", "--replay", "0.7,0", "--max-rise", "5%"]) == 0
    out = capsys.readouterr().out
    assert bench.main([str(top), "--model", "AuthenticAMD family 25 model 17"]) == 0
    assert "1 recorded cases on AuthenticAMD family 25 model 17" in capsys.readouterr().out
    fitted = [ln for ln in out.splitlines() if ln.startswith("linux-bridge") and " 64B " in ln]
    assert fitted and math.isclose(float(fitted[0].split()[2]), 0.7, abs_tol=0.005)
    assert "recorded +7.1 % at e 0.5" in out
    assert "e 0.7: +10.0 %" in out and ": FAIL" in out


def test_benchmark_refuses_what_it_cannot_read(tmp_path):
    bench = load_benchmark("speed_exponent")
    with pytest.raises(SystemExit, match="no such directory"):
        bench.main([str(tmp_path / "nowhere")])
    top = write_run(tmp_path, recorded_run(), {"host_cpu_model": "Intel(R) Xeon(R) Processor"})
    with pytest.raises(SystemExit, match="no recorded runs .* on CPU 'AMD EPYC'"):
        bench.main([str(top), "--model", "AMD EPYC"])
    with pytest.raises(SystemExit, match="--replay"):
        bench.main([str(top), "--replay", "half"])
    jsonl = next(top.rglob("trials.jsonl"))
    jsonl.write_text(jsonl.read_text() + "{cut short\n")
    with pytest.raises(SystemExit, match=r"trials.jsonl.*line 26 is not JSON"):
        bench.main([str(top)])
    jsonl.write_text("")
    next(top.rglob("tests/*.json")).write_text('{"schema": "dpgate.result/2"')  # cut short
    with pytest.raises(SystemExit, match=r"tests/.*json.*not JSON"):
        bench.main([str(top)])
