"""The history check of a polling SUT's busy cycles per kernel cycle (``cpp_at_load_per_kernel``
and, every trial taken to the reference speed, ``cpp_at_load_per_kernel_scaled``;
``dpgate.regression.cycles.per_kernel_verdict``): kept in the history, held against it where the
busy cycles alone scatter too much to see +10 %, the scaled figure compared where the history
has it (a faster core no longer hides a rise), on an older history a rise a slower core
explains inconclusive, and recorded as its own gate (``regression_cpp_kernel``)."""

from __future__ import annotations

import json
import os

import pytest
from helpers import run_robot_quietly, write_run

from dpgate.config.rebaseline import derive_case
from dpgate.config.thresholds import load_thresholds
from dpgate.model.errors import ConfigError
from dpgate.regression.compare import compare
from dpgate.regression.history import add_to_history, read_history

# gk64-gk65 (Xeon VM, 2026-12-01): quiet bring-ups of testpmd-mac read 1.21-1.27 busy cycles per
# kernel cycle while their busy cycles spread 6.7 % and more (unscaled cpp_at_load)
HEALTHY = [(1.224, 4522.0, 3650.0), (1.241, 4890.0, 3940.0), (1.210, 4310.0, 3560.0)]


def _run(tmp_path, name, per_kernel, busy, kernel, **extra):
    m = {
        "ndr_pps": 3.4e5,
        "pdr_pps": 3.5e5,
        "cpp_at_load": busy,
        "cpp_at_load_per_kernel": per_kernel,
        "cpp_at_load_kernel": kernel,
        "cpp_at_load_disturbance": 0.02,
        "sut_core_speed": 34.0,
        "regression_cpp_noise": 0.15,
        "regression_cpp_kernel_noise": 0.07,
    }
    m.update(extra)
    return write_run(tmp_path, name, m)


def _history(tmp_path):
    store = str(tmp_path / "history")
    for i, (pk, busy, kern) in enumerate(HEALTHY):
        assert add_to_history(_run(tmp_path, f"h{i}", pk, busy, kern), store) == 1
    return store


def _verdicts(tmp_path, store, name, *args, **extra):
    return {v.metric: v for v in compare(_run(tmp_path, name, *args, **extra), store)}


def test_the_history_keeps_the_ratio_and_the_kernels_cycles(tmp_path):
    store = _history(tmp_path)
    h = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert [e["cpp_at_load_per_kernel"] for e in h] == [x[0] for x in HEALTHY]
    # a figure resting on a mix of placements leaves cpp_at_load out, not the ratio
    mixed = _run(tmp_path, "mixed", 1.23, 4400.0, 3600.0, cpp_at_load_placement="mixed")
    assert add_to_history(mixed, store) == 1
    last = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")[-1]
    assert "cpp_at_load" not in last and last["cpp_at_load_per_kernel"] == 1.23


def test_a_ten_percent_rise_per_kernel_cycle_is_a_regression_the_busy_cycles_miss(tmp_path):
    store = _history(tmp_path)
    # +10 % of the SUT's work at a faster moment of the host: busy cycles +6.7 %, within their noise
    v = _verdicts(tmp_path, store, "inj", 1.336, 4880.0, 3653.0)
    assert v["cpp_at_load"].verdict == "normal", v["cpp_at_load"].line()
    pk = v["cpp_at_load_per_kernel"]
    assert pk.verdict == "regression", pk.line()
    assert pk.change_pct == pytest.approx(9.1, abs=0.1) and pk.allowance_pct == pytest.approx(7.0)
    assert "1.336 busy/kernel cycles vs 1.225 busy/kernel cycles (+9.1 %, 3 runs of history" in pk.line()
    # a healthy bring-up within the declared noise, and one faster per kernel cycle
    assert (
        _verdicts(tmp_path, store, "ok", 1.262, 5100.0, 4100.0)["cpp_at_load_per_kernel"].verdict == "normal"
    )
    assert _verdicts(tmp_path, store, "fast", 1.10, 4100.0, 3700.0)["cpp_at_load_per_kernel"].verdict == (
        "progression"
    )


