"""Regression verdicts (jumpavg + minimum change), history store, CI metric files."""

import csv
import random

import pytest
from helpers import ndrpdr_result, write_run

from dpgate.model.errors import ConfigError
from dpgate.outputs.exporters import write_csv, write_openmetrics
from dpgate.outputs.results import load_records
from dpgate.regression.compare import classify_current, compare, verdicts_for
from dpgate.regression.history import add_to_history, read_history


def hist(n=30, avg=1.0e6, noise=0.01, seed=1):
    rng = random.Random(seed)
    return [avg * (1 + rng.gauss(0, noise)) for _ in range(n)]


def test_no_history():
    assert classify_current([], [1e6]).verdict == "no history"


def test_unchanged_is_normal_and_clear_drop_is_regression():
    h = hist()
    assert classify_current(h, [1.0e6]).verdict == "normal"
    v = classify_current(h, [0.90e6, 0.905e6, 0.895e6])
    assert v.verdict == "regression" and v.change_pct == pytest.approx(-10, abs=1.5)
    assert classify_current(h, [1.10e6, 1.11e6, 1.09e6]).verdict == "progression"


def test_single_outlier_below_min_change_does_not_flap():
    # field fact: one 9.3 among 9.9s is a jumpavg "regression"; the 3 % minimum keeps it normal
    h = [9.9e5] * 29 + [9.91e5]
    v = classify_current(h, [9.75e5])
    assert v.verdict == "normal"


def test_min_change_is_configurable():
    h = hist(noise=0.002)
    assert classify_current(h, [0.96e6, 0.961e6, 0.959e6], min_change=0.03).verdict == "regression"
    assert classify_current(h, [0.96e6, 0.961e6, 0.959e6], min_change=0.05).verdict == "normal"


def make_run(tmp_path, name, ndr, status="PASS"):
    metrics = {"ndr_pps": ndr, "pdr_pps": ndr * 1.01, "cpp": 5000.0, "ipc": "not supported (x)"}
    return write_run(tmp_path, name, metrics, status)


def test_history_add_and_compare_end_to_end(tmp_path):
    store = str(tmp_path / "history")
    for i in range(12):
        add_to_history(make_run(tmp_path, f"r{i}", 5.0e5 * (1 + 0.005 * ((-1) ** i))), store, commit=f"c{i}")
    h = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert len(h) == 12 and h[0]["commit"] == "c0"
    assert {v.verdict for v in compare(make_run(tmp_path, "ok", 5.0e5), store)} == {"normal"}
    bad = compare(make_run(tmp_path, "slow", 4.5e5), store)
    assert [v.verdict for v in bad] == ["regression", "regression"]
    assert "-10.0 %" in bad[0].line()


def test_corrupted_history_is_a_clear_error(tmp_path):
    store = tmp_path / "h"
    add_to_history(make_run(tmp_path, "a", 1e5), str(store))
    path = next(store.rglob("*.jsonl"))
    path.write_text("{not json\n")
    with pytest.raises(ConfigError, match="line 1 is not JSON"):
        read_history(str(store), "embedded", "S.64B-1c-x-ndrpdr")


def test_openmetrics_and_csv(tmp_path):
    recs = load_records(make_run(tmp_path, "m", 2.5e5, status="FAIL"))
    text = open(write_openmetrics(recs, str(tmp_path / "metrics.txt"))).read()
    assert 'dpgate_ndr_pps{test="64B-1c-x-ndrpdr",suite="S"} 250000' in text
    assert 'dpgate_passed{test="64B-1c-x-ndrpdr",suite="S"} 0' in text
    assert "ipc" not in text  # not-supported values are not numbers
    rows = list(csv.reader(open(write_csv(recs, str(tmp_path / "r.csv")))))
    assert rows[0][:3] == ["test", "status", "ndr_pps"] and rows[1][:3] == [
        "64B-1c-x-ndrpdr",
        "FAIL",
        "250000.0",
    ]


def test_a_drop_at_the_generator_ceiling_is_not_a_sut_regression(tmp_path):
    store = str(tmp_path / "history")
    for i in range(10):
        add_to_history(make_run(tmp_path, f"r{i}", 6.0e5), store)
    out = write_run(tmp_path, "gen", {"ndr_pps": 5.0e5, "pdr_pps": 5.0e5, "limited_by": "generator"})
    assert {v.verdict for v in compare(out, store)} == {"generator-limited"}


# -- samples, noise allowance, injected runs -------------------------------------------------
def test_doctests_of_compare():
    import doctest

    import dpgate.regression.compare as mod

    assert doctest.testmod(mod).failed == 0


