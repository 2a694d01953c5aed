"""Unit tests for the trial seam: TrialResult loss arithmetic, public field names, and the
parsers of real generator/SUT outputs (recorded on the CI VM, see tests/fixtures/README.md)."""

from __future__ import annotations

import dataclasses
import doctest
import json

import pytest
from helpers import PUBLIC_TRIAL_FIELDS, fixture_reader

import dpgate.model.trial as trialmod
from dpgate.model.trial import LIMITED_BY_GENERATOR, TrialResult
from dpgate.testbeds.embedded.suts.ovs import parse_pmd_stats
from dpgate.testbeds.lab.testpmd import parse_forward_stats
from dpgate.traffic.tcpreplay import parse_tcpreplay_output

fixture = fixture_reader()


def test_doctests():
    res = doctest.testmod(trialmod)
    assert res.attempted > 0 and res.failed == 0


# -- loss arithmetic ------------------------------------------------------------------


def test_from_counts_basic():
    r = TrialResult.from_counts(100_000, 2.0, tx_packets=199_000, rx_packets=198_000)
    assert r.intended_load_pps == 100_000.0 and r.intended_duration_s == 2.0
    assert r.intended_packets == 200_000
    assert r.loss_packets == 2_000  # against the intended count, not against tx
    assert r.tg_shortfall == 1_000
    assert r.loss_ratio == pytest.approx(0.01)
    assert r.actual_duration_s == 2.0  # defaults to the intended duration
    assert r.limited_by is None
    assert not r.passed() and r.passed(0.01) and not r.passed(0.009)


@pytest.mark.parametrize(
    "load, dur, tx, rx, intended, loss, shortfall",
    [
        (20_000, 2.0, 40_000, 40_000, 40_000, 0, 0),  # clean
        (20_000, 2.0, 40_000, 39_990, 40_000, 10, 0),  # SUT loss only
        (2e6, 1.0, 757_301, 757_301, 2_000_000, 1_242_699, 1_242_699),  # generator/back-pressure shortfall
        (
            2e6,
            1.0,
            401_904,
            110_481,
            2_000_000,
            1_889_519,
            1_598_096,
        ),  # both (recorded ovs-xconnect overload)
        (333.3, 3.0, 1000, 1000, 1000, 0, 0),  # rounding of rate x duration: 999.9 -> 1000
        (1_000, 0.5, 500, 501, 500, 0, 0),  # a stray extra frame never makes negative loss
        (1_000, 1.0, 1_200, 1_000, 1_000, 0, 0),  # tx above intended: no negative shortfall
    ],
)
def test_from_counts_table(load, dur, tx, rx, intended, loss, shortfall):
    r = TrialResult.from_counts(load, dur, tx_packets=tx, rx_packets=rx)
    assert r.intended_packets == intended
    assert r.loss_packets == loss
    assert r.tg_shortfall == shortfall
    assert r.loss_ratio == pytest.approx(loss / intended)
    assert 0.0 <= r.loss_ratio <= 1.0
    assert r.rx_rate_pps == pytest.approx(rx / dur)
    assert r.tx_rate_pps == pytest.approx(tx / dur)


def test_from_counts_explicit_intended_and_extras():
    r = TrialResult.from_counts(
        50_000,
        2.0,
        tx_packets=99_000,
        rx_packets=98_500,
        actual_duration_s=1.98,
        intended_packets=99_999,
        limited_by=LIMITED_BY_GENERATOR,
        sut_drops=500,
        tg_drops=3,
        frame_size="64",
        details={"x": 1},
    )
    assert r.intended_packets == 99_999
    assert r.loss_packets == 1_499 and r.tg_shortfall == 999
    assert r.actual_duration_s == 1.98
    assert r.limited_by == "generator" and r.sut_drops == 500 and r.tg_drops == 3
    assert r.details == {"x": 1}


def test_zero_intended():
    r = TrialResult.from_counts(0.1, 1.0, tx_packets=0, rx_packets=0)
    assert r.intended_packets == 0
    assert r.loss_packets == 0 and r.loss_ratio == 0.0 and r.tg_shortfall == 0
    r = TrialResult.from_counts(10, 1.0, tx_packets=0, rx_packets=0, intended_packets=0)
    assert r.loss_ratio == 0.0


