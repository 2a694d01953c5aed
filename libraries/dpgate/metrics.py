"""Data-plane metrics: line rate, cycles/instructions per packet, speedups.

These are the formulas of the benchmarking methodology papers (CSIT, "Benchmarking
and analysis of software data planes"), in one place so that reports, Robot keywords
and thresholds all compute them the same way. The names are public: keep them stable.

Line rate counts 20 B of preamble, start-of-frame delimiter and inter-frame gap per
frame on the wire, on top of the L2 frame (FCS included)::

    >>> line_rate_pps(64, 10e9)
    14880952
    >>> line_rate_pps("64B", "40Gbps", ports=2)
    119047618
    >>> line_rate_pps("IMIX", 10e9)
    3343736

Cycles per packet (CPP) is the CPU cost of one packet on the cores the data plane
uses; with Hyper-Threading both threads of a physical core count as one core::

    >>> cycles_per_packet(14_880_952, 2.5e9)
    168.0000...
    >>> round(throughput_from_cpp(2.5e9, 168.0))
    14880952

The identity ``CPP = IPP / IPC`` links instructions per packet (IPP) and instructions
per cycle (IPC); every helper below solves it for one of the three::

    >>> cpp_from_ipp_ipc(400.0, 2.5), ipc_from_cpp_ipp(160.0, 400.0), ipp_from_cpp_ipc(160.0, 2.5)
    (160.0, 2.5, 400.0)

Speedups compare two measurements with the ideal (linear) scaling::

    >>> s = multi_core_speedup(10e6, 36e6, cores=4)
    >>> s.measured, s.ideal, round(s.deviation_pct, 1)
    (3.6, 4.0, -10.0)

The unit parsers and formatters of :mod:`dpgate.config.units` are re-exported here.
Bad input raises :class:`dpgate.config.units.UnitError` (a ``ValueError``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

from dpgate.config.units import (
    FrameSize,
    UnitError,
    average_frame_size,
    format_bps,
    format_pps,
    parse_bps,
    parse_frame_size,
    parse_rate,
    parse_ratio,
)

__all__ = [
    "ETHERNET_OVERHEAD_BYTES",
    "Speedup",
    "UnitError",
    "cpp_from_ipp_ipc",
    "cycles_per_packet",
    "format_bps",
    "format_pps",
    "frequency_speedup",
    "ht_speedup",
    "instructions_per_cycle",
    "instructions_per_packet",
    "ipc_from_cpp_ipp",
    "ipp_from_cpp_ipc",
    "line_rate_pps",
    "multi_core_speedup",
    "parse_bps",
    "parse_frame_size",
    "parse_rate",
    "parse_ratio",
    "throughput_from_cpp",
]

#: Preamble (7 B) + start-of-frame delimiter (1 B) + minimum inter-frame gap (12 B).
ETHERNET_OVERHEAD_BYTES = 20

Number = Union[int, float]


def _positive(value: Number, what: str) -> float:
    """Return ``value`` as a float, or raise UnitError unless it is a finite number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UnitError(f"{what} {value!r} is not a number")
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise UnitError(f"{what} must be a finite number greater than 0, got {value!r}")
    return v


def _cores(cores: int) -> int:
    if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
        raise UnitError(f"cores must be an integer >= 1, got {cores!r}")
    return cores


def line_rate_pps(frame_size: Union[FrameSize, str], link_bps: Union[Number, str], ports: int = 1) -> int:
    """Maximum frames per second on ``ports`` links of ``link_bps`` each.

    ``frame_size`` is an L2 frame size in bytes including FCS (an int, or text such as
    ``"64B"``), or ``"IMIX"`` (IMIX_v4_1, mean 353.83 B); ``link_bps`` is a number or
    text such as ``"10Gbps"``. The per-port rate is floored to whole frames (a generator
    asked for more would exceed the link), then multiplied by ``ports`` (use it for
    ports x directions).

    >>> line_rate_pps(64, 10e9), line_rate_pps(128, 40e9), line_rate_pps(1518, "10Gbps")
    (14880952, 33783783, 812743)
    >>> line_rate_pps(63, 10e9)
    Traceback (most recent call last):
    ...
    dpgate.config.units.UnitError: frame size 63 is out of range: accepted 64..9216 bytes or IMIX
    """
    size = parse_frame_size(frame_size)
    bps = parse_bps(link_bps, what="link bit rate")
    if isinstance(ports, bool) or not isinstance(ports, int) or ports < 1:
        raise UnitError(f"ports must be an integer >= 1, got {ports!r}")
    wire_bits = (average_frame_size(size) + ETHERNET_OVERHEAD_BYTES) * 8
    return int(math.floor(bps / wire_bits + 1e-9)) * ports