def mrr_run(tmp_path, name, mrr, spread=0.01, status="PASS", steal=None, limited="sut"):
    m = {"ndr_pps": mrr * 0.9, "pdr_pps": mrr * 0.95, "mrr_pps": mrr, "mrr_limited_by": limited}
    if steal:
        m["injected_sut_cpu_steal"] = steal
    return write_run(
        tmp_path, name, m, status, samples={"mrr_pps": [mrr * (1 - spread), mrr, mrr * (1 + spread)]}
    )


def test_history_keeps_mrr_samples_and_jumpavg_gets_them_as_lists(tmp_path):
    store = str(tmp_path / "h")
    for i in range(6):
        add_to_history(mrr_run(tmp_path, f"r{i}", 4.0e5 * (1 + 0.004 * (i % 3))), store)
    h = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert len(h[0]["samples"]["mrr_pps"]) == 3 and h[0]["mrr_pps"] == 4.0e5
    verdicts = {v.metric: v for v in compare(mrr_run(tmp_path, "ok", 4.01e5), store)}
    assert set(verdicts) == {"ndr_pps", "pdr_pps", "mrr_pps"} and verdicts["mrr_pps"].verdict == "normal"
    slow = {v.metric: v for v in compare(mrr_run(tmp_path, "slow", 3.6e5), store)}
    assert slow["mrr_pps"].verdict == "regression" and slow["mrr_pps"].change_pct == pytest.approx(
        -10.3, abs=0.5
    )


def test_short_history_uses_declared_noise_then_its_own_spread():
    assert classify_current([1.0e6], [0.94e6]).verdict == "regression"  # no noise known: jumpavg + 3 %
    assert classify_current([1.0e6], [0.92e6], noise=0.15).verdict == "normal"
    v = classify_current([1.0e6], [0.80e6], noise=0.15)
    assert (
        v.verdict == "regression"
        and v.noise_source == "declared noise"
        and v.allowance_pct == pytest.approx(15)
    )
    # two healthy runs 20 % apart: a third inside that spread is not a regression
    v = classify_current([1.0e6, 0.8e6], [0.82e6], noise=0.05)
    assert v.verdict == "normal" and v.noise_source == "history spread (2 runs)"


def test_long_history_estimates_its_own_noise():
    noisy = hist(n=20, noise=0.08, seed=3)
    v = classify_current(noisy, [0.90e6])  # -10 %, but the history's own noise is 8 %
    assert v.verdict == "normal" and v.noise_source.startswith("history noise")
    assert classify_current(hist(n=20, noise=0.005), [0.90e6]).verdict == "regression"


def test_a_few_runs_alike_do_not_shrink_the_allowance_to_nothing():
    # gs14, linux-bridge cpp_at_load_scaled: three of five runs within 3 cycles, MAD 2
    runs = [4002.4, 3847.6, 4001.3, 3999.4, 4066.9]
    v = classify_current(runs, [4230.0], 0.03, 0.27, lower_is_better=True)  # +5.9 %
    assert v.verdict == "normal" and v.allowance_pct > 6.0, v.line()
    assert classify_current(runs, [4600.0], 0.03, 0.27, lower_is_better=True).verdict == "regression"


def test_declared_noise_recorded_by_the_gate_is_used_offline(tmp_path):
    store = str(tmp_path / "h")
    add_to_history(make_run(tmp_path, "a", 5.0e5), store)
    out = write_run(tmp_path, "cur", {"ndr_pps": 4.4e5, "pdr_pps": 4.4e5, "regression_noise": 0.2})
    assert {v.verdict for v in compare(out, store)} == {"normal"}


def test_injected_and_failed_runs_stay_out_of_the_gates_history(tmp_path):
    store = str(tmp_path / "h")
    assert add_to_history(mrr_run(tmp_path, "inj", 3.6e5, steal=0.1), store) == 0
    assert add_to_history(mrr_run(tmp_path, "bad", 3.6e5, status="FAIL"), store, only_passed=True) == 0
    assert add_to_history(mrr_run(tmp_path, "good", 4.0e5), store, only_passed=True) == 1
    assert read_history(store, "embedded", "S.64B-1c-x-ndrpdr")[0]["mrr_pps"] == 4.0e5


def test_mrr_drop_at_the_generator_ceiling_is_generator_limited(tmp_path):
    store = str(tmp_path / "h")
    for i in range(6):
        add_to_history(mrr_run(tmp_path, f"r{i}", 6.0e5, limited="generator"), store)
    v = {x.metric: x for x in compare(mrr_run(tmp_path, "gen", 5.0e5, limited="generator"), store)}
    assert v["mrr_pps"].verdict == "generator-limited"


