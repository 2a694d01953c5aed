"""sign-off: full-trial searches (part of :mod:`dpgate.search.signoff`, which documents them).

``follow_tail`` steps down a soft knee's loss tail by its fitted slope; ``step_down``
searches with full-length trials alone when short probes did not predict the loss.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from dpgate.search.result import Counts
from dpgate.search.signoff_fit import loss_intercept

if TYPE_CHECKING:
    from dpgate.search.signoff import _Search


def follow_tail(
    sr: _Search, hi: float, counts: Counts, slope: float, floor: float
) -> tuple[float, float | None]:
    """Loss tail: step down by the fitted slope until a full trial is consistent.

    At the true NDR a full trial loses Poisson(ln 2) frames: 0 half the time, more
    than ``tail_accept`` rarely. A failure with at most that many frames is such a
    coin flip and confirms the load; more frames mean the load is
    ``ln(lost / ln 2) / slope`` too high.
    """
    load, lost = hi, counts.loss
    upper = hi
    while lost > sr.s.tail_accept and sr.budget_left():
        nxt = max(floor, load - math.log(lost / math.log(2.0)) / slope)
        c = sr.long(nxt)
        load, lost = nxt, c.loss
        if lost:
            upper = min(upper, nxt)
    return load, upper


def step_down(
    sr: _Search, hi: float, hi_counts: Counts | None, loss: float, floor: float
) -> tuple[float | None, float | None]:
    """Loss that short probes did not predict: search with full trials."""
    T = sr.s.trial_duration
    sw = sr.s.signoff_width
    # PDR misses are usually marginal: start small there.
    step = sr.s.long_step if loss == 0.0 else 2 * sr.s.width
    lo: float | None = None
    passes: list[float] = []
    fails: list[tuple[float, float]] = []
    if hi_counts is not None and hi_counts.loss:
        fails.append((hi, float(hi_counts.loss)))
    first = True
    fwd = hi_counts.rx / T if hi_counts is not None else hi
    bottom = max(floor, sr.min_rate)
    while sr.budget_left():
        if lo is not None:
            if hi - lo <= sw * hi:
                zero = loss_intercept(fails) if loss == 0.0 else None
                if loss > 0.0 or (zero is not None and lo <= zero * (1 + sw / 2)):
                    break  # the pass agrees with the loss counts of the failures
                if sr.long(lo).loss_ratio <= loss:
                    break
                # Passes can be luck here (no stall happened): the answer must
                # pass twice; a failed confirmation makes it an upper bound and
                # falls back to the best earlier pass below it.
                hi = lo
                passes = [x for x in passes if x < hi]
                lo = max(passes) if passes else None
                step = sr.s.long_step if loss == 0.0 else 2 * sr.s.width
                continue
            nxt = math.sqrt(lo * hi)
            zero = loss_intercept(fails) if loss == 0.0 else None
            if zero is not None and lo < zero < hi:
                # Regula falsi on loss counts, kept away from the bracket ends.
                nxt = min(max(zero, lo + 0.2 * (hi - lo)), hi - 0.2 * (hi - lo))
        elif first and loss > 0.0:
            # Forwarded-rate correction: the load at which this trial's forwarding
            # would have met the goal, a little under it.
            nxt = min(fwd / (1.0 - loss), hi) * (1 - sr.s.width / 2)
        else:
            nxt = hi * (1 - step)
            zero = loss_intercept(fails) if loss == 0.0 else None
            if zero is not None:
                # Loss counts of failed full trials grow about linearly with
                # load above the answer: extrapolate them to zero, just under.
                nxt = min(max(zero * (1 - sw / 2), hi * (1 - 2 * step)), hi * (1 - sw))
            step *= 2
        first = False
        nxt = max(nxt, bottom)
        c = sr.long(nxt)
        if loss > 0.0 and c.loss_ratio > loss and sr._marginal(c, loss):
            return nxt, nxt  # the coin flip expected at the answer confirms it
        if c.loss_ratio <= loss:
            lo = nxt
            passes.append(nxt)
        else:
            hi = nxt
            fails.append((nxt, float(c.loss)))
        if nxt <= bottom and lo is None:
            break
    if lo is None:
        lo = max([x for x in passes if x < hi], default=None)
    return lo, hi  # lo None: no load passed a full trial
