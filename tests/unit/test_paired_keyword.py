"""``Measure Cycles Against Baseline``: second rounds, loose passes, the twin's speed
reference, SUTs compared at saturation and SUT drivers asking for more pairs.

The keyword library is the real one; its sides are scripted fakes (tests/paired_fakes.py).
"""

from __future__ import annotations

import pytest
from paired_fakes import NOISY, NOISY_SUT, STEADY_SUT, Sut, disturbed, paired_keyword

from dpgate.telemetry.paired import (
    PairedCpp,
    abba_order,
    estimate,
    loose_pass,
    verdict,
)


def test_an_undecided_paired_verdict_is_measured_again_once_and_judged_on_all_pairs():
    log: list = []
    lib, result = paired_keyword(NOISY_SUT + STEADY_SUT, NOISY * 2, log)
    first = estimate(list(zip(NOISY, NOISY_SUT)))
    assert verdict(first, 0.03)[0] == "SKIP" and first.low <= 0  # undecided on its own
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="3%")
    assert len(log) == 16 and [s for s, _ in log] == abba_order(4) * 2
    assert est.pairs == 8 and verdict(est, 0.03)[0] == "FAIL", est.describe()


# the first 4 pairs read +3.3 %, under a 5 % allowance, on an interval of -17.6 to +29.4 %
WIDE_SUT = [1000.0, 1150.0, 960.0, 1030.0]


def test_a_pass_on_an_interval_reaching_far_above_the_allowance_is_measured_again():
    """gk54's OVS AF_XDP "+10 %" run passed at +4.2 % on a 99 % interval of -12.6 to +24.2 %."""
    log: list = []
    lib, result = paired_keyword(WIDE_SUT + [1200.0, 1201.0, 1199.0, 1200.0], NOISY * 2, log)
    first = estimate(list(zip(NOISY, WIDE_SUT)))
    assert verdict(first, 0.05)[0] == "PASS" and first.high > 2 * 0.05
    assert "99 % CI reaches +29.4 %" in loose_pass(first, 0.05)
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="5%")
    assert len(log) == 16 and est.pairs == 8
    # the second round's steady +20 % no longer passes: the gate holds it (its first pairs
    # still scatter) instead of passing a +11 % change at once
    assert verdict(est, 0.05)[0] == "SKIP" and est.change > 0.1, est.describe()
    # the same first pairs judged against a 20 % allowance: a sure PASS, nothing more measured
    log.clear()
    lib, result = paired_keyword(WIDE_SUT, NOISY, log)
    assert lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="20%").pairs == 4
    assert len(log) == 8


def beside_a_neighbour(sut_cycles, base_cycles, log):
    """The keyword over scripted sides whose every trial others took 40 % of a core in."""
    lib, result = paired_keyword(sut_cycles, base_cycles, log)
    for side in (lib._gen("64B"), lib._baseline_twin({}).gen):
        side.measure = disturbed(side.measure)
    return lib, result


def test_a_loose_pass_beside_a_neighbour_is_measured_again_and_held_inconclusive_if_still_loose():
    """gk117 (model 207 Xeon, the hog on both cores): 7 of 21 hogged PASSes reached above twice
    the allowance (testpmd-mac -9.2 to +13.9 %), where a "+10 %" step could have passed."""
    log: list = []
    lib, result = beside_a_neighbour(WIDE_SUT * 2, NOISY * 2, log)
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="5%")
    assert est.pairs == 8 and len(log) == 16 and est.disturbance == 0.4
    status, text = verdict(est, 0.05, dmax=0.10)
    assert est.change <= 0.05 and est.high > 0.10 and status == "SKIP", est.describe()
    assert "others used 40% of a core" in text and "> 2 x the allowance" in text
    assert verdict(est, 0.05)[0] == "PASS"  # the same pairs judged with no regard to neighbours
    # the second round's steady pairs bring the interval within twice the allowance: it stands
    log.clear()
    lib, result = beside_a_neighbour(WIDE_SUT + NOISY, NOISY * 2, log)
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="5%")
    assert est.pairs == 8 and len(log) == 16 and verdict(est, 0.05, dmax=0.10)[0] == "PASS", est.describe()
    # a tight PASS beside a neighbour: nothing more measured
    log.clear()
    lib, result = beside_a_neighbour(NOISY, NOISY, log)
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="5%")
    assert est.pairs == 4 and len(log) == 8 and verdict(est, 0.05, dmax=0.10)[0] == "PASS"