def test_mrr_under_a_ceiling_the_ndr_reached_is_the_generators():
    """gk98 linux-bridge: NDR at the 0.931 Mpps ceiling, then MRR trials at that same load
    sending 0.836-0.914 with the SUT dropping nothing: the shortfall is not the SUT's."""

    def rec(ndr, mrr):
        return ndrpdr_result(ndr, max_pps=930976.0, mrr_samples=mrr).metrics()

    assert rec(930976.0, (913843.0, 835552.0, 879856.0))["mrr_limited_by"] == "generator"
    # the SUT under the ceiling at NDR: its MRR is its own, however it compares
    assert rec(800000.0, (835552.0, 879856.0))["mrr_limited_by"] == "sut"
    assert rec(800000.0, (930000.0,))["mrr_limited_by"] == "generator"


def test_a_run_already_in_the_history_is_not_compared_with_itself(tmp_path):
    store = str(tmp_path / "h")
    add_to_history(make_run(tmp_path, "base", 5.0e5), store)
    slow = make_run(tmp_path, "slow", 4.0e5)
    add_to_history(slow, store)  # as 'dpgate gate' does at the end of a run
    v = compare(slow, store)
    assert {x.history_len for x in v} == {1} and {x.verdict for x in v} == {"regression"}


def test_mrr_has_its_own_declared_noise(tmp_path):
    store = str(tmp_path / "h")
    add_to_history(mrr_run(tmp_path, "base", 4.0e5), store)
    out = mrr_run(tmp_path, "cur", 3.6e5)  # -10 % on every metric
    rec = load_records(out)[0]
    v = {x.metric: x.verdict for x in verdicts_for(rec, store, noise=0.30, mrr_noise=0.05)}
    assert v == {"ndr_pps": "normal", "pdr_pps": "normal", "mrr_pps": "regression"}
    # without its own, MRR falls back to the NDR/PDR noise
    assert {x.verdict for x in verdicts_for(rec, store, noise=0.30)} == {"normal"}


def test_a_rise_over_a_history_at_the_generator_ceiling_is_not_a_sut_progression(tmp_path):
    store = str(tmp_path / "h")
    add_to_history(mrr_run(tmp_path, "low-ceiling", 4.68e5, limited="generator"), store)
    v = {
        x.metric: x.verdict
        for x in compare(mrr_run(tmp_path, "high-ceiling", 6.4e5, limited="generator"), store)
    }
    assert v["mrr_pps"] == "generator-limited"
    assert read_history(store, "embedded", "S.64B-1c-x-ndrpdr")[0]["mrr_limited_by"] == "generator"
    # over a SUT-limited history the same rise is a progression
    store2 = str(tmp_path / "h2")
    add_to_history(mrr_run(tmp_path, "sut", 4.68e5, limited="sut"), store2)
    v = {x.metric: x.verdict for x in compare(mrr_run(tmp_path, "faster", 6.4e5, limited="sut"), store2)}
    assert v["mrr_pps"] == "progression"


def test_disturbed_tests_never_enter_the_history(tmp_path):
    store = str(tmp_path / "history")
    quiet = {"ndr_pps": 5.0e5, "pdr_pps": 5.0e5, "disturbance": 0.03}
    hogged = {"ndr_pps": 2.0e5, "pdr_pps": 2.0e5, "disturbance": 0.62}
    assert add_to_history(write_run(tmp_path, "quiet", quiet, "PASS"), store) == 1
    assert add_to_history(write_run(tmp_path, "hogged", hogged, "PASS"), store) == 0
    assert add_to_history(write_run(tmp_path, "hogged2", hogged, "PASS"), store, disturbance_max=0.7) == 1
    assert [h["ndr_pps"] for h in read_history(store, "embedded", "S.64B-1c-x-ndrpdr")] == [5.0e5, 2.0e5]


