"""Smoke test of benchmarks/regression_gate.py: its scenarios run through the product's
classifier and a clear step is found while unchanged data is not flagged."""

from helpers import load_benchmark


def load_bench():
    return load_benchmark("regression_gate")


def test_issue_scenario_detects_ten_percent_without_false_alarms():
    bench = load_bench()
    runs, samples, noise, declared, _ = bench.SCENARIOS["A"]
    rates = dict(bench.flag_rates(40, runs, samples, noise, declared, seed=11))
    assert rates[0.0] == 0.0 and rates[-0.10] == 1.0


def test_short_history_scenario_uses_the_declared_noise():
    bench = load_bench()
    rates = dict(bench.flag_rates(40, 2, 3, 0.01, 0.08, seed=5))  # declared 8 %: -5 % is within noise
    assert rates[-0.05] == 0.0 and rates[-0.10] == 1.0
