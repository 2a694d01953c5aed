"""cpp_at_load_scaled: a SUT's trials scaled to a reference core speed, and the history
check on it (dpgate.telemetry.cpp_scaled, dpgate.regression.cycles.scaled_verdict)."""

import json

from helpers import write_run

from dpgate.regression.compare import compare
from dpgate.regression.history import add_to_history, history_path
from dpgate.telemetry.cpp_scaled import CPP_REF_SPEED, cpp_at_ref_speed
from dpgate.telemetry.disturbance import CPP_SPEED_EXPONENT, case_signal, speed_exponent

KERNEL = CPP_SPEED_EXPONENT["kernel"]


class T:
    def __init__(self, cpp, speed, superseded=False):
        self.intended_load_pps, self.disturbance = 1.0, 0.01
        self.sut_cpu_cycles_per_packet, self.sut_cycles_per_packet = cpp, cpp
        self.details = {"sut_core_speed": speed, **({"superseded": True} if superseded else {})}


def cost_at(cost_at_ref: float, speed: float) -> float:
    """What a SUT whose cost is ``cost_at_ref`` at the reference speed reads at ``speed``."""
    return cost_at_ref * (CPP_REF_SPEED / speed) ** KERNEL


def test_every_trial_counts_scaled_to_the_reference_speed():
    # one SUT cost, trials at three speeds: each scales back to it
    trials = [T(cost_at(4000.0, s), s) for s in (30.0, 16.0, 22.0, 18.5)]
    assert abs(cpp_at_ref_speed(trials, KERNEL) - 4000.0) < 0.2
    # a superseded (disturbed, measured again) trial never counts; untimed ones cannot
    assert cpp_at_ref_speed([T(4000.0, 30.0), T(9000.0, 30.0, superseded=True)], KERNEL) == 4000.0
    assert cpp_at_ref_speed([T(4000.0, None)], KERNEL) is None


def test_the_gate_records_it_with_each_kind_of_suts_exponent_and_figure():
    trials = [T(5600.0, 15.0), T(3000.0, 30.0), T(5000.0, 20.0)]  # scaled: 3,960, 3,000, 4,082
    kernel = case_signal([], [], cpp_trials=trials, cpp=3000.0, cpp_load=1.0)
    assert kernel["cpp_at_load_scaled"] == round(5600.0 * (15.0 / 30.0) ** 0.5, 1)
    assert kernel["cpp_scaled_speed"] == CPP_REF_SPEED
    # a polling SUT: its own busy-cycle report (not its CPU time), by its exponent 0.25
    for t, busy in zip(trials, (11000.0, 9000.0, 10500.0)):
        t.sut_cycles_per_packet = busy  # scaled: 9,250, 9,000, 9,488
    poller = case_signal([], [], cpp_trials=trials, cpp=9000.0, cpp_load=1.0, polling=True)
    polling = CPP_SPEED_EXPONENT["polling"]
    assert poller["cpp_at_load_scaled"] == round(11000.0 * (15.0 / 30.0) ** polling, 1)
    assert poller["cpp_scaled_speed"] == CPP_REF_SPEED and poller["cpp_speed_exponent"] == polling
    # one that reports no busy cycles has none
    for t in trials:
        t.sut_cycles_per_packet = None
    assert "cpp_at_load_scaled" not in case_signal(
        [], [], cpp_trials=trials, cpp=1.0, cpp_load=1.0, polling=True
    )


XEON = "Intel(R) Xeon(R) Processor"