def test_a_test_disturbed_in_its_search_only_gives_the_history_its_cpp_at_load(tmp_path):
    store = str(tmp_path / "history")
    # a neighbour during the search, none in the cpp_at_load trials: cpp_at_load enters alone
    searched = {"ndr_pps": 2.0e5, "pdr_pps": 2.1e5, "mrr_pps": 2.2e5, "cpp_at_load": 5900.0}
    searched.update(disturbance=0.4, disturbance_foreign=0.35, cpp_at_load_disturbance=0.02)
    assert add_to_history(write_run(tmp_path, "searched", searched, "PASS"), store) == 1
    (h,) = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert h["cpp_at_load"] == 5900.0 and not {"ndr_pps", "pdr_pps", "mrr_pps"} & set(h), h
    # the neighbour in the cpp_at_load trials too (or unmeasured there): nothing enters
    unmeasured = {k: v for k, v in searched.items() if k != "cpp_at_load_disturbance"}
    for i, run in enumerate(({**searched, "cpp_at_load_disturbance": 0.35}, unmeasured)):
        assert add_to_history(write_run(tmp_path, f"both{i}", run, "PASS"), store) == 0
    # and the throughput comparison never sees it: no history for NDR, one run for cpp_at_load
    now = {"ndr_pps": 5.0e5, "pdr_pps": 5.0e5, "cpp_at_load": 5950.0, "disturbance": 0.02}
    v = {x.metric: x for x in compare(write_run(tmp_path, "now", now), store)}
    assert v["ndr_pps"].verdict == "no history" and v["cpp_at_load"].history_len == 1


def test_a_cpp_at_load_rise_on_a_slow_core_is_inconclusive_not_a_regression(tmp_path):
    store = str(tmp_path / "h")
    for i, (cpp, speed) in enumerate([(2650, 30.2), (2600, 29.8), (2700, 30.5), (2620, 30.0), (2680, 29.6)]):
        run = {"ndr_pps": 5e5, "cpp_at_load": float(cpp), "sut_core_speed": speed}
        add_to_history(write_run(tmp_path, f"r{i}", run), store)

    def verdict(cpp, speed):
        run = {"ndr_pps": 5e5, "cpp_at_load": cpp, "sut_core_speed": speed}
        return {v.metric: v for v in compare(write_run(tmp_path, f"c{cpp}{speed}", run), store)}[
            "cpp_at_load"
        ]

    assert verdict(3300.0, 29.9).verdict == "regression"  # +24 % with the core at full speed
    slow = verdict(3300.0, 21.0)  # the same, with the host running the core 30 % slower
    assert slow.verdict == "inconclusive"
    assert slow.line().endswith(
        "SUT core ran at 21.0 M it/s, 70 % of the history's 30.0: the host, not the SUT, may be slower"
    )
    assert verdict(2640.0, 21.0).verdict == "normal"  # a slow core alone is not a verdict
    # 93 % of the history's speed: a rise that speed explains is inconclusive, a larger one is not
    band = verdict(2900.0, 28.0)
    assert (
        band.verdict == "inconclusive" and "93 % of the history's 30.0: at its speed about 2707" in band.note
    )
    assert verdict(3300.0, 28.0).verdict == "regression"


def test_slow_host_runs_build_the_cpp_history_but_are_no_throughput_reference(tmp_path):
    store = str(tmp_path / "h")

    def run(name, ndr, cpp, disturbance, foreign):
        metrics = {"ndr_pps": ndr, "pdr_pps": ndr, "cpp_at_load": cpp, "sut_core_speed": 30.0}
        metrics.update(
            disturbance=disturbance, disturbance_foreign=foreign, core_speed_min=30 * (1 - disturbance)
        )
        return write_run(tmp_path, name, metrics)

    # a neighbour's CPU time keeps a run out; a slow host phase alone does not
    assert add_to_history(run("neighbour", 5.0e5, 3000.0, 0.4, 0.4), store) == 0
    for i in range(4):
        assert add_to_history(run(f"slow{i}", 3.0e5 * (1 + 0.01 * i), 3000.0 + 10 * i, 0.5, 0.02), store) == 1
    for i in range(4):
        assert (
            add_to_history(run(f"fast{i}", 5.0e5 * (1 + 0.01 * i), 3010.0 + 10 * i, 0.03, 0.03), store) == 1
        )
    h = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert len(h) == 8 and h[0]["disturbance"] == 0.5 and h[0]["core_speed_min"] == 15.0
    v = {x.metric: x for x in compare(run("now", 5.0e5, 3400.0, 0.03, 0.03), store)}
    # NDR against the four full-speed runs only: normal (with the slow ones: a progression)
    assert v["ndr_pps"].verdict == "normal" and v["ndr_pps"].history_len == 4
    # cpp_at_load against all eight (its trials were timed at full speed): +12 % is a regression
    assert v["cpp_at_load"].verdict == "regression" and v["cpp_at_load"].history_len == 8


