"""sign-off's event search: the NDR when loss comes from rare events (stalls).

Part of :mod:`dpgate.search.signoff`, whose docstring (section 3) describes it. Event
probes catch stalls at a few loads; a per-event line through their losses
(:func:`dpgate.search.signoff_fit.event_line`) says where they stop losing frames. If
every event stops at about the same load (step-like), full trials decide from there
down. Otherwise the events are counted (:func:`read`): the answer is where lossy
events come ``ln 2`` per full trial, and full trials go there until the counts around
it are decisive or the budget is spent.

Two full trials at 900 pps that lost frames and two at 850 pps that did not:

    >>> from dpgate.model.trial import TrialResult
    >>> lossy = TrialResult.from_counts(900.0, 60.0, tx_packets=54000, rx_packets=53990)
    >>> clean = TrialResult.from_counts(850.0, 60.0, tx_packets=51000, rx_packets=51000)
    >>> rd = read([(900.0, 60.0, lossy)] * 2 + [(850.0, 60.0, clean)] * 2, 900.0, 100.0, 60.0)
    >>> round(rd.answer), rd.below, rd.above, rd.firm
    (875, 850.0, 900.0, False)

(two trials under the answer and a rate of 1.35 lossy per trial over it are not yet
decisive: the search would run a full trial at 875 pps next.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpgate.search.result import counts_of
from dpgate.search.signoff_fit import event_line
from dpgate.search.signoff_full import step_down

if TYPE_CHECKING:
    from dpgate.search.signoff import _Search

LN2 = math.log(2.0)
#: one-sided 90 % normal quantile (the counted search's Poisson bounds)
Z90 = 1.2816
#: one-sided 95 % (the reported bracket: two sides, each tried at several loads)
Z95 = 1.6449


def hunt(sr: _Search, load: float) -> tuple[float, int]:
    """Event probes (``event_probe_duration``) at ``load`` until one loses frames or
    they add up to one full trial; return (load, frames lost by that probe or 0).

    A probe much shorter than the time between loss events sees at most one event,
    so its loss is the loss of one event at this load.
    """
    load = sr._clip(load)
    d, T = sr.s.event_probe_duration, sr.s.trial_duration
    spent = 0.0
    while spent < T * (1 - 1e-9):
        c = sr.probe(load, min(d, T - spent))
        spent += min(d, T - spent)
        if c.loss:
            return load, c.loss
    return load, 0


def event_search(
    sr: _Search, candidate: float, floor: float, upper: float | None
) -> tuple[float | None, float | None]:
    """NDR when loss grows with trial duration (:func:`_search`); sets ``sr.bracket`` to
    the 95 % Poisson bounds of its trials (:func:`sure`), whatever path it took."""
    start = len(sr.log.trials)
    out = _search(sr, candidate, floor, upper)
    sr.bracket = sure(sr, start, floor)
    return out


def _search(
    sr: _Search, candidate: float, floor: float, upper: float | None
) -> tuple[float | None, float | None]:
    """NDR when loss grows with trial duration: rare loss events (stalls).

    A stall at load L loses ``s x (L - theta)`` frames, what arrives during it beyond
    what the buffer absorbs. Event probes catch stalls (:func:`hunt`); the line through
    their losses (:func:`event_line`) gives ``theta``; step-like events are decided by
    full trials from there down (:func:`_line_decide`), others by counting lossy
    exposures per load (:func:`read`). See :mod:`dpgate.search.signoff`, section 3.
    Returns (NDR or None, lowest failed full trial).
    """
    w, step = sr.s.width, sr.s.long_step
    margin, near = sr.s.event_margin, sr.s.event_near
    accept = sr.s.event_accept
    start = len(sr.log.trials)
    la, ga = hunt(sr, candidate * (1 - 2 * w))
    x0 = la  # the highest load of the event search, just under capacity
    if not ga:
        # No event in a full trial's worth of probing: events are rare, or lose
        # nothing at this load. A full trial there decides.
        c = sr.long(la)
        if c.loss == 0:
            return la, upper
        upper = min(upper or la, la)
        if sr.budget_left() and sr.long(la).loss == 0:
            # One lossy full trial in two full trials' time of probes and one more full
            # trial: (1 + ln 2) / 3 lossy events a full trial, under ln 2. Rarer than the
            # goal's rate: the coin flip expected at the answer.
            return la, upper
        for x in (la, la * (1 - step)):  # events do happen: catch one
            x, g = hunt(sr, x)
            if g:
                la, ga = x, g
                break
        else:  # loss that short probes never see: search with full trials
            return step_down(sr, la, c, 0.0, floor)
    events: list[tuple[float, float]] = [(la, float(ga))]

    def catch(load: float, above: float) -> bool:
        """An event at ``load``, or, if none comes in a full trial's time (theta is
        above ``load``), one between it and ``above``. True if one was caught."""
        for x in (load, math.sqrt(load * above)):
            x, g = hunt(sr, x)
            if g:
                events.append((x, float(g)))
                return True
        return False

    def locate() -> tuple[float | None, float]:
        """(slope, theta) from the events caught, catching more as needed."""
        fit: tuple[float, float] | None = None
        for _ in range(6):
            lowest = min(x for x, _ in events)
            fit = event_line(events) if len(events) > 1 else None
            if fit is not None and len(events) > 2 and lowest <= fit[1] * (1 + 2 * near):
                break  # the lowest event is near theta: its short way to zero fixes it
            if fit is None or lowest > la * (1 - step):
                target = lowest * (1 - step)  # first a lever for the slope
            else:
                # One more event just above theta: its short way to zero makes the
                # slope's error matter little, and it lengthens the slope's lever.
                target = min(fit[1] * (1 + near), lowest * (1 - near))
            target = max(target, lowest * (1 - 2 * step))  # no leap on a poor fit
            if not catch(target, lowest):
                # No event for two full trials' time: theta is above these loads.
                return (fit[0] if fit else None), math.sqrt(target * lowest)
        else:
            fit = event_line(events)  # with the last event caught
        if fit is None:
            return None, min(x for x, _ in events) * (1 - step)
        return fit

    slope, theta = locate()
    T, margin = sr.s.trial_duration, sr.s.event_margin
    if slope is not None and step_like(events, slope, theta, sr.s.event_spread):
        # Every event turns lossy at about the same load: the rate of lossy events is
        # about zero under theta and its full rate over it, counted on every probe there.
        for extra in range(3):
            over = [(d, counts_of(r).loss > 0) for x, d, r in sr.log.trials[start:] if x > theta * (1 + near)]
            seen = sum(d for d, _ in over) / T
            lossy = sum(lossy for _, lossy in over)
            thin = LN2 / 2 < lossy / seen < 2 * LN2  # within a factor 2 of the goal
            if not thin or extra == 2 or not sr.budget_left():
                break
            upper = upper if sr.long(x0).loss == 0 else min(upper or x0, x0)  # thin: look longer
        if lossy / seen <= LN2:
            # Rarer than ln 2 lossy events per full trial even where every event is lossy.
            return x0, upper
        return _line_decide(sr, slope, theta, floor, upper)
    budget = sr.s.event_budget * T
    fails = 0
    target = theta * (1 - margin)  # where the line puts the answer
    decided = False
    while True:
        rd = read(sr.log.trials[start:], x0, floor, T)
        spent = sum(d for _, d, _ in sr.log.trials[start:])
        if rd.below is None:
            # Every load tried loses too often: go lower, by the line where it has one.
            lowest = rd.lowest
            nxt = target if target < lowest else lowest * (1 - margin * 2**fails)
            if rd.answer is not None and (slope is None or fails):
                nxt = min(nxt, rd.answer)  # the line failed here: the counts lead
            nxt = max(nxt, lowest * (1 - 2 * step), floor)
            if lowest <= floor or not sr.budget_left():
                return None, upper
        else:
            assert rd.answer is not None  # read() sets it whenever it sets below
            nxt = rd.answer
            if slope is not None and rd.above is not None and rd.below <= target <= rd.above:
                nxt = target  # the line's answer lies in the counted bracket: trust it there
            here = sum(d for x, d, _ in sr.log.trials[start:] if d >= T and abs(x / nxt - 1) <= w / 2)
            if (here >= T and rd.firm) or (decided and spent >= budget) or not sr.budget_left():
                if here >= T:
                    return refine(sr, start, nxt, upper, rd.high)
                # Out of budget: the highest full trial the counts put under the goal, or
                # one full trial at the highest load they do.
                tried = [x for x, d, _ in sr.log.trials[start:] if d >= T and x <= rd.below * (1 + 1e-9)]
                if tried or not sr.budget_left():
                    return refine(sr, start, max(tried, default=rd.below), upper, rd.high)
                nxt = rd.below
        c = sr.long(nxt)
        decided = True  # a full trial was spent deciding: the budget may end the search
        if c.loss:
            upper = min(upper or nxt, nxt)
            fails += 1
            if slope is not None and c.loss <= slope * nxt * accept:
                # The coin flip expected at the answer: one event, barely lossy here.
                return nxt, upper
            if slope is not None:
                # Under the zero-loss load of the event it met (if one: at most 4 margins
                # a fail).
                own = max(nxt - c.loss / slope, nxt * (1 - 4 * margin * fails))
                target = min(target, own * (1 - margin / 2))


def refine(
    sr: _Search, start: int, answer: float, upper: float | None, high: float | None
) -> tuple[float, float | None]:
    """Thin evidence: a full trial passed at ``answer`` but the nearest load known to
    lose too often (``upper``, the lowest failed full trial, or ``high``, the lowest
    load the counts put over the goal) lies more than ``event_refine`` above it. Rather
    than report the pass (one trial says little about where the pass probability
    crosses one half), bisect with full trials (at most ``event_refine_trials``)."""
    T = sr.s.trial_duration
    passed = [x for x, d, r in sr.log.trials[start:] if d >= T and x == answer and not counts_of(r).loss]
    hi = min((v for v in (upper, high) if v is not None), default=None)
    for _ in range(sr.s.event_refine_trials if passed else 0):
        if hi is None or hi <= answer * (1 + sr.s.event_refine) or not sr.budget_left():
            break
        mid = math.sqrt(answer * hi)
        if sr.long(mid).loss:
            hi = upper = mid if upper is None else min(upper, mid)
        else:
            answer = mid
    return answer, upper


def sure(sr: _Search, start: int, floor: float) -> tuple[float | None, float | None]:
    """The bracket the event search is sure of, from all its trials (lossy or clean
    exposures per load). The rate of lossy events does not fall with load, so the
    exposures at ``x`` and over it, pooled, over-state the rate at ``x``: ``low`` is the
    highest ``x`` where their 95 % upper Poisson bound is under ``ln 2`` per full trial
    (the answer is at or over it). Likewise the exposures at and under ``x`` under-state
    it: ``high`` is the lowest ``x`` where their 95 % lower bound is over ``ln 2``.
    (One failed full trial is no such bound: it fails up to half the time at the
    answer, and often under it where the pass probability is flat.)"""
    T = sr.s.trial_duration
    per: dict[float, list[float]] = {}
    for x, d, r in sr.log.trials[start:]:
        if x >= floor:
            acc = per.setdefault(x, [0.0, 0.0])
            acc[0] += d
            acc[1] += 1.0 if counts_of(r).loss else 0.0
    loads = sorted(per)
    low = high = None
    for i, x in enumerate(loads):
        over = loads[i:]
        for j in range(len(over)):
            t = sum(per[y][0] for y in over[: j + 1])
            n = sum(per[y][1] for y in over[: j + 1])
            if _poisson_bound(n, True, Z95) * T / t <= LN2:
                low = x
                break
        under = loads[: i + 1]
        if high is None and any(
            _poisson_bound(sum(per[y][1] for y in under[k:]), False, Z95)
            * T
            / sum(per[y][0] for y in under[k:])
            > LN2
            for k in range(len(under))
        ):
            high = x
    return low, high


def step_like(events: list[tuple[float, float]], slope: float, theta: float, spread: float) -> bool:
    """True if every event's own zero-loss load (its load less its loss over the slope;
    or half its loss, two stalls in one probe) lies within ``spread`` of ``theta``."""

    def own(x: float, g: float) -> float:
        return min((x - g / slope, x - g / (2 * slope)), key=lambda z: abs(z - theta))

    return len(events) > 2 and all(abs(own(x, g) / theta - 1) <= spread for x, g in events)


def _line_decide(
    sr: _Search, slope: float, theta: float, floor: float, upper: float | None
) -> tuple[float | None, float | None]:
    """Step-like events: full trials from ``theta x (1 - event_margin)`` down; a pass, or
    a failure whose loss over the slope puts its event within ``event_accept`` under the
    load (the coin flip expected at the answer), is the answer."""
    margin, accept = sr.s.event_margin, sr.s.event_accept
    load = max(theta * (1 - margin), floor)
    fails = 0
    while sr.budget_left():
        c = sr.long(load)
        if c.loss == 0:
            return load, upper
        upper = min(upper or load, load)
        if c.loss <= slope * load * accept:
            return load, upper
        fails += 1
        own = load - c.loss / slope  # zero-loss load of the event it met, if one
        nxt = min(
            load * (1 - margin * 2 ** (fails - 1)),
            max(own * (1 - margin / 2), load * (1 - 4 * margin * fails)),
        )
        if load <= floor:
            break
        load = max(nxt, floor)
    return None, upper


def _poisson_bound(k: float, upper: bool, z: float = Z90) -> float:
    """One-sided Poisson bound of a count ``k`` (Wilson-Hilferty; 90 % for ``Z90``)."""
    if upper:
        n = k + 1
        return n * (1 - 1 / (9 * n) + z / (3 * math.sqrt(n))) ** 3
    if k <= 0:
        return 0.0
    return k * (1 - 1 / (9 * k) - z / (3 * math.sqrt(k))) ** 3


@dataclass
class Reading:
    """What the event search's trials say: see :func:`read`."""

    answer: float | None
    below: float | None
    above: float | None
    lowest: float
    low: float | None
    high: float | None
    #: the counts either side of the answer are decisive (the rate over it at least
    #: three times the goal, or three full trials' time under it)
    firm: bool = True


