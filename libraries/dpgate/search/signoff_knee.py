"""sign-off: locating a soft knee's loss tail with short probes (part of
:mod:`dpgate.search.signoff`, section 1 of whose docstring describes it).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dpgate.search.signoff import _Search


def locate_knee(sr: _Search, ndr_loss: float, pdr_loss: float, cap: float) -> tuple[float, float, bool]:
    """Loss below capacity: fit the loss tail with probes that lose measurable counts."""
    d, width = sr.s["probe_duration"], sr.s["width"]
    # PDR: secant on ln(loss ratio) between the closest probes around pdr_loss.
    pdr: float | None = None
    for _ in range(8):
        below = [(x, r) for x, r in sr.probes if r <= pdr_loss]
        above = [(x, r) for x, r in sr.probes if r > pdr_loss and x < cap * 1.5]
        if not above:
            break
        hi = min(above)
        # Probes under the lowest lossy one only: over it, a pass is Poisson luck.
        below = [b for b in below if b[0] < hi[0]]
        if below:
            lo = max(below)
            if hi[0] - lo[0] <= width * hi[0]:
                pdr = lo[0]
                if lo[1] > 0:  # the crossing of the secant on ln(loss ratio)
                    t = (math.log(pdr_loss) - math.log(lo[1])) / (math.log(hi[1]) - math.log(lo[1]))
                    pdr = lo[0] + min(max(t, 0.0), 1.0) * (hi[0] - lo[0])
                break
            if lo[1] > 0:
                t = (math.log(pdr_loss) - math.log(lo[1])) / (math.log(hi[1]) - math.log(lo[1]))
                nxt = lo[0] + t * (hi[0] - lo[0])
            else:
                nxt = (lo[0] + hi[0]) / 2
            nxt = min(max(nxt, lo[0] + 0.25 * (hi[0] - lo[0])), hi[0] - 0.25 * (hi[0] - lo[0]))
        else:
            nxt = hi[0] * (1 - max(4 * width, 0.5 * (hi[1] - pdr_loss)))
        if nxt <= sr.min_rate:
            break
        sr.probe(nxt)
    if pdr is None:
        passing = [x for x, r in sr.probes if r <= pdr_loss]
        pdr = max(passing) if passing else sr.min_rate
    # NDR: extend the loss-rate fit down to small counts, then extrapolate to the
    # rate at which a full trial loses ln 2 frames on average.
    target = math.log(2.0) / sr.s["trial_duration"]
    for _ in range(4):
        fit = sr._fit_tail()
        lowest_x, lowest_r = min(sr.probes)
        if fit is None:
            if lowest_r == 0.0:
                break  # the tail is below what probes can see
            sr.probe(lowest_x * (1 - 4 * width))
            continue
        a, b = fit
        small = (math.log(20.0 / d) - a) / b  # where a probe would lose ~20 frames
        lowest = min(x for x, _ in sr.lossy)
        if small >= lowest * (1 - width):
            break
        sr.probe(max(small, lowest * 0.8))
    fit = sr._fit_tail()
    tail_d = sr.s["tail_probe_duration"]
    if fit is not None and tail_d > d:
        # One longer probe where it should lose ~10 frames shortens the
        # extrapolation to the full-trial target by the duration ratio.
        a, b = fit
        lowest = min(x for x, _ in sr.lossy)
        sr.probe(max((math.log(10.0 / tail_d) - a) / b, lowest * 0.8), tail_d)
        fit = sr._fit_tail() or fit
    if fit is None:
        ndr = pdr * (1 - 4 * width)
    else:
        a, b = fit
        ndr = (math.log(target) - a) / b
    return min(ndr, pdr), pdr, False