def test_the_twins_trials_are_judged_slow_against_the_sut_sides_full_speed():
    """A new twin's probe has no reference of its own for its first ten readings: without the
    SUT side's, only the SUT's trials in a slow host phase were measured again (gk31)."""
    from types import SimpleNamespace

    from dpgate.exec.speedprobe import SpeedProbe
    from dpgate.robot.paired import share_speed_reference

    log: list = []
    lib, result = paired_keyword(NOISY, NOISY, log)
    sut, base = lib._gen("64B"), lib._baseline_twin({}).gen
    sut.core_speed_ref = 33.5  # the case's core_speed
    lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1)
    assert base.core_speed_ref == 33.5
    probe = SpeedProbe([0])  # not started: only its readings so far
    probe.seen.extend([20.0] * 5 + [34.0] * 5)
    seen_only = SimpleNamespace(core_speed_ref=None, speeds=SimpleNamespace(probe=probe))
    twin = SimpleNamespace(core_speed_ref=None)
    share_speed_reference(seen_only, twin)
    assert twin.core_speed_ref == probe.reference() and twin.core_speed_ref > 30
    fresh = SimpleNamespace(core_speed_ref=None)
    share_speed_reference(SimpleNamespace(core_speed_ref=None, speeds=None), fresh)
    assert fresh.core_speed_ref is None  # nothing to share: the twin keeps its own


def test_a_decided_paired_verdict_or_more_pairs_0_measures_no_more():
    log: list = []
    lib, result = paired_keyword(STEADY_SUT, NOISY, log)  # +8 %, the pairs agree: FAIL at once
    assert lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="3%").pairs == 4
    log.clear()
    lib, result = paired_keyword(NOISY, NOISY, log)  # no change: PASS at once
    assert lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1).pairs == 4
    log.clear()
    lib, result = paired_keyword(NOISY_SUT, NOISY, log)  # undecided, but no more asked for
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="3%", more_pairs=0)
    assert est.pairs == 4 and len(log) == 8 and verdict(est, 0.03)[0] == "SKIP"
    from dpgate.model.errors import ConfigError

    with pytest.raises(ConfigError, match="more_pairs"):
        lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, more_pairs=-1)


class PollingSut:
    ns = "dpgate-test-no-such-ns"
    polls = True


def test_a_polling_sut_without_a_busy_cycle_report_is_compared_at_saturation(monkeypatch):
    """l3fwd and OVS on af_packet ports report no busy cycles (no cpp_at_load): the pairs run
    at 90 % of the generator ceiling and compare the threads' CPU time per forwarded frame."""
    from types import SimpleNamespace

    from dpgate.testbeds.embedded import twin

    monkeypatch.setattr(twin, "RESUME_SETTLE_S", 0.0)
    log: list = []
    lib, _ = paired_keyword(STEADY_SUT * 2, NOISY * 2, log)
    sut, base = lib._gen("64B"), lib._baseline_twin({}).gen
    sut.sut = base.sut = PollingSut()  # busy-polls; its trials carry no sut_cycles_per_packet
    loads: list = []
    for g, speed in ((sut, 30.0), (base, 15.0)):  # the probe beside each side's poller read unlike
        inner = g.measure

        def measure(load, duration, inner=inner, speed=speed):
            loads.append(load)
            t = inner(load, duration)
            t.details["sut_core_speed"] = speed
            return t

        g.measure = measure
    result = SimpleNamespace(
        frame_size="64B",
        telemetry={},
        pdr_pps=121_198.0,
        mrr_samples=(109_336.0,),
        generator_max_pps=431_488.0,
    )
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="3%")
    assert isinstance(est, PairedCpp), est
    assert est.saturated and est.metrics()["cpp_paired_saturated"] is True
    assert set(loads) == {388_339.2} and est.load_pps == 388_339.2
    assert est.pairs == 8 and len(loads) == 16  # twice the pairs asked for: the figure scatters more
    assert est.exponent is None  # as measured: beside a poller the probed speeds differ by side
    assert est.trim == 0.2 and est.metrics()["cpp_paired_trim"] == 0.2  # a phase split pair is a tail
    assert abs(est.change - 0.08) < 0.005 and verdict(est, 0.03)[0] == "FAIL"
    assert est.describe().startswith("cycles per packet at saturation +8.0 %")
    # a generator that cannot overload the SUT by 1.5 x: not measured, and why
    log.clear()
    lib, _ = paired_keyword(STEADY_SUT, NOISY, log)
    lib._gen("64B").sut = PollingSut()
    result.generator_max_pps = 150_000.0
    why = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1)
    assert isinstance(why, str) and "ceiling (150.0 kpps) is not 1.5 x what it forwarded (121.2 kpps)" in why
    assert log == []


