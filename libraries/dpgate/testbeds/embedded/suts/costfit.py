"""A cost injection's row (:mod:`dpgate.testbeds.embedded.suts.cost`) from readings of its steps.

Each reading is what one run measured for ``loads`` loads a frame: the relative rise in the
SUT's cycles per packet and its 99 % interval (the paired check's ``cpp_paired_change``,
``cpp_paired_low``/``_high``, and ``cpp_paired_baseline``: the gate's own figure, so a row fitted
on it aims the gate's steps at what the gate reads). :func:`fit_row` draws the least-squares
line through them, each weighted by its interval (a reading's standard error is its 99 %
half-width / 2.576), and turns it into a row on the readings' median base: ``(base, cycles a
load, cycles of the classifier)``, the classifier's share clamped at 0 (a line crossing below
0 at no load is noise: the program cannot make a frame cheaper).

    >>> r = [StepReading(1, 0.04, 0.0, 0.08, 15000), StepReading(110, 0.08, 0.06, 0.10, 14000),
    ...      StepReading(265, 0.15, 0.12, 0.18, 16000), StepReading(575, 0.27, 0.21, 0.33, 13500)]
    >>> f = fit_row(r)
    >>> round(f.per_load * 100, 4), round(f.at_zero * 100, 2), f.row
    (0.0412, 3.67, (14500.0, 5.98, 532.0))
"""

from __future__ import annotations

import math
import statistics
from typing import NamedTuple, Optional, Sequence, Tuple

#: z of a two-sided 99 % interval: the paired check's intervals are 99 %
Z99 = 2.576


class StepReading(NamedTuple):
    """One run's reading of an injected step."""

    loads: int
    change: float  # relative rise in cycles per packet (0.05: +5 %)
    low: float  # its 99 % interval
    high: float
    base: float  # the baseline's cycles per packet


class RowFit(NamedTuple):
    per_load: float  # relative rise a load adds
    at_zero: float  # the line at no load (the classifier itself)
    per_load_se: float
    at_zero_se: float
    points: int
    row: Tuple[float, float, float]  # (base, cycles a load, cycles of the classifier >= 0)


def fit_row(readings: Sequence[StepReading]) -> Optional[RowFit]:
    """The weighted least-squares line through ``readings`` (None without two load counts or
    a usable interval)."""
    pts = [r for r in readings if r.high > r.low and r.base > 0]
    if len({r.loads for r in pts}) < 2:
        return None
    w = [1.0 / ((r.high - r.low) / (2 * Z99)) ** 2 for r in pts]
    sw = sum(w)
    mx = sum(wi * r.loads for wi, r in zip(w, pts)) / sw
    my = sum(wi * r.change for wi, r in zip(w, pts)) / sw
    sxx = sum(wi * (r.loads - mx) ** 2 for wi, r in zip(w, pts))
    slope = sum(wi * (r.loads - mx) * (r.change - my) for wi, r in zip(w, pts)) / sxx
    zero = my - slope * mx
    base = float(statistics.median(r.base for r in pts))
    row = (float(round(base)), round(slope * base, 2), float(round(max(0.0, zero) * base)))
    return RowFit(slope, zero, math.sqrt(1 / sxx), math.sqrt(1 / sw + mx * mx / sxx), len(pts), row)
