"""Latency trials after a search: a few fixed loads as fractions of PDR (CSIT: 90/50/10 %).

>>> calls = []
>>> out = latency_trials(lambda load, d: calls.append((load, d)) or {"p50_us": 7}, 1e6)
>>> [round(load) for load, _ in out], calls[0][1]
([900000, 500000, 100000], 5.0)
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Tuple

from dpgate.model.errors import ConfigError


def latency_trials(
    measure_latency: Callable[[float, float], Any],
    pdr: float,
    fractions: Sequence[float] = (0.9, 0.5, 0.1),
    duration: float = 5.0,
) -> Tuple[Tuple[float, Any], ...]:
    """Call ``measure_latency(load, duration)`` at each ``fraction x pdr``.

    Returns ``((load, result), ...)``; what a result holds is the generator's business.
    """
    if not pdr or pdr <= 0:
        raise ConfigError(f"latency trials need a PDR > 0, got {pdr!r}")
    for f in fractions:
        if not 0 < f <= 1:
            raise ConfigError(f"latency fraction {f!r} must be in (0, 1]")
    return tuple((f * pdr, measure_latency(f * pdr, duration)) for f in fractions)