def test_a_run_is_compared_with_the_runs_of_its_cpu_model_only(tmp_path):
    """testpmd-mac forwarded at ~11,000 cycles a packet on the Zen 3 host and ~4,500 on the Xeon
    one (both the slow class by speed): a pool that changes hosts is not a SUT that changed."""
    store = str(tmp_path / "history")

    def run(name, ndr, model):
        metrics = {"ndr_pps": ndr, "pdr_pps": ndr, "host_cpu_model": model}
        return write_run(tmp_path, name, {k: v for k, v in metrics.items() if v is not None}, "PASS")

    for i in range(6):
        add_to_history(run(f"zen{i}", 5.0e5 * (1 + 0.004 * (-1) ** i), "AMD EPYC 7B13"), store)
        add_to_history(run(f"xeon{i}", 3.0e5 * (1 + 0.004 * (-1) ** i), "Intel(R) Xeon(R) Processor"), store)
    h = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert {e["host_cpu_model"] for e in h} == {"AMD EPYC 7B13", "Intel(R) Xeon(R) Processor"}
    same = compare(run("x", 3.0e5, "Intel(R) Xeon(R) Processor"), store)
    assert [v.verdict for v in same] == ["normal", "normal"]
    assert all(v.history_len == 6 and "6 run(s) of other CPUs left out" in v.line() for v in same)
    drop = compare(run("y", 2.6e5, "Intel(R) Xeon(R) Processor"), store)
    assert [v.verdict for v in drop] == ["regression", "regression"]
    new = compare(run("z", 3.0e5, "Intel(R) Xeon(R) Gold 6248"), store)
    assert [v.verdict for v in new] == ["no history"] * 2 and "12 run(s) of other" in new[0].line()
    # a run that names no model (a lab testbed) keeps the whole history, as before
    assert {v.history_len for v in compare(run("w", 4.0e5, None), store)} == {12}


def test_hosts_whose_model_name_a_hypervisor_cut_are_told_apart_by_family_and_model(tmp_path):
    """The Zen 4 VM's /proc/cpuinfo says only ``AMD EPYC``, as other AMD generations' VMs may:
    the history compares runs of one ``host_cpu_id`` where both name one, and entries from
    before dpgate recorded it by the model name alone."""
    store = str(tmp_path / "history")
    zen3, zen4 = "AuthenticAMD family 25 model 1", "AuthenticAMD family 25 model 17"

    def run(name, ndr, cpu):
        metrics = {"ndr_pps": ndr, "pdr_pps": ndr, "host_cpu_model": "AMD EPYC", "host_cpu_id": cpu}
        return write_run(tmp_path, name, {k: v for k, v in metrics.items() if v is not None}, "PASS")

    for i in range(4):
        add_to_history(run(f"z3-{i}", 8.0e5 * (1 + 0.004 * (-1) ** i), zen3), store)
        add_to_history(run(f"z4-{i}", 5.0e5 * (1 + 0.004 * (-1) ** i), zen4), store)
    # by the model name alone the Zen 4 runs would make the same NDR a 37 % drop
    assert [v.verdict for v in compare(run("z3-now", 8.0e5, zen3), store)] == ["normal", "normal"]
    add_to_history(run("old", 5.0e5, None), store)  # before host_cpu_id: the model name only
    h = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert sorted(str(e.get("host_cpu_id")) for e in h).count(zen4) == 4
    same = compare(run("now", 5.0e5, zen4), store)
    assert [v.verdict for v in same] == ["normal", "normal"], [v.line() for v in same]
    assert all(v.history_len == 5 and "4 run(s) of other CPUs left out" in v.line() for v in same)
    # and such an entry is compared with every run of its model name
    assert compare(run("z3-later", 8.0e5, zen3), store)[0].history_len == 5


def test_the_compare_command_holds_a_disturbed_regression_as_the_gate_does(tmp_path, capsys):
    from dpgate.cli.main import main

    store = str(tmp_path / "history")
    for i in range(6):
        add_to_history(make_run(tmp_path, f"r{i}", 5.0e5 * (1 + 0.005 * ((-1) ** i))), store)
    quiet = write_run(tmp_path, "quiet", {"ndr_pps": 4.0e5, "pdr_pps": 4.0e5, "disturbance": 0.02})
    noisy = write_run(tmp_path, "noisy", {"ndr_pps": 4.0e5, "pdr_pps": 4.0e5, "disturbance": 0.31})
    assert main(["compare", quiet, "--history", store]) == 1
    assert "2 regression(s) in 2 checks, 0 held" in capsys.readouterr().err
    assert main(["compare", noisy, "--history", store]) == 0
    out, err = capsys.readouterr()
    assert "(inconclusive: disturbed measurement: 31.0 % of a TG/SUT core" in out
    assert "0 regression(s) in 2 checks, 2 held as disturbed" in err
    assert main(["compare", noisy, "--history", store, "--disturbance-max", "50%"]) == 1
    assert main(["compare", noisy, "--history", store, "--disturbance-max", "lots"]) == 2
