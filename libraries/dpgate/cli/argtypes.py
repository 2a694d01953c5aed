"""argparse types of the command lines: each refuses bad input with one line naming the option.

>>> percent("--min-change")("3%"), hours("--history-span")("90 min")
(3.0, 1.5)
"""

from __future__ import annotations

import argparse
from typing import Callable

from dpgate.config.units import UnitError, parse_hours


def percent(option: str) -> Callable[[str], float]:
    """A percentage in [0, 90): ``3`` or ``3%``."""

    def conv(text: str) -> float:
        try:
            v = float(str(text).rstrip("%"))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{option} must be a percentage like 3 or 3%, got {text!r}"
            ) from None
        if not 0 <= v < 90:
            raise argparse.ArgumentTypeError(f"{option} must be in [0, 90) %, got {text!r}")
        return v

    return conv


def hours(option: str) -> Callable[[str], float]:
    """A time span in hours: ``24``, ``24h``, ``90 min``, ``2 d``."""

    def conv(text: str) -> float:
        try:
            return parse_hours(text, option)
        except UnitError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return conv
