"""cpp_at_load against the history runs at about this run's SUT core speed (dpgate.regression.speed)."""

from helpers import write_run

from dpgate.regression.compare import compare
from dpgate.regression.history import add_to_history
from dpgate.regression.speed import BAND, at_speed
from dpgate.telemetry.disturbance import CPP_SPEED_EXPONENT, case_signal

KERNEL = CPP_SPEED_EXPONENT["kernel"]


def run(tmp_path, name, cpp, speed, exponent=KERNEL):
    metrics = {"ndr_pps": 5e5, "cpp_at_load": float(cpp), "sut_core_speed": speed}
    if exponent is not None:
        metrics["cpp_speed_exponent"] = exponent
    return write_run(tmp_path, name, metrics)


def cpp_verdict(tmp_path, store, cpp, speed, exponent=KERNEL):
    path = run(tmp_path, f"now{cpp}-{speed}-{exponent}", cpp, speed, exponent)
    return {v.metric: v for v in compare(path, store)}["cpp_at_load"]


def mixed_history(tmp_path):
    """A host that ran slow for a while: three runs at 15-17 M it/s, three at full speed."""
    store = str(tmp_path / "h")
    for i, (cpp, speed) in enumerate(
        [(9000, 16.0), (9200, 15.5), (8900, 16.8), (6600, 29.5), (6500, 30.2), (6700, 29.8)]
    ):
        assert add_to_history(run(tmp_path, f"r{i}", cpp, speed), store) == 1
    return store


def test_a_slow_run_is_judged_against_the_slow_runs_of_the_history(tmp_path):
    store = mixed_history(tmp_path)
    # +13 % over the slow runs at the same speed: a regression, where before it was inconclusive
    v = cpp_verdict(tmp_path, store, 10300.0, 16.0)
    assert v.verdict == "regression" and v.history_len == 3, v.line()
    assert "3 run(s) at 15.5-16.8 M it/s (this run 16.0), scaled by speed^-0.5" in v.line()
    assert 11.0 < v.change_pct < 15.0
    # the same speed and cycles as the slow runs: normal (against the fast runs: +38 %)
    v = cpp_verdict(tmp_path, store, 9100.0, 16.2)
    assert v.verdict == "normal" and v.history_len == 3, v.line()


def test_a_full_speed_run_is_not_held_against_slow_runs(tmp_path):
    store = mixed_history(tmp_path)
    # +12 % over the full-speed runs; the slow runs' inflated cycles would have hidden it
    v = cpp_verdict(tmp_path, store, 7400.0, 30.0)
    assert v.verdict == "regression" and v.history_len == 3, v.line()
    assert cpp_verdict(tmp_path, store, 6650.0, 30.0).verdict == "normal"


def test_no_history_at_this_speed_falls_back_to_the_slow_core_rule(tmp_path):
    store = str(tmp_path / "h")
    for i, (cpp, speed) in enumerate([(6600, 29.5), (6500, 30.2), (6700, 29.8)]):
        add_to_history(run(tmp_path, f"r{i}", cpp, speed), store)
    # 22 M it/s: outside the band of the history (29.5 / 1.2 = 24.6): a rise is inconclusive
    v = cpp_verdict(tmp_path, store, 8300.0, 22.0)
    assert v.history_len == 3 and v.verdict == "inconclusive", v.line()
    assert "the host, not the SUT, may be slower" in v.note
    # a record without the exponent (older gate) is never scaled: the old rule too
    add_to_history(run(tmp_path, "slow", 8000, 22.5), store)
    v = cpp_verdict(tmp_path, store, 9000.0, 22.0, exponent=None)
    assert v.history_len == 4 and v.verdict == "inconclusive", v.line()
    assert cpp_verdict(tmp_path, store, 9000.0, 22.0).history_len == 1  # with it: the one at 22.5


def test_history_values_are_scaled_to_this_runs_speed():
    hist = [
        {"cpp_at_load": 6000.0, "sut_core_speed": 18.0},
        {"samples": {"cpp_at_load": [100.0, 200.0]}, "sut_core_speed": 15.0},
    ]
    # measured 20 % faster than this run: at this run's speed it would have taken 1.2^e more
    assert at_speed(hist, 15.0, 0.5) == [(18.0, 6000.0 * 1.2**0.5), (15.0, [100.0, 200.0])]
    assert at_speed(hist, 15.0 / BAND - 0.01, 0.5) == []  # 18.0 just outside the band, 15.0 too
    assert at_speed(hist, 15.0, 0.0) == [(18.0, 6000.0), (15.0, [100.0, 200.0])]


def test_the_gate_records_the_exponent_of_the_kind_of_sut():
    class T:
        def __init__(self, speed):
            self.intended_load_pps, self.disturbance, self.details = 1.0, 0.01, {"sut_core_speed": speed}

    kernel = case_signal([], [], cpp_trials=[T(29.0), T(30.0)], cpp=3000.0, cpp_load=1.0)
    poller = case_signal([], [], cpp_trials=[T(29.0)], cpp=13000.0, cpp_load=1.0, polling=True)
    assert kernel["cpp_speed_exponent"] == CPP_SPEED_EXPONENT["kernel"] == 0.5
    assert poller["cpp_speed_exponent"] == CPP_SPEED_EXPONENT["polling"] == 0.25
    assert "cpp_speed_exponent" not in case_signal([], [], cpp_trials=[T(None)], cpp=3000.0, cpp_load=1.0)
