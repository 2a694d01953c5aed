"""Fixed floors and ceilings on a host in a slow phase: inconclusive while the speed explains
the miss, FAIL when the value misses even the limit moved by the cores' speed
(``dpgate.telemetry.slowphase``); a neighbour's time keeps any miss inconclusive."""

from __future__ import annotations

import pytest
from helpers import ndrpdr_result
from robot.api import Failure, SkipExecution

from dpgate.config.thresholds import load_thresholds
from dpgate.config.units import parse_rate
from dpgate.robotlib import Gates
from dpgate.telemetry.slowphase import beyond_slow, slow_ratio

#: the Zen 3 host's usual case: cores at half speed, others' time small
SLOW = {"disturbance": 0.5, "disturbance_foreign": 0.03, "core_speed_min": 15.0}


def result(ndr, telemetry, max_pps=900_000.0, hz=2.4e9):
    return ndrpdr_result(ndr, telemetry=telemetry, max_pps=max_pps, hz=hz)


def test_a_floor_missed_within_what_the_slow_phase_explains_is_inconclusive():
    # 0.200 < floor 0.240, but at half speed the floor would be 0.120
    with pytest.raises(SkipExecution, match=r"ndr_min inconclusive: NDR 0.200 Mpps < floor 0.240 Mpps"):
        Gates().throughput_should_be_at_least(result(200_000.0, SLOW), parse_rate("0.240 Mpps"))


def test_a_floor_missed_beyond_what_the_slow_phase_explains_fails_and_says_why():
    with pytest.raises(
        Failure,
        match=r"^NDR 0.080 Mpps < floor 0.240 Mpps \(-66.7 %\), more than the slow host phase explains: "
        r"its cores ran at 50 % of full speed \(15 M it/s; others took 3.0 % of a core\), "
        r"where the floor would be 0.120 Mpps$",
    ):
        Gates().throughput_should_be_at_least(result(80_000.0, SLOW), parse_rate("0.240 Mpps"))
    with pytest.raises(Failure, match=r"^PDR 0.080 Mpps < floor 0.240 Mpps"):
        Gates().throughput_should_be_at_least(result(80_000.0, SLOW), parse_rate("0.240 Mpps"), "PDR")


def test_a_neighbour_keeps_even_a_deep_miss_inconclusive():
    hog = {**SLOW, "disturbance_foreign": 0.31, "disturbance": 0.5}
    with pytest.raises(SkipExecution, match="50.0 % of a TG/SUT core"):
        Gates().throughput_should_be_at_least(result(20_000.0, hog), parse_rate("0.240 Mpps"))
    # records from before the split (no disturbance_foreign): as before, inconclusive
    with pytest.raises(SkipExecution):
        Gates().throughput_should_be_at_least(
            result(20_000.0, {"disturbance": 0.5}), parse_rate("0.240 Mpps")
        )


def test_a_miss_at_the_generators_ceiling_stays_inconclusive_however_deep():
    with pytest.raises(SkipExecution, match="at the generator's ceiling"):
        Gates().throughput_should_be_at_least(
            result(80_000.0, SLOW, max_pps=80_000.0), parse_rate("0.240 Mpps")
        )


def test_cpp_at_ndr_over_its_ceiling_by_more_than_the_speed_explains_fails():
    # CPP at NDR = 2.4e9 / NDR: 30,000 at 80 kpps; ceiling 10,000 would be 20,000 at half speed
    with pytest.raises(Failure, match=r"^CPP 30000 > ceiling 10000 .*where the ceiling would be 20000$"):
        Gates().cycles_per_packet_should_be_at_most(result(80_000.0, SLOW), 10_000)
    with pytest.raises(SkipExecution, match="cpp_max inconclusive"):  # 16,000: within 20,000
        Gates().cycles_per_packet_should_be_at_most(result(150_000.0, SLOW), 10_000)


def test_check_gates_moves_limits_by_the_speed_with_the_case_threshold(tmp_path):
    f = tmp_path / "t.yaml"
    f.write_text("nfs: {linux-ip4: {64B: {ndr_min: 0.240 Mpps, disturbance_max: 60%}}}")
    th = load_thresholds(str(f)).lookup("linux-ip4", "64B")
    # disturbance 0.5 is within the case's 60 %: a clean verdict, the plain FAIL
    with pytest.raises(Failure, match=r"^NDR 0.200 Mpps < floor 0.240 Mpps \(-16.7 %\)$"):
        Gates().check_gates(result(200_000.0, SLOW), th)


def test_slow_ratio_needs_both_figures_and_a_share_worth_judging():
    assert slow_ratio(SLOW, 0.1) == 0.5
    assert slow_ratio({**SLOW, "disturbance": 0.95}, 0.1) is None  # next to nothing: not judged
    assert slow_ratio(SLOW, None) is None
    with pytest.raises(ValueError, match="kind must be"):
        beyond_slow(SLOW, 1.0, 2.0, "speed", 0.1)