def test_a_cpu_model_with_its_own_exponent_scales_kernel_suts_by_it_not_pollers():
    """On the Xeon VM kernel SUTs' cycles followed the core's speed about linearly (fitted
    0.98-1.26): a trial at 15 M it/s scales by 15/30, not sqrt(15/30)."""
    trials = [T(5600.0, 15.0), T(3000.0, 30.0), T(5000.0, 20.0)]  # by 1.0: 2,800, 3,000, 3,333
    kernel = case_signal([], [], cpp_trials=trials, cpp=3000.0, cpp_load=1.0, model=XEON)
    assert kernel["cpp_speed_exponent"] == speed_exponent(False, XEON) == 1.0
    assert kernel["cpp_at_load_scaled"] == 3000.0
    other = case_signal([], [], cpp_trials=trials, cpp=3000.0, cpp_load=1.0, model="AMD EPYC 7B13")
    assert other["cpp_speed_exponent"] == KERNEL and other["cpp_at_load_scaled"] == 3959.8
    poller = case_signal([], [], cpp_trials=trials, cpp=3000.0, cpp_load=1.0, polling=True, model=XEON)
    assert poller["cpp_speed_exponent"] == CPP_SPEED_EXPONENT["polling"]


def test_figures_scaled_by_another_exponent_are_not_its_history(tmp_path):
    """A history written while the kernel exponent was 0.5 on this model is not held against a
    run scaled by 1.0 (the same cost reads different figures): the speed-matched rule judges."""
    store = mixed_history(tmp_path)  # six runs scaled by 0.5
    v = cpp_verdict(tmp_path, store, "e1", 29.8, 4480.0, cpp_speed_exponent=1.0)
    assert v.metric == "cpp_at_load", v.line()
    # by their own exponent they are its history
    v = cpp_verdict(tmp_path, store, "e05", 29.8, 4480.0)
    assert v.metric == "cpp_at_load_scaled" and v.history_len == 6, v.line()


def record(tmp_path, name, speed, scaled=None, ref=CPP_REF_SPEED, **declared):
    metrics = {"ndr_pps": 5e5, "cpp_at_load": cost_at(scaled or 4000.0, speed), "sut_core_speed": speed}
    metrics.update({"cpp_speed_exponent": KERNEL, **declared})
    if scaled is not None:
        metrics.update(cpp_at_load_scaled=scaled, cpp_scaled_speed=ref)
    return write_run(tmp_path, name, metrics)


def cpp_verdict(tmp_path, store, name, speed, scaled=None, ref=CPP_REF_SPEED, **declared):
    verdicts = compare(record(tmp_path, name, speed, scaled, ref, **declared), store)
    return [v for v in verdicts if v.metric.startswith("cpp_at_load")][0]


def mixed_history(tmp_path, scaled=True):
    """Six runs of one SUT cost, half in a slow phase (15-17 M it/s), half at full speed."""
    store = str(tmp_path / ("h" if scaled else "h-unscaled"))
    for i, (speed, value) in enumerate(
        [(16.0, 4010), (15.5, 3950), (16.8, 4080), (29.5, 4000), (30.2, 3920), (29.8, 4060)]
    ):
        assert add_to_history(record(tmp_path, f"r{i}", speed, float(value) if scaled else None), store) == 1
    return store


def test_the_history_keeps_the_scaled_figure_and_its_speed(tmp_path):
    store = mixed_history(tmp_path)
    with open(history_path(store, "embedded", "S.64B-1c-x-ndrpdr")) as fh:
        entries = [json.loads(line) for line in fh]
    assert [e["cpp_at_load_scaled"] for e in entries] == [4010, 3950, 4080, 4000, 3920, 4060]
    assert {e["cpp_scaled_speed"] for e in entries} == {CPP_REF_SPEED}


def test_a_run_at_any_speed_is_held_against_the_whole_scaled_history(tmp_path):
    store = mixed_history(tmp_path)
    # six runs at both speeds count: their own spread (4 %) sets the allowance, not the declared noise
    v = cpp_verdict(tmp_path, store, "slow+12", 17.0, 4480.0)
    assert v.metric == "cpp_at_load_scaled" and v.history_len == 6, v.line()
    assert v.verdict == "regression" and "history noise (6 runs)" in v.noise_source, v.line()
    assert "every trial scaled to 30 M it/s by speed^-0.5" in v.line()
    assert cpp_verdict(tmp_path, store, "fast+12", 30.0, 4480.0).verdict == "regression"
    # the same cost in a slow phase reads higher unscaled (5,450 at 16.2) but is normal
    v = cpp_verdict(tmp_path, store, "slow+0", 16.2, 4030.0)
    assert v.verdict == "normal", v.line()


