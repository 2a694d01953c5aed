"""Unit tests for dpgate.config.units: rate and frame-size parsing, formatting, errors."""

from __future__ import annotations

import doctest

import pytest

import dpgate.config.units as units
from dpgate.config.units import (
    IMIX_V4_1,
    Rate,
    UnitError,
    average_frame_size,
    format_pps,
    frame_size_tag,
    parse_bps,
    parse_frame_size,
    parse_rate,
)


def test_doctests():
    res = doctest.testmod(units)
    assert res.attempted > 0 and res.failed == 0


@pytest.mark.parametrize(
    "text, pps",
    [
        ("50kpps", 50_000.0),
        ("50 kpps", 50_000.0),
        ("50KPPS", 50_000.0),
        ("14.88 Mpps", 14_880_000.0),
        ("0.2Mpps", 200_000.0),
        ("1.5mpps", 1_500_000.0),
        ("200000", 200_000.0),
        ("200000pps", 200_000.0),
        ("1e5", 100_000.0),
        ("2.5e3 pps", 2_500.0),
        ("1Gpps", 1e9),
        (" 7 kpps ", 7_000.0),
        (20000, 20_000.0),
        (12.5, 12.5),
    ],
)
def test_parse_rate_absolute(text, pps):
    r = parse_rate(text)
    assert r.percent is None
    assert r.pps == pytest.approx(pps)
    assert r.resolve() == pytest.approx(pps)
    assert r.resolve(max_pps=1.0) == pytest.approx(pps)  # absolute ignores the maximum


@pytest.mark.parametrize("text, pct", [("50%", 50.0), ("100%", 100.0), ("0.5 %", 0.5), ("12.5%", 12.5)])
def test_parse_rate_percent(text, pct):
    r = parse_rate(text)
    assert r.pps is None and r.percent == pct
    assert r.resolve(max_pps=400_000) == pytest.approx(400_000 * pct / 100)


def test_percent_without_maximum_names_the_fix():
    with pytest.raises(UnitError, match="calibrate"):
        parse_rate("50%").resolve()


@pytest.mark.parametrize(
    "text, needle",
    [
        ("", "not a rate"),
        ("fast", "not a rate"),
        ("kpps", "not a rate"),
        ("-5kpps", "not a rate"),
        ("5 k pps", "not a rate"),
        ("10Mbps", "unknown unit 'mbps'"),
        ("10 bogus", "unknown unit"),
        ("0", "greater than 0"),
        ("0kpps", "greater than 0"),
        ("0%", "(0, 100]"),
        ("101%", "(0, 100]"),
        (0, "greater than 0"),
        (-3.0, "greater than 0"),
    ],
)
def test_parse_rate_errors(text, needle):
    with pytest.raises(UnitError) as ei:
        parse_rate(text)
    assert needle in str(ei.value)
    assert "rate" in str(ei.value)


def test_parse_rate_error_names_the_option():
    with pytest.raises(UnitError, match=r"^--rate 'x'"):
        parse_rate("x", what="--rate")


def test_rate_str():
    assert str(parse_rate("50%")) == "50%"
    assert str(parse_rate("212kpps")) == "0.212 Mpps"
    assert Rate(pps=1.0) != Rate(percent=1.0)


@pytest.mark.parametrize(
    "text, size",
    [
        (64, 64),
        ("64", 64),
        ("64B", 64),
        ("64 b", 64),
        ("1518", 1518),
        ("9216B", 9216),
        ("IMIX", "IMIX"),
        ("imix", "IMIX"),
        ("IMIX_v4_1", "IMIX"),
        (" Imix ", "IMIX"),
    ],
)
def test_parse_frame_size(text, size):
    assert parse_frame_size(text) == size


@pytest.mark.parametrize(
    "text, needle",
    [
        (63, "out of range"),
        ("63", "out of range"),
        ("9217", "out of range"),
        (0, "out of range"),
        ("64kB", "not a frame size"),
        ("big", "not a frame size"),
        ("64.5", "not a frame size"),
        ("-64", "not a frame size"),
        ("", "not a frame size"),
        (True, "not a frame size"),
    ],
)
def test_parse_frame_size_errors(text, needle):
    with pytest.raises(UnitError) as ei:
        parse_frame_size(text)
    msg = str(ei.value)
    assert needle in msg
    if needle == "out of range":
        assert "64..9216" in msg and "IMIX" in msg


def test_frame_size_helpers():
    assert frame_size_tag(64) == "64B"
    assert frame_size_tag("IMIX") == "IMIX"
    assert average_frame_size(1518) == 1518.0
    total = sum(n for _, n in IMIX_V4_1)
    assert total == 48
    assert average_frame_size("IMIX") == pytest.approx((64 * 28 + 570 * 16 + 1518 * 4) / 48)
    assert round(average_frame_size("IMIX"), 2) == 353.83


def test_format_pps():
    assert format_pps(None) == "n/a"
    assert format_pps(14_880_952) == "14.881 Mpps"
    assert format_pps(50_000, digits=2) == "0.05 Mpps"


@pytest.mark.parametrize(
    "text, bps", [("10Gbps", 10e9), ("25 Gbps", 25e9), ("100M", 100e6), ("1e9", 1e9), ("10Gb/s", 10e9)]
)
def test_parse_bps(text, bps):
    assert parse_bps(text) == pytest.approx(bps)


@pytest.mark.parametrize("text", ["10Gpps", "fast", "0Gbps"])
def test_parse_bps_errors(text):
    with pytest.raises(UnitError):
        parse_bps(text)