def read(trials: Sequence[tuple[float, float, Any]], top: float, floor: float, T: float) -> Reading:
    """Read the event search's trials at loads up to ``top``.

    Every trial is one exposure, lossy or clean. Per load, the lossy ones per second
    estimate the rate of lossy events (each counts once however many stalls it met),
    made non-decreasing in load (pooled where they are not), read median-unbiased:
    ``(n + ln 2)`` per block's full trials. ``answer`` is where that rate is ``ln 2`` per full trial, interpolated in
    log-log between the loads around it (``below``, ``above``), or, under the lowest
    load, extrapolated along the rates over it (None with one load). ``low``: the
    highest load whose 90 % upper Poisson bound is under the goal; ``high``: the lowest
    whose 90 % lower bound is over it.
    """
    per: dict[float, list[float]] = {}
    for x, d, r in trials:
        if x <= top * (1 + 1e-9):
            acc = per.setdefault(x, [0.0, 0.0])
            acc[0] += d
            acc[1] += 1.0 if counts_of(r).loss else 0.0
    blocks: list[list[Any]] = []  # [loads, seconds, events]
    for x in sorted(per):
        blocks.append([[x], per[x][0], per[x][1]])
        while len(blocks) > 1 and blocks[-2][2] / blocks[-2][1] > blocks[-1][2] / blocks[-1][1]:
            last = blocks.pop()
            blocks[-1] = [blocks[-1][0] + last[0], blocks[-1][1] + last[1], blocks[-1][2] + last[2]]
    pts = [(x, (n + LN2) * T / t, n, t) for xs, t, n in blocks for x in xs]  # per full trial
    low = high = None
    for x, _, n, t in pts:
        if _poisson_bound(n, True) * T / t <= LN2:
            low = x
        if high is None and _poisson_bound(n, False) * T / t > LN2:
            high = x
    lowest = pts[0][0]
    above = [i for i, p in enumerate(pts) if p[1] > LN2]
    if not above:
        return Reading(top, pts[-1][0], None, lowest, low, high)
    j = above[0]
    if j > 0:
        (x0, l0, _, _), (x1, l1, _, _) = pts[j - 1], pts[j]
        f = math.log(LN2 / l0) / math.log(l1 / l0) if l1 > l0 else 1.0
        seen = next(t for xs, t, _ in blocks if x0 in xs) / T
        return Reading(x0 * (x1 / x0) ** f, x0, x1, lowest, low, high, l1 >= 3 * LN2 or seen >= 3)
    bottom, rate = pts[0][0], pts[0][1]
    steeper = [p for p in pts[1:] if p[1] > rate * 1.01]
    if not steeper:
        return Reading(None, None, bottom, lowest, low, high)
    e = max(1.0, math.log(steeper[0][1] / rate) / math.log(steeper[0][0] / bottom))
    return Reading(max(floor, bottom * (LN2 / rate) ** (1 / e)), None, bottom, lowest, low, high)