def test_a_step_past_the_allowance_fails_though_jumpavg_would_keep_it_in_the_group(tmp_path):
    """gs15 (linux-ip4, five quiet runs 1.2 % sd apart, +5 % injected read +6.1 %): jumpavg
    keeps a single run in the history's group until +7.8 %; the scaled check decides on the
    allowance (3 sd of the runs, 3.5 % here) alone."""
    store = str(tmp_path / "gs15")
    for i, value in enumerate([5773.1, 5860.0, 5830.4, 5789.2, 5680.3]):
        assert add_to_history(record(tmp_path, f"q{i}", 29.0, value), store) == 1
    v = cpp_verdict(tmp_path, store, "plus5", 28.0, 6142.0)
    assert v.metric == "cpp_at_load_scaled" and v.verdict == "regression", v.line()
    assert 3.0 < v.allowance_pct < 4.0 and "history noise (5 runs)" in v.noise_source, v.line()
    for value in (5980.0, 5650.0):  # +3.3 % and -2.4 %: within it
        assert cpp_verdict(tmp_path, store, f"n{value:.0f}", 28.0, value).verdict == "normal"


def test_a_short_history_takes_the_declared_scaled_noise_not_the_unscaled_one(tmp_path):
    """gs17 (linux-ip4, four quiet runs in the history, +10 % read +9.2 %): the declared
    cpp_noise (14 %, from unscaled spreads) let it pass; the scaled figure's own declared
    noise (``cpp_scaled_noise``, from scaled spreads) is the allowance instead."""
    store = str(tmp_path / "gs17")
    for i, value in enumerate([5911.4, 6045.2, 5897.3, 6062.4]):
        assert add_to_history(record(tmp_path, f"q{i}", 25.0, value), store) == 1
    noise = {"regression_cpp_noise": 0.14}
    v = cpp_verdict(tmp_path, store, "old", 28.0, 6527.0, **noise)
    assert v.verdict == "normal" and round(v.allowance_pct, 6) == 14.0, v.line()
    v = cpp_verdict(tmp_path, store, "new", 28.0, 6527.0, regression_cpp_scaled_noise=0.06, **noise)
    assert v.metric == "cpp_at_load_scaled" and v.verdict == "regression", v.line()
    assert round(v.allowance_pct, 6) == 6.0 and v.noise_source == "declared noise", v.line()
    # the unscaled check (no scaled history) keeps cpp_noise
    v = cpp_verdict(tmp_path, str(tmp_path / "none"), "x", 28.0, 6527.0, regression_cpp_scaled_noise=0.06)
    assert v.verdict != "regression" and v.metric == "cpp_at_load", v.line()


def test_without_enough_scaled_history_the_speed_matched_rule_applies(tmp_path):
    store = mixed_history(tmp_path, scaled=False)  # history from before the scaled figure
    v = cpp_verdict(tmp_path, store, "now", 16.0, 4030.0)
    assert v.metric == "cpp_at_load" and v.history_len == 3, v.line()  # the slow runs only
    # scaled to another reference speed: not comparable, so not used either
    store = mixed_history(tmp_path)
    v = cpp_verdict(tmp_path, store, "other-ref", 16.0, 4030.0, ref=25.0)
    assert v.metric == "cpp_at_load" and v.history_len == 3, v.line()


def test_its_disturbance_is_the_largest_in_every_trial_it_rests_on():
    fast, slow, gone = T(3000.0, 30.0), T(4100.0, 16.0), T(9000.0, 30.0, superseded=True)
    fast.details["cpu"], slow.details["cpu"], gone.details["cpu"] = (
        {"disturbance": 0.03},
        {"disturbance": 0.2},
        {"disturbance": 0.9},
    )
    sig = case_signal([], [], cpp_trials=[fast, slow, gone], cpp=3000.0, cpp_load=1.0)
    assert "cpp_at_load_scaled" in sig
    # the slow trial counts for the scaled figure, so its others' time does; a superseded one never
    assert sig["cpp_at_load_disturbance"] == 0.2
    polled = case_signal([], [], cpp_trials=[fast, slow, gone], cpp=3000.0, cpp_load=1.0, polling=True)
    assert polled["cpp_at_load_disturbance"] == 0.2  # a poller's scaled figure rests on both too
    fast.sut_cycles_per_packet = slow.sut_cycles_per_packet = None  # no busy cycles: none scaled
    polled = case_signal([], [], cpp_trials=[fast, slow, gone], cpp=3000.0, cpp_load=1.0, polling=True)
    assert polled["cpp_at_load_disturbance"] == 0.03  # the full-speed trial only