def test_total_loss():
    r = TrialResult.from_counts(1_000, 1.0, tx_packets=1_000, rx_packets=0)
    assert r.loss_packets == 1_000 and r.loss_ratio == 1.0 and not r.passed(0.5)


def test_zero_duration_rates():
    r = TrialResult(
        intended_load_pps=1.0,
        intended_duration_s=0.0,
        intended_packets=0,
        tx_packets=0,
        rx_packets=0,
        loss_packets=0,
        loss_ratio=0.0,
        tg_shortfall=0,
        actual_duration_s=0.0,
    )
    assert r.rx_rate_pps == 0.0 and r.tx_rate_pps == 0.0


def test_result_is_frozen_and_serialisable():
    r = TrialResult.from_counts(1_000, 1.0, tx_packets=1_000, rx_packets=990, details={"k": [1, 2]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.rx_packets = 5  # type: ignore[misc]
    d = r.to_dict()
    assert PUBLIC_TRIAL_FIELDS <= set(d)
    assert set(d) == {f.name for f in dataclasses.fields(TrialResult)}
    back = json.loads(json.dumps(d))
    assert back["loss_packets"] == 10 and back["details"] == {"k": [1, 2]}
    assert TrialResult(**back) == r


def test_public_field_names_stable():
    names = [f.name for f in dataclasses.fields(TrialResult)]
    assert PUBLIC_TRIAL_FIELDS <= set(names)
    assert LIMITED_BY_GENERATOR == "generator"


# -- tcpreplay 4.4.3 output (recorded) -----------------------------------------------------


def test_tcpreplay_complete_run():
    out = parse_tcpreplay_output(fixture("tcpreplay", "complete-20kpps.txt"))
    assert out == {
        "sent": 20000,
        "bytes": 1_200_000,
        "seconds": pytest.approx(0.999959),
        "failed": 0,
        "retried_enobufs": 0,
        "retried_eagain": 0,
    }


def test_tcpreplay_interrupted_with_enobufs():
    out = parse_tcpreplay_output(fixture("tcpreplay", "interrupted-enobufs.txt"))
    assert out["sent"] == 757301 and out["bytes"] == 757301 * 60
    assert out["seconds"] == pytest.approx(1.01)
    assert out["retried_enobufs"] == 3825 and out["failed"] == 0 and out["retried_eagain"] == 0


def test_tcpreplay_interrupted_with_failed_packet():
    out = parse_tcpreplay_output(fixture("tcpreplay", "interrupted-failed.txt"))
    assert out["sent"] == 401904 and out["failed"] == 1 and out["retried_enobufs"] == 252766
    assert out["bytes"] == 24114240


def test_tcpreplay_output_missing_or_partial():
    assert parse_tcpreplay_output("") == {}
    assert parse_tcpreplay_output("File Cache is enabled\n User interrupt...\n") == {}
    head_only = "\n".join(fixture("tcpreplay", "interrupted-enobufs.txt").splitlines()[:3])
    assert parse_tcpreplay_output(head_only) == {}  # summary not yet printed: no made-up counts


# -- OVS 3.1 pmd-stats-show (recorded) -------------------------------------------------


def test_ovs_pmd_stats_afpacket_main_thread_has_no_cycles():
    out = parse_pmd_stats(fixture("ovs", "pmd-stats-show-afpacket-20kpps.txt"))
    assert out["packets"] == 20000
    assert out["processing_cycles"] == 0
    assert "cycles_per_packet" not in out  # never a fake 0.0 cycles/packet
    over = parse_pmd_stats(fixture("ovs", "pmd-stats-show-afpacket-overload.txt"))
    assert over["packets"] == 110481 and "cycles_per_packet" not in over


def test_ovs_pmd_stats_pmd_thread_cycles():
    out = parse_pmd_stats(fixture("ovs", "pmd-stats-show-afxdp-pmd-100kpps.txt"))
    assert out["packets"] == 100000  # pmd thread 100000 + main thread 0
    assert out["processing_cycles"] == 1161526424
    assert out["cycles_per_packet"] == pytest.approx(11615.26, abs=0.01)


def test_ovs_pmd_stats_two_threads_weighted():
    text = (
        "pmd thread numa_id 0 core_id 1:\n  packets received: 100\n"
        "  avg processing cycles per packet: 10.00 (1000/100)\n"
        "pmd thread numa_id 0 core_id 2:\n  packets received: 300\n"
        "  avg processing cycles per packet: 30.00 (9000/300)\n"
    )
    out = parse_pmd_stats(text)
    assert out["packets"] == 400 and out["cycles_per_packet"] == pytest.approx(10000 / 400)


# -- DPDK 22.11 testpmd stop block (recorded) ---------------------------------------------


def test_testpmd_forward_stats_20kpps():
    out = parse_forward_stats(fixture("testpmd", "stop-io-20kpps.txt"))
    assert out == {
        "rx_packets": 20000,
        "rx_dropped": 0,
        "tx_packets": 20000,
        "tx_dropped": 0,
        "cycles_per_packet": pytest.approx(21251.39),
        "cycles_mhz": 2600,
        "cycles": 425027815,
        "cycles_packets": 20000,
    }


def test_testpmd_cumulative_stats_delta_per_trial():
    from dpgate.testbeds.lab.testpmd import stats_delta

    a = parse_forward_stats(fixture("testpmd", "stop-io-20kpps.txt"))
    b = dict(a, rx_packets=a["rx_packets"] + 5000, cycles=a["cycles"] + 5000 * 300, cycles_packets=25000)
    d = stats_delta(a, b)
    assert d["rx_packets"] == 5000 and d["cycles_per_packet"] == 300.0 and d["cycles_mhz"] == 2600


def test_testpmd_forward_stats_overload_uses_accumulated_block():
    text = fixture("testpmd", "stop-io-overload.txt")
    out = parse_forward_stats(text)
    # per-port blocks show 288722/0 and 0/288722; the accumulated block is the total
    assert out["rx_packets"] == 288722 and out["tx_packets"] == 288722
    assert out["rx_dropped"] == 0 and out["tx_dropped"] == 0
    assert out["cycles_per_packet"] == pytest.approx(8026.92) and out["cycles_mhz"] == 2600


def test_testpmd_forward_stats_without_cycles():
    text = fixture("testpmd", "stop-io-overload.txt")
    text = "\n".join(ln for ln in text.splitlines() if "CPU cycles" not in ln)
    out = parse_forward_stats(text)
    assert "cycles_per_packet" not in out and out["rx_packets"] == 288722
    assert parse_forward_stats("") == {}


def test_testpmd_forward_stats_of_the_mac_engine_carry_its_busy_cycles():
    # DPDK 22.11 testpmd, 'set fwd mac', null PMD (recorded on this machine, 2026-11-26)
    line = (
        "  CPU cycles/packet=87.73 (total cycles=2026385995 / total mac packets=23097088) at 2450 MHz Clock\n"
    )
    out = parse_forward_stats("RX-packets: 23097088  RX-dropped: 0\n" + line)
    assert (out["cycles"], out["cycles_packets"], out["cycles_mhz"]) == (2026385995, 23097088, 2450)
    # the noisy engine prints no cycles line: no busy cycles, not a guess
    assert "cycles" not in parse_forward_stats("RX-packets: 16224  RX-dropped: 0\n")


def test_a_generator_killed_before_its_first_frame_fails_the_trial_as_one_killed_while_sending(tmp_path):
    """tcpreplay killed while it still preloads its pcap (the fault test on a cold machine):
    the same words as a kill while sending (signal, load), and that it never sent."""
    from dpgate.model.errors import TrialError
    from dpgate.traffic.steps import TrialSteps

    class Tb:  # the TG port's counter never moves: nothing was sent
        def port_stats(self, ns, port):
            return {"tx_packets": 7}

        def ns_stats(self, ns):
            return {"tg0": {"tx_packets": 7}}

        tg_ns = "t-tg"

    class Proc:
        returncode = -9

        def poll(self):
            return -9

    log = tmp_path / "tcpreplay.log"
    log.write_text("preloading pcap\n")

    class Run:
        proc, started_at = Proc(), None

    Run.log = str(log)
    steps = TrialSteps()
    steps.tb, steps._procs = Tb(), [Run()]
    with pytest.raises(TrialError) as e:
        steps._wait_started(["tg0"], 1.0, 50_000.0)
    first = str(e.value).splitlines()[0]
    assert first == "generator exited (signal 9) during trial at 50000 pps, before sending its first frame"
    assert "preloading pcap" in str(e.value)