def test_a_rise_per_kernel_cycle_the_suts_own_cycles_do_not_carry_is_the_references(tmp_path):
    store = _history(tmp_path)
    # the quiet README gates on the Zen 5 VM (2026-12-06): the ratio over its allowance while
    # the SUT's own busy cycles fell or hardly rose; the kernel's cycles per frame fell 10-16 %
    v = _verdicts(tmp_path, store, "drift", 1.336, 4400.0, 3293.0)
    assert v["cpp_at_load"].change_pct < 0, v["cpp_at_load"].line()
    pk = v["cpp_at_load_per_kernel"]
    assert pk.verdict == "inconclusive", pk.line()
    assert "own cpp_at_load moved -3.8 %, under half of it" in pk.note, pk.note
    assert "kernel's cycles per frame about -11.8 %" in pk.note, pk.note
    # busy cycles +1.7 %: most of the +9.1 % is still the reference's
    assert _verdicts(tmp_path, store, "little", 1.336, 4650.0, 3480.0)["cpp_at_load_per_kernel"].verdict == (
        "inconclusive"
    )
    # the same ratio with the busy cycles up by more than half of it is a regression
    assert (
        _verdicts(tmp_path, store, "up", 1.336, 4850.0, 3630.0)["cpp_at_load_per_kernel"].verdict
        == "regression"
    )


def test_a_rise_the_slower_core_explains_is_inconclusive_not_the_kernels_own_scatter(tmp_path):
    store = _history(tmp_path)
    # on a core far slower than the history's the ratio still follows it a little (speed^-0.074):
    # +9.1 % at 20 M it/s is about +4.9 % at the history's 34: inconclusive, with the figure
    slow = _verdicts(tmp_path, store, "slow", 1.336, 7000.0, 5240.0, sut_core_speed=20.0)
    pk = slow["cpp_at_load_per_kernel"]
    assert pk.verdict == "inconclusive", pk.line()
    assert (
        pk.note
        == "SUT core ran at 20.0 M it/s, 59 % of the history's 34.0: at its speed about 1.285, within 1.311"
    )
    # +7.3 % at 91 % of the history's speed (full speed by the gate's measure, though the speed
    # would take it to 1.306, within 1.311), the busy cycles +6.7 %: no excuse, the regression
    assert (
        _verdicts(tmp_path, store, "bit", 1.315, 4880.0, 3711.0, sut_core_speed=31.0)[
            "cpp_at_load_per_kernel"
        ].verdict
        == "regression"
    )
    # the kernel's cycles per frame 40 % under the history's (they scatter as the busy cycles do,
    # 1,855-3,140 over OVS AF_XDP's quiet runs) and the busy cycles down too: the ratio's rise
    # is the reference's, not the SUT's
    moved = _verdicts(tmp_path, store, "moved", 1.336, 2800.0, 2100.0)["cpp_at_load_per_kernel"]
    assert moved.verdict == "inconclusive" and "the rest is its kernel reference's" in moved.note


def _scaled_history(tmp_path, exponent=0.074):
    # quiet runs at slow and fast moments of the host: the ratio as measured 1.21-1.27 follows
    # the core's speed a little; scaled to 30 M it/s they read 1.20-1.21
    store = str(tmp_path / "scaled-history")
    for i, (pk, scaled, speed) in enumerate(
        [(1.262, 1.205, 21.0), (1.214, 1.210, 29.0), (1.198, 1.208, 33.5)]
    ):
        run = _run(
            tmp_path,
            f"s{i}",
            pk,
            4600.0,
            3700.0,
            sut_core_speed=speed,
            cpp_at_load_per_kernel_scaled=scaled,
            cpp_kernel_speed_exponent=exponent,
        )
        assert add_to_history(run, store) == 1
    return store