def test_a_kernel_suts_cpp_disturbance_leaves_vm_steal_out_a_pollers_does_not():
    """Steal is charged to no guest task, so a kernel SUT's CPU time per packet leaves it out;
    testpmd's busy cycles are TSC time and take it in (dpgate.telemetry.disturbance)."""
    stolen, hogged = T(3000.0, 30.0), T(3100.0, 29.0)
    stolen.details["cpu"] = {
        "disturbance": 0.18,
        "foreign_share": {"0": 0.18, "1": 0.02},
        "steal_share": {"0": 0.17, "1": 0.0},
    }
    hogged.details["cpu"] = {"disturbance": 0.04, "foreign_share": {"0": 0.01, "1": 0.04}, "steal_share": {}}
    sig = case_signal([], [], cpp_trials=[stolen, hogged], cpp=3000.0, cpp_load=1.0)
    assert sig["cpp_at_load_disturbance"] == 0.04  # the neighbour on core 1, not the steal on 0
    assert sig["cpp_at_load_steal"] == 0.17
    polled = case_signal([], [], cpp_trials=[stolen, hogged], cpp=3000.0, cpp_load=1.0, polling=True)
    assert polled["cpp_at_load_disturbance"] == 0.18 and "cpp_at_load_steal" not in polled
    hogged.details["cpu"]["foreign_share"]["1"] = 0.3  # a neighbour in the VM still counts
    assert (
        case_signal([], [], cpp_trials=[stolen, hogged], cpp=3000.0, cpp_load=1.0)["cpp_at_load_disturbance"]
        == 0.3
    )


class P(T):
    """A trial whose TG-SUT core round trip was read (near < 250 ns <= far)."""

    def __init__(self, cpp, speed, rtt):
        super().__init__(cpp, speed)
        self.details["xcore_rtt_ns"] = rtt


def test_the_scaled_figure_carries_the_placement_of_its_own_trials():
    """gk4 (Zen 3 host at half speed, 2026-11-28): cpp_at_load kept the one or two trials at
    full speed, far or across a move of the cores, and the run was "mixed" or "far" though
    16-22 of its 26-32 trials ran near; the scaled figure rests on those near trials."""
    trials = [P(3550.0, 28.0, 480.0), P(3560.0, 27.5, 470.0)]  # the fastest two: far
    trials += [P(cost_at(3000.0, s), s, 110.0) for s in (16.0, 17.5, 19.0, 21.0, 18.0)]
    out = case_signal([], [], cpp_trials=trials, cpp=3555.0, cpp_load=1.0)
    assert out["cpp_at_load_placement"] == "far" and out["cpp_scaled_placement"] == "near", out
    assert abs(out["cpp_at_load_scaled"] - 3000.0) < 1.0
    # one near trial among far ones: the scaled figure rests on the far ones (gk98's
    # linux-xconnect: 3 of 12 quiet runs so, each then kept as a far run); one of each: a mix
    out = case_signal([], [], cpp_trials=trials[:3], cpp=3555.0, cpp_load=1.0)
    assert out["cpp_scaled_placement"] == "far" and out["cpp_at_load_placement"] == "far", out
    far = [c * (s / CPP_REF_SPEED) ** KERNEL for c, s in ((3550.0, 28.0), (3560.0, 27.5))]
    assert abs(out["cpp_at_load_scaled"] - sum(far) / 2) < 1.0, out
    out = case_signal([], [], cpp_trials=trials[1:3], cpp=3555.0, cpp_load=1.0)
    assert out["cpp_scaled_placement"] == "mixed", out


