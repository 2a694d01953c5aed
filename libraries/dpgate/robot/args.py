"""Keyword arguments the Robot layer converts itself: an absolute rate and a number > 0 that
may be left unset (Robot passes ``None`` or an empty string), and a count of at least one;
a bad value is a :class:`~dpgate.model.errors.ConfigError` naming the argument."""

from __future__ import annotations

from typing import Optional

from dpgate.config.units import parse_rate
from dpgate.model.errors import ConfigError


def absolute_rate(text: Optional[str], name: str) -> Optional[float]:
    """pps of an absolute rate argument ("100kpps"), None when unset (Robot's None or empty).

    >>> absolute_rate("100kpps", "cpp_load"), absolute_rate("None", "cpp_load")
    (100000.0, None)
    """
    if text in (None, "", "None"):
        return None
    pps = parse_rate(str(text)).pps
    if pps is None:
        raise ConfigError(f"must be an absolute rate such as 100kpps, got {text!r}", path=name)
    return pps


def positive(text: Optional[str], name: str) -> Optional[float]:
    """A number > 0 from a keyword argument, None when unset (Robot's None or empty).

    >>> positive("30.5", "core_speed"), positive("None", "core_speed")
    (30.5, None)
    """
    if text in (None, "", "None"):
        return None
    try:
        v = float(str(text))
    except ValueError:
        v = 0.0
    if not v > 0:
        raise ConfigError(f"must be a number > 0, got {text!r}", path=name)
    return v


def count(value: int, name: str) -> int:
    """A whole number >= 1 (Robot has converted ``"9"`` already).

    >>> count(9, "cpp_trials")
    9
    >>> count(0, "cpp_trials")
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: cpp_trials: must be a whole number >= 1, got 0
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"must be a whole number >= 1, got {value!r}", path=name)
    return value