def test_the_scaled_ratio_is_compared_where_the_history_has_it(tmp_path):
    store = _scaled_history(tmp_path)
    h = read_history(store, "embedded", "S.64B-1c-x-ndrpdr")
    assert [(e["cpp_at_load_per_kernel_scaled"], e["cpp_kernel_speed_exponent"]) for e in h][0] == (
        1.205,
        0.074,
    )
    scaled = {"cpp_kernel_speed_exponent": 0.074}
    # +8 % on a fast core: as measured +0.2 % over the history's slow and fast runs (hidden by
    # the speed), scaled +7.9 %, beyond the 7 % allowance; the busy cycles +6.5 %
    v = _verdicts(
        tmp_path,
        store,
        "fastinj",
        1.2275,
        4900.0,
        3992.0,
        sut_core_speed=35.0,
        cpp_at_load_per_kernel_scaled=1.3035,
        **scaled,
    )
    assert "cpp_at_load_per_kernel" not in v, v  # one verdict: on the scaled figure
    pk = v["cpp_at_load_per_kernel_scaled"]
    assert pk.verdict == "regression" and pk.change_pct == pytest.approx(7.9, abs=0.1), pk.line()
    assert "busy/kernel cycles" in pk.line()
    # a healthy run on a slow core: as measured +2.9 %, scaled +0.3 %: normal, no speed excuse needed
    ok = _verdicts(
        tmp_path,
        store,
        "slowok",
        1.2605,
        4900.0,
        3890.0,
        sut_core_speed=20.0,
        cpp_at_load_per_kernel_scaled=1.2115,
        **scaled,
    )["cpp_at_load_per_kernel_scaled"]
    assert ok.verdict == "normal" and ok.note == "", ok.line()
    # figures scaled by another exponent are not compared: the ratio as measured is, as before
    other = _verdicts(
        tmp_path,
        store,
        "otherexp",
        1.2275,
        4500.0,
        3660.0,
        sut_core_speed=35.0,
        cpp_at_load_per_kernel_scaled=1.30,
        cpp_kernel_speed_exponent=0.2,
    )
    assert (
        "cpp_at_load_per_kernel_scaled" not in other and other["cpp_at_load_per_kernel"].verdict == "normal"
    )


def test_an_older_history_without_the_scaled_figure_is_compared_as_measured(tmp_path):
    store = _history(tmp_path)
    v = _verdicts(
        tmp_path,
        store,
        "new",
        1.336,
        4880.0,
        3653.0,
        cpp_at_load_per_kernel_scaled=1.35,
        cpp_kernel_speed_exponent=0.074,
    )
    assert set(v) >= {"cpp_at_load_per_kernel"} and "cpp_at_load_per_kernel_scaled" not in v
    assert v["cpp_at_load_per_kernel"].verdict == "regression"


def test_too_little_history_and_no_figure(tmp_path):
    store = str(tmp_path / "history")
    add_to_history(_run(tmp_path, "h0", *HEALTHY[0]), store)
    pk = _verdicts(tmp_path, store, "one", 1.40, 4500.0, 3600.0)["cpp_at_load_per_kernel"]
    assert pk.verdict == "no history" and pk.note == "1 history run(s) with it, 2 needed"
    # a kernel SUT (no busy-cycle report) has no such figure: no verdict on it
    kernel_sut = write_run(tmp_path, "k", {"ndr_pps": 3.4e5, "cpp_at_load": 4000.0})
    assert "cpp_at_load_per_kernel" not in {v.metric for v in compare(kernel_sut, store)}


def test_the_declared_noise_falls_back_to_cpp_noise(tmp_path):
    store = _history(tmp_path)
    # without cpp_kernel_noise the busy cycles' 15 % is the allowance: +9.1 % passes
    pk = _verdicts(tmp_path, store, "nodecl", 1.336, 4650.0, 3480.0, regression_cpp_kernel_noise=None)[
        "cpp_at_load_per_kernel"
    ]
    assert pk.verdict == "normal" and pk.allowance_pct == pytest.approx(15.0)


