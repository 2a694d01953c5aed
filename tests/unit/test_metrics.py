"""Unit tests for dpgate.metrics: exact line rates, the CPP identity, speedups, errors."""

from __future__ import annotations

import dataclasses
import doctest

import pytest

import dpgate.metrics as metrics
from dpgate.metrics import (
    UnitError,
    cpp_from_ipp_ipc,
    cycles_per_packet,
    frequency_speedup,
    ht_speedup,
    instructions_per_cycle,
    instructions_per_packet,
    ipc_from_cpp_ipp,
    ipp_from_cpp_ipc,
    line_rate_pps,
    multi_core_speedup,
    throughput_from_cpp,
)


@pytest.mark.parametrize(
    "frame, link, expected",
    [
        (64, 10e9, 14_880_952),
        (128, 40e9, 33_783_783),
        (64, "10Gbps", 14_880_952),
        ("64B", "40 Gbps", 59_523_809),
        (1518, 10e9, 812_743),
        (9000, 100e9, 1_385_809),
    ],
)
def test_line_rate_exact(frame, link, expected):
    assert line_rate_pps(frame, link) == expected


def test_line_rate_imix_uses_imix_v4_1_average():
    # IMIX_v4_1 mean frame: (64*28 + 570*16 + 1518*4) / 48 = 353.8333 B
    expected = int(10e9 / ((353.8333333333333 + 20) * 8))
    assert line_rate_pps("IMIX", 10e9) == expected == 3_343_736
    assert line_rate_pps("imix", 10e9) == expected


def test_line_rate_aggregates_by_multiplying_ports():
    assert line_rate_pps(64, 10e9, ports=2) == 2 * 14_880_952


@pytest.mark.parametrize("frame", [63, 9217, 0, "jumbo", True])
def test_line_rate_rejects_bad_frame_size(frame):
    with pytest.raises(UnitError, match="frame size"):
        line_rate_pps(frame, 10e9)


@pytest.mark.parametrize("link", [0, -1e9, "fast"])
def test_line_rate_rejects_bad_link(link):
    with pytest.raises(UnitError):
        line_rate_pps(64, link)


def test_line_rate_rejects_bad_ports():
    with pytest.raises(UnitError, match="ports"):
        line_rate_pps(64, 10e9, ports=0)


def test_cycles_per_packet_and_inverse():
    assert cycles_per_packet(10e6, 2.5e9) == pytest.approx(250.0)
    assert cycles_per_packet(10e6, 2.5e9, cores=2) == pytest.approx(500.0)
    assert throughput_from_cpp(2.5e9, 250.0) == pytest.approx(10e6)
    assert throughput_from_cpp(2.5e9, 500.0, cores=2) == pytest.approx(10e6)


@pytest.mark.parametrize("pps", [0, -5.0, float("nan"), float("inf"), "10Mpps", None])
def test_cycles_per_packet_rejects_bad_rate(pps):
    with pytest.raises(UnitError, match="packet rate"):
        cycles_per_packet(pps, 2.5e9)


def test_cycles_per_packet_rejects_bad_cores():
    with pytest.raises(UnitError, match="cores"):
        cycles_per_packet(1e6, 2.5e9, cores=0)
    with pytest.raises(UnitError, match="cores"):
        cycles_per_packet(1e6, 2.5e9, cores=1.5)


def test_ipp_ipc_from_counters():
    assert instructions_per_packet(4.0e9, 1.0e7) == pytest.approx(400.0)
    assert instructions_per_cycle(5.0e9, 2.0e9) == pytest.approx(2.5)
    with pytest.raises(UnitError, match="cycle count"):
        instructions_per_cycle(1.0, 0)


@pytest.mark.parametrize("ipp, ipc", [(400.0, 2.5), (123.4, 0.7), (1e4, 3.9)])
def test_cpp_identity_both_ways(ipp, ipc):
    cpp = cpp_from_ipp_ipc(ipp, ipc)
    assert cpp == pytest.approx(ipp / ipc)
    assert ipc_from_cpp_ipp(cpp, ipp) == pytest.approx(ipc)
    assert ipp_from_cpp_ipc(cpp, ipc) == pytest.approx(ipp)


def test_cpp_identity_matches_counter_derivation():
    instructions, cycles, packets = 8.0e9, 3.2e9, 2.0e7
    cpp = cycles / packets
    assert cpp_from_ipp_ipc(
        instructions_per_packet(instructions, packets), instructions_per_cycle(instructions, cycles)
    ) == pytest.approx(cpp)


def test_frequency_speedup():
    s = frequency_speedup(10e6, 12e6, 2.0e9, 2.5e9)
    assert s.measured == pytest.approx(1.2)
    assert s.ideal == pytest.approx(1.25)
    assert s.deviation_pct == pytest.approx(-4.0)


def test_ht_speedup():
    s = ht_speedup(10e6, 13e6)
    assert s.measured == pytest.approx(1.3)
    assert s.ideal == 2.0
    assert s.deviation_pct == pytest.approx(-35.0)


def test_multi_core_speedup_vs_linear():
    assert multi_core_speedup(10e6, 40e6, cores=4).deviation_pct == pytest.approx(0.0)
    s = multi_core_speedup(10e6, 36e6, cores=4)
    assert (s.measured, s.ideal) == (pytest.approx(3.6), 4.0)
    assert s.deviation_pct == pytest.approx(-10.0)
    with pytest.raises(UnitError):
        multi_core_speedup(0, 36e6, cores=4)


def test_speedup_is_frozen():
    s = ht_speedup(1.0, 1.2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.measured = 2.0  # type: ignore[misc]


def test_unit_helpers_reexported():
    assert metrics.parse_rate("14.88 Mpps").pps == pytest.approx(14.88e6)
    assert metrics.parse_bps("25Gbps") == pytest.approx(25e9)
    assert metrics.parse_frame_size("1518B") == 1518
    assert metrics.format_pps(212_000) == "0.212 Mpps"
    assert metrics.format_bps(10e9) == "10.000 Gbps"
    assert metrics.parse_ratio("0.5%") == pytest.approx(0.005)
    assert issubclass(metrics.UnitError, ValueError)


def test_doctests_pass():
    result = doctest.testmod(metrics, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 5
    assert result.failed == 0