def cycles_per_packet(pps: Number, core_hz: Number, cores: int = 1) -> float:
    """CPU cycles spent per packet: ``core_hz x cores / pps``.

    ``cores`` counts physical cores (two HT threads of one core are one core).

    >>> cycles_per_packet(10e6, 2.0e9, cores=2)
    400.0
    """
    return _positive(core_hz, "core frequency (Hz)") * _cores(cores) / _positive(pps, "packet rate (pps)")


def throughput_from_cpp(core_hz: Number, cpp: Number, cores: int = 1) -> float:
    """Packet rate a data plane reaches at ``cpp`` cycles per packet: ``core_hz x cores / cpp``.

    >>> throughput_from_cpp(2.0e9, 400.0, cores=2)
    10000000.0
    """
    return _positive(core_hz, "core frequency (Hz)") * _cores(cores) / _positive(cpp, "cycles per packet")


def instructions_per_packet(instructions: Number, packets: Number) -> float:
    """Instructions retired per packet (IPP) over one measurement interval.

    >>> instructions_per_packet(4.0e9, 1.0e7)
    400.0
    """
    return _positive(instructions, "instruction count") / _positive(packets, "packet count")


def instructions_per_cycle(instructions: Number, cycles: Number) -> float:
    """Instructions retired per CPU cycle (IPC) over one measurement interval.

    >>> instructions_per_cycle(5.0e9, 2.0e9)
    2.5
    """
    return _positive(instructions, "instruction count") / _positive(cycles, "cycle count")


def cpp_from_ipp_ipc(ipp: Number, ipc: Number) -> float:
    """``CPP = IPP / IPC``."""
    return _positive(ipp, "instructions per packet") / _positive(ipc, "instructions per cycle")


def ipc_from_cpp_ipp(cpp: Number, ipp: Number) -> float:
    """``IPC = IPP / CPP``."""
    return _positive(ipp, "instructions per packet") / _positive(cpp, "cycles per packet")


def ipp_from_cpp_ipc(cpp: Number, ipc: Number) -> float:
    """``IPP = CPP x IPC``."""
    return _positive(cpp, "cycles per packet") * _positive(ipc, "instructions per cycle")


@dataclass(frozen=True)
class Speedup:
    """A measured speedup next to the ideal one.

    ``deviation_pct`` is ``(measured / ideal - 1) x 100``: 0 is perfect scaling,
    negative is sub-linear, positive super-linear.
    """

    measured: float
    ideal: float

    @property
    def deviation_pct(self) -> float:
        return (self.measured / self.ideal - 1.0) * 100.0


def frequency_speedup(pps_at_base: Number, pps_at_new: Number, base_hz: Number, new_hz: Number) -> Speedup:
    """Throughput gain from a core frequency change; ideal is the frequency ratio.

    >>> s = frequency_speedup(10e6, 12e6, 2.0e9, 2.5e9)
    >>> s.measured, s.ideal, round(s.deviation_pct, 1)
    (1.2, 1.25, -4.0)
    """
    measured = _positive(pps_at_new, "packet rate (pps)") / _positive(pps_at_base, "packet rate (pps)")
    ideal = _positive(new_hz, "core frequency (Hz)") / _positive(base_hz, "core frequency (Hz)")
    return Speedup(measured=measured, ideal=ideal)


def ht_speedup(pps_1t1c: Number, pps_2t1c: Number) -> Speedup:
    """Throughput gain from running two HT threads on one core instead of one thread.

    The ideal is 2.0 (two independent cores); real data planes gain far less.

    >>> s = ht_speedup(10e6, 13e6)
    >>> s.measured, s.ideal, round(s.deviation_pct, 1)
    (1.3, 2.0, -35.0)
    """
    measured = _positive(pps_2t1c, "packet rate (pps)") / _positive(pps_1t1c, "packet rate (pps)")
    return Speedup(measured=measured, ideal=2.0)


def multi_core_speedup(pps_1c: Number, pps_nc: Number, cores: int) -> Speedup:
    """Throughput gain on ``cores`` cores vs one core; the ideal is perfect linear scaling.

    >>> s = multi_core_speedup(10e6, 20e6, cores=2)
    >>> s.measured, s.ideal, s.deviation_pct
    (2.0, 2.0, 0.0)
    """
    measured = _positive(pps_nc, "packet rate (pps)") / _positive(pps_1c, "packet rate (pps)")
    return Speedup(measured=measured, ideal=float(_cores(cores)))