def test_thresholds_and_rebaseline_carry_cpp_kernel_noise(tmp_path):
    th = tmp_path / "th.yaml"
    th.write_text("nfs: {testpmd-mac: {64B: {ndr_min: 0.2 Mpps, cpp_kernel_noise: 10%}}}")
    assert load_thresholds(str(th)).lookup("testpmd-mac", "64B").cpp_kernel_noise == "10%"
    th.write_text("nfs: {testpmd-mac: {64B: {ndr_min: 0.2 Mpps, cpp_kernel_noise: 1.5}}}")
    with pytest.raises(ConfigError, match="cpp_kernel_noise"):
        load_thresholds(str(th))
    row = derive_case({"ndr_pps": [3.4e5, 3.5e5], "cpp_at_load_per_kernel": [1.20, 1.26, 1.23]})
    assert row["cpp_kernel_noise"] == "6%"  # 5.0 % spread x 1.1
    # the scaled figure, where every run has it, is what the allowance comes from
    both = {"cpp_at_load_per_kernel": [1.20, 1.26, 1.23], "cpp_at_load_per_kernel_scaled": [1.21, 1.22, 1.24]}
    assert (
        derive_case({"ndr_pps": [3.4e5, 3.5e5], **both})["cpp_kernel_noise"] == "4%"
    )  # 2.5 %: the 3 % least spread x 1.1
    both["cpp_at_load_per_kernel_scaled"] = [1.21, 1.22]  # one run without it: as measured
    assert derive_case({"ndr_pps": [3.4e5, 3.5e5], **both})["cpp_kernel_noise"] == "6%"
    assert "cpp_kernel_noise" not in derive_case({"ndr_pps": [3.4e5, 3.5e5]})


_SUITE = """*** Settings ***
Library    dpgate.robotlib.Gates
Library    KernLib.py

*** Test Cases ***
Case
    ${r}=    Polling Result    ${PK}    ${DIST}
    Throughput Should Not Regress    ${r}    ${HISTORY}    min_change=3%    cpp_noise=15%
    ...    cpp_kernel_noise=7%
"""

_LIB = """from helpers import ndrpdr_result


def polling_result(pk, dist):
    tel = {"cpp_at_load": 4880.0, "cpp_at_load_per_kernel": float(pk), "cpp_at_load_kernel": 3653.0,
           "cpp_at_load_disturbance": float(dist), "sut_core_speed": 34.0}
    return ndrpdr_result(3.4e5, max_pps=9e5, testbed="embedded", telemetry=tel)
"""


def _robot(tmp_path, pk: float, dist: float):
    """The keyword for real in a Robot run; returns (status, message, gate name -> status)."""
    from dpgate.outputs.results import load_records
    from dpgate.regression.history import history_path

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "Kern.robot").write_text(_SUITE)
    (tmp_path / "KernLib.py").write_text(_LIB)
    store = tmp_path / "h"
    path = history_path(str(store), "embedded", "Kern.Case")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        for i, (pkh, busy, _kern) in enumerate(HEALTHY):
            entry = {"cpp_at_load": busy, "cpp_at_load_per_kernel": pkh}
            fh.write(json.dumps({"time": i, "ndr_pps": 3.4e5, **entry}) + "\n")
    out = tmp_path / "out"
    variables = [f"HISTORY:{store}", f"PK:{pk}", f"DIST:{dist}"]
    test = run_robot_quietly(tmp_path / "Kern.robot", out, variables, [tmp_path])
    gates = {g["name"]: g for rec in load_records(str(out)) for g in rec.get("gates", [])}
    return test.status, test.message, gates


def test_the_gate_fails_on_a_clean_rise_and_holds_a_disturbed_one(tmp_path):
    status, message, gates = _robot(tmp_path / "clean", 1.336, 0.02)
    assert status == "FAIL" and "cpp_at_load_per_kernel: regression" in message, message
    assert gates["regression_cpp_kernel"]["passed"] is False, gates
    assert gates["regression_cpp"]["passed"] is True  # the busy cycles alone: within their noise
    # the same rise measured beside a neighbour (35 % of the SUT core): inconclusive, not FAIL
    status, message, gates = _robot(tmp_path / "hog", 1.336, 0.35)
    assert status == "PASS", message
    assert gates["regression_cpp_kernel"]["skipped"] is True, gates