class NoisierPollingSut(PollingSut):
    saturation_pairs = 4


def test_a_sut_driver_whose_saturation_pairs_scatter_more_gets_more_of_them(monkeypatch):
    """OVS on af_packet ports: its saturation pairs scatter ~1.8 x l3fwd's, so its driver asks
    for four pairs per pair asked for (and as many more in a second round), l3fwd's two."""
    from types import SimpleNamespace

    from dpgate.telemetry.paired import saturation_pairs
    from dpgate.testbeds.embedded import twin
    from dpgate.testbeds.embedded.suts.labnfs import L3fwdIp4
    from dpgate.testbeds.embedded.suts.ovs import OvsAfxdpXconnect, OvsXconnect

    assert saturation_pairs(OvsXconnect) == 4 and saturation_pairs(L3fwdIp4) == 2
    assert OvsAfxdpXconnect.polls  # reports busy cycles: never compared at saturation
    monkeypatch.setattr(twin, "RESUME_SETTLE_S", 0.0)
    log: list = []
    lib, _ = paired_keyword(STEADY_SUT * 4, NOISY * 4, log)
    sut, base = lib._gen("64B"), lib._baseline_twin({}).gen
    sut.sut = base.sut = NoisierPollingSut()
    result = SimpleNamespace(
        frame_size="64B", telemetry={}, pdr_pps=121_198.0, mrr_samples=(), generator_max_pps=431_488.0
    )
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="3%")
    assert isinstance(est, PairedCpp) and est.saturated, est
    assert est.pairs == 16 and len(log) == 32 and verdict(est, 0.03)[0] == "FAIL"


class ScatteredSut(Sut):
    paired_pairs = 3


def test_a_sut_driver_whose_pairs_scatter_more_at_the_cpp_at_load_load_gets_more_of_them():
    """OVS on AF_XDP ports: its pairs at the cpp_at_load load scatter 0.08-0.17 (sd), and at
    10 pairs 2 of 11 "+10 %" runs passed at once: its driver asks for three pairs per pair
    asked for there. A driver's ``saturation_pairs`` does not count at that load."""
    from dpgate.telemetry.paired import paired_pairs, saturation_pairs
    from dpgate.testbeds.embedded.suts.labnfs import L3fwdIp4
    from dpgate.testbeds.embedded.suts.ovs import OvsAfxdpXconnect, OvsXconnect

    assert paired_pairs(OvsAfxdpXconnect) == 3 and paired_pairs(OvsXconnect) == paired_pairs(L3fwdIp4) == 1
    assert saturation_pairs(ScatteredSut) == 2  # the other factor: unchanged
    log: list = []
    lib, result = paired_keyword(STEADY_SUT * 3, NOISY * 3, log)
    lib._gen("64B").sut = ScatteredSut()
    est = lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1, max_rise="3%")
    assert isinstance(est, PairedCpp) and not est.saturated
    assert est.pairs == 12 and len(log) == 24 and verdict(est, 0.03)[0] == "FAIL"
    log.clear()
    lib, result = paired_keyword(NOISY, NOISY, log)
    lib._gen("64B").sut = NoisierPollingSut()  # saturation_pairs 4, but measured at cpp_at_load
    lib._gen("64B").sut.polls = False
    assert lib.measure_cycles_against_baseline(result, pairs=4, duration=0.1).pairs == 4