def placed(tmp_path, name, scaled, cpp_where, scaled_where):
    metrics = {"ndr_pps": 5e5, "cpp_at_load": cost_at(scaled, 17.0), "sut_core_speed": 17.0}
    metrics.update(cpp_speed_exponent=KERNEL, cpp_at_load_scaled=scaled, cpp_scaled_speed=CPP_REF_SPEED)
    metrics.update(cpp_at_load_placement=cpp_where, cpp_scaled_placement=scaled_where)
    return write_run(tmp_path, name, dict(metrics, regression_cpp_scaled_noise=0.16))


def test_history_and_verdict_judge_the_scaled_figure_by_its_own_placement(tmp_path):
    store = str(tmp_path / "h")
    for i, (value, where) in enumerate([(2980.0, "far"), (2816.0, "near"), (2987.0, "mixed")]):
        assert add_to_history(placed(tmp_path, f"q{i}", value, where, "near"), store) == 1
    with open(history_path(store, "embedded", "S.64B-1c-x-ndrpdr")) as fh:
        entries = [json.loads(line) for line in fh]
    # the scaled figure of every run is kept as near; a mixed cpp_at_load is not kept
    assert [e.get("cpp_scaled_placement") for e in entries] == ["near"] * 3
    assert ["cpp_at_load" in e for e in entries] == [True, True, False]
    # +10 % injected read +22 % scaled over near trials in a run whose cpp_at_load was "mixed"
    v = [v for v in compare(placed(tmp_path, "plus10", 3569.0, "mixed", "near"), store) if "cpp" in v.metric][
        0
    ]
    assert v.metric == "cpp_at_load_scaled" and v.verdict == "regression" and v.history_len == 3, v.line()
    assert v.allowance_pct == 16.0, v.line()
    # a scaled figure over a mix of placements makes no verdict
    v = [v for v in compare(placed(tmp_path, "mix", 3569.0, "near", "mixed"), store) if "cpp" in v.metric][0]
    assert v.verdict == "inconclusive" and "near throughout" in v.note, v.line()


def test_a_lone_last_run_within_the_allowance_is_not_the_history_level_alone(tmp_path):
    """gk96 (linux-ip4, Zen 4): the sixth healthy run read 12.4 % under the five before it and
    jumpavg made it a group of its own; held against it alone, a "+5 %" read +19.9 % and failed
    against an allowance of 16.7 % that the six runs' noise set. One run is not a level: the
    run is held against all six (+7.3 %)."""
    store = str(tmp_path / "gk96")
    for i, value in enumerate([6287.0, 5927.0, 6043.0, 6264.0, 6225.0, 5386.0]):
        assert add_to_history(record(tmp_path, f"q{i}", 24.0, value), store) == 1
    v = cpp_verdict(tmp_path, store, "plus5", 24.0, 6459.0)
    assert v.metric == "cpp_at_load_scaled" and v.verdict == "normal", v.line()
    assert round(v.baseline) == 6022 and 16.0 < v.allowance_pct < 17.5, v.line()
    # two runs past a step are its level: a run beside them is normal
    store = str(tmp_path / "step")
    for i, value in enumerate([5773.1, 5860.0, 5830.4, 5789.2, 5680.3, 6600.0, 6620.0]):
        assert add_to_history(record(tmp_path, f"s{i}", 24.0, value), store) == 1
    v = cpp_verdict(tmp_path, store, "after", 24.0, 6650.0)
    assert v.verdict == "normal" and round(v.baseline) == 6610, v.line()


def raw_record(tmp_path, name, speed, raw, scaled):
    metrics = {"ndr_pps": 5e5, "cpp_at_load": raw, "sut_core_speed": speed, "cpp_speed_exponent": KERNEL}
    metrics.update(cpp_at_load_scaled=scaled, cpp_scaled_speed=CPP_REF_SPEED)
    return write_run(tmp_path, name, metrics)


# gk96, linux-xconnect on the Zen 4 VM: six quiet runs as measured and scaled
GK96 = [(42.7, 2392.5, 2830.0), (38.3, 2308.2, 2659.0), (40.7, 2383.6, 2836.0)]
GK96 += [(39.7, 2336.0, 2729.0), (43.0, 2367.5, 2834.0), (40.2, 2313.3, 2682.0)]


