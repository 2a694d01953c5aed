"""Parsing and printing of the units dpgate users write: rates, bit rates, frame sizes.

Examples::

    >>> parse_rate("14.88 Mpps")
    Rate(pps=14880000.0, percent=None)
    >>> parse_rate("50%").resolve(max_pps=200_000)
    100000.0
    >>> parse_frame_size("64B"), parse_frame_size("imix")
    (64, 'IMIX')
    >>> format_pps(212_000)
    '0.212 Mpps'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

MIN_FRAME = 64
MAX_FRAME = 9216
#: IMIX_v4_1 as in CSIT and the methodology papers: 64/570/1518 B in a 28:16:4 ratio.
IMIX_V4_1 = ((64, 28), (570, 16), (1518, 4))

FrameSize = Union[int, str]


class UnitError(ValueError):
    """A value a user wrote could not be understood; the message says what is accepted."""


_RATE_UNITS = {"pps": 1.0, "kpps": 1e3, "mpps": 1e6, "gpps": 1e9}
_BPS_UNITS = {"bps": 1.0, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9, "tbps": 1e12}
_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"


@dataclass(frozen=True)
class Rate:
    """A packet rate: absolute (``pps``) or relative to the testbed maximum (``percent``)."""

    pps: Optional[float] = None
    percent: Optional[float] = None

    def resolve(self, max_pps: Optional[float] = None) -> float:
        """Return the rate in pps; a percentage needs ``max_pps``."""
        if self.pps is not None:
            return self.pps
        if max_pps is None or self.percent is None:
            raise UnitError(
                f"rate {self.percent:g}% is relative to the testbed maximum, which is not known "
                "here: give an absolute rate (e.g. 50kpps) or calibrate the generator first"
            )
        return max_pps * self.percent / 100.0

    def __str__(self) -> str:
        return f"{self.percent:g}%" if self.percent is not None else format_pps(self.pps)


def parse_rate(text: Union[str, int, float], what: str = "rate") -> Rate:
    """Parse ``"50kpps"``, ``"14.88 Mpps"``, ``"200000"`` (pps) or ``"75%"``."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), "pps"
    else:
        m = re.fullmatch(_NUM + r"\s*(%|[a-zA-Z]*)", str(text).strip())
        if not m:
            raise UnitError(f"{what} {text!r} is not a rate: write e.g. 50kpps, 14.88 Mpps, 200000 or 75%")
        value, unit = float(m.group(1)), (m.group(2) or "pps").lower()
    if unit == "%":
        if not 0 < value <= 100:
            raise UnitError(f"{what} {text!r}: a percentage must be in (0, 100]")
        return Rate(percent=value)
    if unit not in _RATE_UNITS:
        raise UnitError(f"{what} {text!r}: unknown unit {unit!r}; accepted: pps, kpps, Mpps, Gpps or %")
    pps = value * _RATE_UNITS[unit]
    if not pps > 0:
        raise UnitError(f"{what} {text!r} must be greater than 0")
    return Rate(pps=pps)


def parse_bps(text: Union[str, int, float], what: str = "bit rate") -> float:
    """Parse ``"10Gbps"``, ``"25 Gbps"``, ``"1e9"`` (bps) into bits per second."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value, unit = float(text), "bps"
    else:
        m = re.fullmatch(_NUM + r"\s*([a-zA-Z/]*)", str(text).strip())
        if not m:
            raise UnitError(f"{what} {text!r} is not a bit rate: write e.g. 10Gbps or 25e9")
        value, unit = float(m.group(1)), (m.group(2) or "bps").lower().replace("/s", "ps")
        if unit in ("g", "m", "k"):
            unit += "bps"
    if unit not in _BPS_UNITS:
        raise UnitError(f"{what} {text!r}: unknown unit {unit!r}; accepted: bps, kbps, Mbps, Gbps")
    bps = value * _BPS_UNITS[unit]
    if not bps > 0:
        raise UnitError(f"{what} {text!r} must be greater than 0")
    return bps


def parse_frame_size(text: Union[str, int], what: str = "frame size") -> FrameSize:
    """Parse ``64``, ``"64B"``, ``"1518"`` or ``"IMIX"`` (any case) into an int or ``"IMIX"``."""
    if isinstance(text, bool):
        raise UnitError(f"{what} {text!r} is not a frame size")
    if isinstance(text, int):
        size = text
    else:
        t = str(text).strip()
        if t.upper() in ("IMIX", "IMIX_V4_1"):
            return "IMIX"
        m = re.fullmatch(r"([0-9]+)\s*[bB]?", t)
        if not m:
            raise UnitError(
                f"{what} {text!r} is not a frame size: write a number of bytes {MIN_FRAME}..{MAX_FRAME} (e.g. 64B) or IMIX"
            )
        size = int(m.group(1))
    if not MIN_FRAME <= size <= MAX_FRAME:
        raise UnitError(f"{what} {size} is out of range: accepted {MIN_FRAME}..{MAX_FRAME} bytes or IMIX")
    return size


def frame_size_tag(size: FrameSize) -> str:
    """Test-name/tag form: ``64B``, ``IMIX``."""
    return "IMIX" if size == "IMIX" else f"{int(size)}B"


def average_frame_size(size: FrameSize) -> float:
    """Mean L2 frame size in bytes (IMIX_v4_1 averages 353.83 B)."""
    if size == "IMIX":
        total = sum(n for _, n in IMIX_V4_1)
        return sum(s * n for s, n in IMIX_V4_1) / total
    return float(size)


def format_pps(pps: Optional[float], digits: int = 3) -> str:
    """``212000 -> '0.212 Mpps'``; ``None -> 'n/a'``."""
    if pps is None:
        return "n/a"
    return f"{pps / 1e6:.{digits}f} Mpps"


def format_bps(bps: Optional[float], digits: int = 3) -> str:
    if bps is None:
        return "n/a"
    return f"{bps / 1e9:.{digits}f} Gbps"


def parse_ratio(text: Union[str, float], what: str = "ratio", upper_inclusive: bool = False) -> float:
    """Parse ``"0.5%"`` or ``0.005`` into a ratio in [0, 1)."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        t = str(text).strip()
        try:
            value = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
        except ValueError:
            raise UnitError(f"{what} {text!r} is not a number: write e.g. 0.005 or 0.5%") from None
    ok = 0.0 <= value <= 1.0 if upper_inclusive else 0.0 <= value < 1.0
    if not ok:
        raise UnitError(f"{what} {text!r} must be in [0, 1{']' if upper_inclusive else ')'}")
    return value


_HOURS = {
    "": 1.0,
    "h": 1.0,
    "hour": 1.0,
    "hours": 1.0,
    "min": 1 / 60,
    "m": 1 / 60,
    "d": 24.0,
    "day": 24.0,
    "days": 24.0,
}


def parse_hours(text: Union[str, float], what: str = "time span") -> float:
    """Parse ``"24h"``, ``"90 min"``, ``"2 d"`` or ``24`` (hours) into hours, at least 0.

    >>> parse_hours("24h"), parse_hours("90 min"), parse_hours("2 days"), parse_hours(0.5)
    (24.0, 1.5, 48.0, 0.5)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", str(text).lower())
        if not m or m.group(2) not in _HOURS:
            raise UnitError(f"{what} {text!r} is not a time span: write e.g. 24h, 90 min or 2 d")
        value = float(m.group(1)) * _HOURS[m.group(2)]
    if value < 0:
        raise UnitError(f"{what} {text!r} must be at least 0")
    return value
