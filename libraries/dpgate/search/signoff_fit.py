"""sign-off: the fits it reads trial counts with (part of :mod:`dpgate.search.signoff`).

Pure functions of (load, value) points, no measuring.
"""

from __future__ import annotations

import math


def median(values: list[float]) -> float:
    """Highest x with at least half of ``values`` >= x (the upper median).

    >>> median([1, 2, 3]), median([1, 2, 3, 4])
    (2, 3)
    """
    v = sorted(values)
    return v[len(v) // 2]


def line(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Least-squares ``y = a + b x``; None unless 2+ distinct x and a rising line."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return (my - b * mx, b) if b > 0 else None


def fit_log_rate(points: list[tuple[float, float]]) -> tuple[float, float] | None:
    """Fit ``ln(rate) = a + b x load`` to (load, rate > 0) points."""
    return line([(x, math.log(y)) for x, y in points if y > 0])


def loss_intercept(fails: list[tuple[float, float]], use: int = 4) -> float | None:
    """Load where a line through (load, lost frames) of the ``use`` lowest failed full
    trials reaches zero; None unless it rises with load.

    >>> round(loss_intercept([(900.0, 100.0), (1000.0, 200.0)]))
    800
    """
    fit = line(sorted(fails)[:use])
    return None if fit is None else -fit[0] / fit[1]


def event_line(events: list[tuple[float, float]], double_odds: float = 8.0) -> tuple[float, float] | None:
    """Per-event fit: (slope, zero) of ``loss = slope x (load - zero)`` through the
    losses of caught events, allowing that a probe caught two events (its loss is then
    twice one event's).

    Every way of halving some of the losses is fitted by least squares; one that rises
    and reaches zero below every event's load is kept, the one with the smallest
    residual, where each halving must cut the residual ``double_odds``-fold (two events
    in one short probe are that much rarer than one). None if no line qualifies. The
    zero returned is that of the lowest-load event along the fitted slope: being
    nearest, its own zero-loss load depends least on the slope's error.

    >>> s, z = event_line([(1000.0, 500.0), (900.0, 600.0), (800.0, 100.0)])
    >>> round(z), round(s, 3)
    (750, 2.0)
    """
    events = sorted(events, reverse=True)  # the lowest load last
    lowest = events[-1][0]
    best = None
    for mask in range(1 << (len(events) - 1)):  # the lowest event is never halved
        pts = [(x, g / 2 if mask >> i & 1 else g) for i, (x, g) in enumerate(events)]
        fit = line(pts)
        if fit is None or not 0 < -fit[0] / fit[1] < lowest:
            continue
        a, b = fit
        scale = sum(g for _, g in pts) / len(pts)
        rss = sum((g - a - b * x) ** 2 for x, g in pts) / scale**2
        cost = (rss + 1e-9) * double_odds ** bin(mask).count("1")
        if best is None or cost < best[0]:
            x, g = min(pts)
            best = (cost, b, x - g / b)
    return None if best is None else (best[1], best[2])