def raw_verdict(tmp_path, store, name, speed, raw, scaled):
    verdicts = compare(raw_record(tmp_path, name, speed, raw, scaled), store)
    return [v for v in verdicts if v.metric.startswith("cpp_at_load")][0]


def test_the_figure_as_measured_judges_where_its_history_is_the_steadier(tmp_path):
    """gk96: as measured 2,308-2,393 (3.7 %), scaled 2,659-2,836 (6.6 %): the check takes the
    figure as measured, with its own smaller allowance; the scaled figure read its "+10 %" +3.5 %."""
    store = str(tmp_path / "xc")
    for i, (speed, raw, scaled) in enumerate(GK96):
        assert add_to_history(raw_record(tmp_path, f"q{i}", speed, raw, scaled), store) == 1
    v = raw_verdict(tmp_path, store, "plus10", 41.2, 2806.3, 2858.0)
    assert v.metric == "cpp_at_load" and v.verdict == "regression", v.line()
    assert v.allowance_pct < 0.9 * 8.8 and "its allowance is under the scaled figure" in v.note, v.line()
    assert raw_verdict(tmp_path, store, "same", 40.0, 2370.0, 2760.0).verdict == "normal"
    # a rise on a core under the history's speed that the speed explains: measure again
    v = raw_verdict(tmp_path, store, "slower", 36.4, 2599.4, 2800.0)
    assert v.metric == "cpp_at_load" and v.verdict == "inconclusive", v.line()
    assert "SUT core ran at 36.4 M it/s" in v.note, v.line()
    # where the scaled figure is the steadier (linux-bridge's quiet runs: 22.8 % as measured,
    # 9.3 % scaled), it judges; and with fewer than five runs of history, as before
    store = str(tmp_path / "br")
    bridge = [(24.0, 3426.0, 3912.0), (23.8, 3873.0, 3639.0), (23.8, 3247.0, 3914.0)]
    bridge += [(23.0, 3354.0, 3961.0), (23.0, 3408.0, 3942.0), (22.7, 3155.0, 3977.0)]
    for i, (speed, raw, scaled) in enumerate(bridge):
        assert add_to_history(raw_record(tmp_path, f"b{i}", speed, raw, scaled), store) == 1
    assert raw_verdict(tmp_path, store, "b", 23.0, 3400.0, 4320.0).metric == "cpp_at_load_scaled"
    store = str(tmp_path / "short")
    for i, (speed, raw, scaled) in enumerate(GK96[:4]):
        assert add_to_history(raw_record(tmp_path, f"s{i}", speed, raw, scaled), store) == 1
    assert raw_verdict(tmp_path, store, "s", 41.2, 2806.3, 2858.0).metric == "cpp_at_load_scaled"


def test_a_core_within_the_historys_speeds_is_not_slower_than_it(tmp_path):
    """gk98 (linux-xconnect, Zen 4): five near runs read 2,332-2,341 cycles at 35.8-44.1 M it/s
    by the probe, and a "+5 %" at 42.5 (98 % of their median) read +3.8 % against the 3.0 %
    allowed: it was held as "the core was slower" though runs at that speed and below had made
    the allowance. A core slower than the history's median but within its speeds fails such a
    rise; one slower than every history run is still held (the test above, 36.4 M it/s)."""
    store = str(tmp_path / "xc")
    for i, (speed, raw, scaled) in enumerate(GK96):  # 38.3-43.0 M it/s, median 40.45
        assert add_to_history(raw_record(tmp_path, f"q{i}", speed, raw, scaled), store) == 1
    v = raw_verdict(tmp_path, store, "within", 39.0, 2530.0, 2800.0)
    assert v.metric == "cpp_at_load" and v.verdict == "regression", v.line()
    v = raw_verdict(tmp_path, store, "below", 38.0, 2530.0, 2800.0)
    assert v.verdict == "inconclusive" and "SUT core ran at 38.0 M it/s" in v.note, v.line()
