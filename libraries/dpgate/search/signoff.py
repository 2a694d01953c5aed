"""The ``sign-off`` profile: RFC 2544-honest NDR/PDR at full-length trials, fast.

Definition of truth
-------------------
For a loss goal ``g`` and full trial length ``T`` (``trial_duration``, default 60 s as
RFC 2544 asks), the answer is the highest load at which **one trial of length T**
loses at most ``g`` of its intended frames **with probability >= 0.5**. A single
lucky pass does not make a load good and a single unlucky failure does not make it
bad: the search estimates where that probability crosses one half. (``per-commit``
answers the same question for 1 s trials, which is a different number on SUTs whose
loss grows with duration.)

How it works
------------
1. *Locate with short probes* (``probe_duration``, default 1 s), reading counts, not
   only pass/fail:

   * overloaded probes (at 1.25 x the highest load seen) give capacity samples:
     forwarded frames / duration; a probe that keeps up counts as a sample at its
     load. ``samples_min`` are taken, up to ``samples_max`` when they disagree by
     more than ``width``. Their upper median is the short-trial capacity ``C``;
   * a probe just under the lowest sample tells the regimes apart. No loss there: the
     SUT is *capacity-limited*, NDR candidate ``C``, PDR candidate
     ``C / (1 - pdr_loss)`` less ``pdr_margin``. (A check that loses may have drawn a
     low capacity: it is retried lower, and more samples are taken.) Loss there: a
     *loss tail* (soft knee). ``ln(lost frames per second)`` is fitted against load
     from probes with measurable loss, plus one ``tail_probe_duration`` probe low in
     the tail; PDR is where the probes' loss ratio crosses ``pdr_loss`` (secant on
     its log, down to ``width``, between the highest passing probe under the lowest
     failing one and that one), NDR where a full trial is expected to lose ``ln 2``
     frames (Poisson: zero loss with probability one half).

2. *Decide with full-length trials*, only where they decide; PDR first, then NDR (at
   most the PDR). One full trial at the candidate; a pass accepts it. So does a PDR
   trial over the goal by at most one Poisson standard deviation of the allowed count
   (``sqrt(pdr_loss x frames)``): that is the coin flip expected at the answer. A
   failure is read by its counts:

   * capacity-limited SUT whose samples vary (per-trial noise, bimodal) and the
     trial's forwarded rate lies within their range (widened below by half of it):
     the expected coin flip at the median. Its forwarded rate joins the samples and
     the median is recomputed; no further full trial. Unless, for the NDR, a
     capacity draw that close under the load is implausible (share of samples under
     the load x this trial's shortfall / the nearest such sample's shortfall < 1/60):
     then a rare event, e.g. a stall, made a sample look low; see *event search*;
   * loss tail, NDR: at the answer a full trial loses Poisson(ln 2) frames, so up to
     ``tail_accept`` lost frames confirm it; more mean the load is
     ``ln(lost / ln 2) / slope`` too high (slope of the fitted tail): step there;
   * a full trial of a SUT whose samples agree forwarded less than they do (more
     samples are taken first if the shortfall exceeds ``width``, as per-trial
     variation they missed could explain that): the loss grows with duration. The NDR
     is found by *event search*; a PDR miss steps down with full trials (the
     forwarded-rate correction, then ``2 x width`` steps and bisection).

3. *Event search*: NDR when loss comes from rare events (stalls). A stall at load L
   loses what arrives during it beyond what the ring absorbs, about
   ``s x (L - theta)`` frames: nothing below the event's own zero-loss load
   ``theta``, then linear in load. A full trial meets a random number of stalls, so
   its loss count is that line times an unknown count. Short *event probes*
   (``event_probe_duration``, 2 s) repeated at one load until one loses frames
   (*catching* an event), or until they add up to one full trial (clean), measure one
   event at a time:

   * catch one event just under ``C``, one ``long_step`` lower (clean: theta lies
     above; one between instead), then, while the lowest event is more than
     ``2 x event_near`` above the fitted zero, one ``event_near`` above it (never
     more than ``2 x long_step`` under the lowest so far; at most six catches). Two
     stalls in one probe lose twice one's: the per-event fit (:func:`_event_line`)
     tries halving losses other than the lowest one and believes a halving only if it
     cuts the residual eight-fold. The slope comes from all events, far apart, so the
     spread of the events' own zero-loss loads hardly moves it; ``theta`` is the
     lowest event's load less its loss over that slope (a short way, so the slope's
     error matters little);
   * full trials decide, from ``theta x (1 - event_margin)`` down. A pass is the
     answer. A failure whose loss over the slope puts the stall it met within
     ``event_accept`` (relative) under the load is the coin flip expected at the
     answer and confirms it too. Otherwise the next trial goes under that stall's
     own zero-loss load (``load - lost / s``; at least ``event_margin`` lower, with
     growing steps). If event probes stay clean just under ``C`` for a full trial's
     time, a full trial there decides: a pass is the answer; a failure means events
     do happen, and one is caught there or ``long_step`` lower. If none is, the loss
     is one short probes cannot see: the NDR is then searched with full trials alone
     (steps of ``long_step``, regula falsi on the failures' loss counts, a second pass
     required unless those counts agree).

   At most ``max_long_trials`` full-length trials are spent (NDR and PDR together).

Parameters (overrides) and defaults: ``trial_duration`` 60, ``probe_duration`` 1,
``width`` 0.005 (probe resolution, relative), ``signoff_width`` 0.01 (full-trial
bracket of the full-trial-only search), ``samples_min`` 5, ``samples_max`` 15,
``long_step`` 0.08, ``max_long_trials`` 10, ``tail_accept`` 3,
``tail_probe_duration`` 10, ``pdr_margin`` 0.001, ``event_probe_duration`` 2,
``event_near`` 0.04, ``event_margin`` 0.005, ``event_accept`` 0.01.

``ndr_upper``/``pdr_upper`` are the lowest loads whose full-length trial failed
(``None`` if none did; equal to the answer when its trial failed by the coin flip that
confirms it). Measured on the simulated SUTs of ``benchmarks/search.py`` (100 seeds
each, simulated time with 0.5 s per trial, against one 60 s trial per bound =
121 s): hard capacity 130 s (1.07x), per-trial noise 149 s (1.23x), rare stalls
264 s (2.18x: the PDR trial, about 3 caught events and 1.6 NDR trials), soft knee
163 s (1.35x), bimodal 144 s (1.19x); 850 s in all, 1.41x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from dpgate.search.result import Counts, TrialLog

PROFILE = "sign-off"

DEFAULTS: Dict[str, Any] = {
    "trial_duration": 60.0,
    "probe_duration": 1.0,
    "width": 0.005,
    "signoff_width": 0.01,
    "samples_min": 5,
    "samples_max": 15,
    "long_step": 0.08,
    "max_long_trials": 10,
    "tail_accept": 3,
    "pdr_margin": 0.001,
    "tail_probe_duration": 10.0,
    "event_probe_duration": 2.0,
    "event_near": 0.04,
    "event_margin": 0.005,
    "event_accept": 0.01,
}


def _median(values: List[float]) -> float:
    """Highest x with at least half of ``values`` >= x (the upper median).

    >>> _median([1, 2, 3]), _median([1, 2, 3, 4])
    (2, 3)
    """
    v = sorted(values)
    return v[len(v) // 2]


def _line(points: List[Tuple[float, float]]) -> Optional[Tuple[float, float]]:
    """Least-squares ``y = a + b x``; None unless 2+ distinct x and a rising line."""
    if len({x for x, _ in points}) < 2:
        return None
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return (my - b * mx, b) if b > 0 else None


def _fit_log_rate(points: List[Tuple[float, float]]) -> Optional[Tuple[float, float]]:
    """Fit ``ln(rate) = a + b x load`` to (load, rate > 0) points."""
    return _line([(x, math.log(y)) for x, y in points if y > 0])


def _loss_intercept(fails: List[Tuple[float, float]], use: int = 4) -> Optional[float]:
    """Load where a line through (load, lost frames) of the ``use`` lowest failed full
    trials reaches zero; None unless it rises with load.

    >>> round(_loss_intercept([(900.0, 100.0), (1000.0, 200.0)]))
    800
    """
    fit = _line(sorted(fails)[:use])
    return None if fit is None else -fit[0] / fit[1]


def _event_line(events: List[Tuple[float, float]], double_odds: float = 8.0) -> Optional[Tuple[float, float]]:
    """Per-event fit: (slope, zero) of ``loss = slope x (load - zero)`` through the
    losses of caught events, allowing that a probe caught two events (its loss is then
    twice one event's).

    Every way of halving some of the losses is fitted by least squares; one that rises
    and reaches zero below every event's load is kept, the one with the smallest
    residual, where each halving must cut the residual ``double_odds``-fold (two events
    in one short probe are that much rarer than one). None if no line qualifies. The
    zero returned is that of the lowest-load event along the fitted slope: being
    nearest, its own zero-loss load depends least on the slope's error.

    >>> s, z = _event_line([(1000.0, 500.0), (900.0, 600.0), (800.0, 100.0)])
    >>> round(z), round(s, 3)
    (750, 2.0)
    """
    events = sorted(events, reverse=True)  # the lowest load last
    lowest = events[-1][0]
    best = None
    for mask in range(1 << (len(events) - 1)):  # the lowest event is never halved
        pts = [(x, g / 2 if mask >> i & 1 else g) for i, (x, g) in enumerate(events)]
        fit = _line(pts)
        if fit is None or not 0 < -fit[0] / fit[1] < lowest:
            continue
        a, b = fit
        scale = sum(g for _, g in pts) / len(pts)
        rss = sum((g - a - b * x) ** 2 for x, g in pts) / scale ** 2
        cost = (rss + 1e-9) * double_odds ** bin(mask).count("1")
        if best is None or cost < best[0]:
            x, g = min(pts)
            best = (cost, b, x - g / b)
    return None if best is None else (best[1], best[2])


@dataclass
class _Search:
    log: TrialLog
    min_rate: float
    max_rate: float
    s: Dict[str, Any]
    samples: List[float] = field(default_factory=list)
    #: (load, lost frames per second) of every trial that lost something, any duration
    lossy: List[Tuple[float, float]] = field(default_factory=list)
    #: (load, loss ratio) of short probes
    probes: List[Tuple[float, float]] = field(default_factory=list)
    long_trials: int = 0
    #: loads below this lose by the tail, not by capacity (set in knee mode)
    tail_below: float = float("inf")
    #: a full trial forwarded less than short probes could explain
    duration_dependent: bool = False
    #: lowest load whose full trial lost frames once loss was found to grow with duration
    dd_upper: Optional[float] = None
    #: (ndr_loss, pdr_loss)
    goals: Tuple[float, float] = (0.0, 0.005)

    # -- measuring -------------------------------------------------------------
    def _clip(self, load: float) -> float:
        return min(self.max_rate, max(self.min_rate, load))

    def probe(self, load: float, duration: Optional[float] = None) -> Counts:
        load = self._clip(load)
        d = duration or self.s["probe_duration"]
        c = self.log.measure(load, d)
        self.probes.append((load, c.loss_ratio))
        if c.loss:
            self.lossy.append((load, c.loss / d))
        return c

    def long(self, load: float) -> Counts:
        load = self._clip(load)
        d = self.s["trial_duration"]
        self.long_trials += 1
        c = self.log.measure(load, d)
        if c.loss:
            self.lossy.append((load, c.loss / d))
        return c

    @staticmethod
    def _marginal(c: Counts, loss: float) -> bool:
        """Lost more than ``loss`` allows, but by less than one Poisson standard
        deviation of the allowed count."""
        allowed = loss * max(c.tx, c.intended or 0)
        return allowed > 0 and c.loss <= allowed + math.sqrt(allowed)

    def budget_left(self) -> bool:
        return self.long_trials < self.s["max_long_trials"]

    # -- phase 1: locate -------------------------------------------------------
    def locate(self, ndr_loss: float, pdr_loss: float) -> Tuple[float, float, bool]:
        """Return (ndr_candidate, pdr_candidate, capacity_limited)."""
        d = self.s["probe_duration"]
        first = self.probe(self.max_rate)
        if first.loss_ratio <= ndr_loss:
            return self.max_rate, self.max_rate, True
        if first.loss_ratio > pdr_loss and first.rx > 0:
            self.samples.append(first.rx / d)
        top = self.max_rate if not self.samples else self.samples[0]
        for more in (False, True):
            result = None
            top = self._sample(top, ndr_loss, pdr_loss, more)
            if top is None:
                return self.max_rate, self.max_rate, True
            cap = _median(self.samples) if self.samples else self.max_rate
            # Below the lowest capacity sample a capacity-limited SUT loses nothing.
            # A check that loses anyway may have drawn a low capacity: check lower (at
            # most three times), and take more samples before believing the result.
            low = min(self.samples or [cap])
            for _ in range(3):
                check = self.probe(low * (1 - self.s["width"]))
                if check.loss_ratio <= ndr_loss:
                    # A little under the exact PDR load (``pdr_margin``), so that frame
                    # rounding or a rare stall does not cost a second full trial.
                    pdr_c = cap / (1 - pdr_loss) * (1 - self.s["pdr_margin"])
                    result = cap, min(self.max_rate, pdr_c), True
                    break
                if check.rx > 0:
                    low = min(low, check.rx / d)
            if result is not None and (low >= min(self.samples or [cap]) or more):
                return result
            if result is None:
                break
        self.tail_below = min(self.samples or [cap]) * (1 - self.s["width"])
        return self._locate_knee(ndr_loss, pdr_loss, cap)

    def _sample(self, top: float, ndr_loss: float, pdr_loss: float, more: bool) -> Optional[float]:
        """Overloaded probes until the capacity samples agree (or ``samples_max``, if
        ``more``); return the highest load seen, or None if ``max_rate`` passed."""
        d = self.s["probe_duration"]
        tries = 0
        while len(self.samples) < self.s["samples_max"] and tries < self.s["samples_max"] + 3:
            tries += 1
            if len(self.samples) >= self.s["samples_min"] and not more:
                lo, hi = min(self.samples), max(self.samples)
                if hi <= lo * (1 + self.s["width"]):
                    break
            load = min(self.max_rate, top * 1.25)
            c = self.probe(load)
            if c.loss_ratio > pdr_loss and c.rx > 0:
                self.samples.append(c.rx / d)
                top = max(top, c.rx / d)
            else:
                # It kept up: this trial's capacity was at least ``load`` (a censored
                # sample, counted at its lower bound); overload harder next time.
                self.samples.append(load)
                top = max(top, load)
                if c.loss_ratio <= ndr_loss and load >= self.max_rate:
                    return None
        return top

    def _locate_knee(self, ndr_loss: float, pdr_loss: float, cap: float) -> Tuple[float, float, bool]:
        """Loss below capacity: fit the loss tail with probes that lose measurable counts."""
        d, width = self.s["probe_duration"], self.s["width"]
        # PDR: secant on ln(loss ratio) between the closest probes around pdr_loss.
        pdr = None
        for _ in range(8):
            below = [(x, r) for x, r in self.probes if r <= pdr_loss]
            above = [(x, r) for x, r in self.probes if r > pdr_loss and x < cap * 1.5]
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
            if nxt <= self.min_rate:
                break
            self.probe(nxt)
        if pdr is None:
            below = [x for x, r in self.probes if r <= pdr_loss]
            pdr = max(below) if below else self.min_rate
        # NDR: extend the loss-rate fit down to small counts, then extrapolate to the
        # rate at which a full trial loses ln 2 frames on average.
        target = math.log(2.0) / self.s["trial_duration"]
        for _ in range(4):
            fit = self._fit_tail()
            lowest_x, lowest_r = min(self.probes)
            if fit is None:
                if lowest_r == 0.0:
                    break  # the tail is below what probes can see
                self.probe(lowest_x * (1 - 4 * width))
                continue
            a, b = fit
            small = (math.log(20.0 / d) - a) / b  # where a probe would lose ~20 frames
            lowest = min(x for x, _ in self.lossy)
            if small >= lowest * (1 - width):
                break
            self.probe(max(small, lowest * 0.8))
        fit = self._fit_tail()
        tail_d = self.s["tail_probe_duration"]
        if fit is not None and tail_d > d:
            # One longer probe where it should lose ~10 frames shortens the
            # extrapolation to the full-trial target by the duration ratio.
            a, b = fit
            lowest = min(x for x, _ in self.lossy)
            self.probe(max((math.log(10.0 / tail_d) - a) / b, lowest * 0.8), tail_d)
            fit = self._fit_tail() or fit
        if fit is None:
            ndr = pdr * (1 - 4 * width)
        else:
            a, b = fit
            ndr = (math.log(target) - a) / b
        return min(ndr, pdr), pdr, False

    def _fit_tail(self) -> Optional[Tuple[float, float]]:
        pts = sorted(p for p in self.lossy if p[0] < self.tail_below)[:3]
        return _fit_log_rate(pts)

    # -- phase 2: decide with full-length trials -------------------------------
    def decide(
        self, candidate: float, loss: float, capacity_limited: bool, floor: float
    ) -> Tuple[Optional[float], Optional[float]]:
        """Confirm ``candidate`` for ``loss`` with full trials; return (lower, upper)."""
        T = self.s["trial_duration"]
        candidate = max(self._clip(candidate), floor)
        varies = bool(self.samples) and max(self.samples) > min(self.samples) * (1 + self.s["width"])
        if self.duration_dependent and loss == 0.0:
            # An earlier full trial forwarded less than every short probe at the same
            # overload: loss grows with duration, the short-trial NDR is too high.
            return self._event_search(candidate, floor, self.dd_upper)
        c = self.long(candidate)
        fwd = c.rx / T
        if capacity_limited and not varies and self.samples and fwd < _median(self.samples) * (1 - 1e-6):
            # The full trial forwarded less than the agreeing short samples: per-trial
            # variation the samples missed, or loss that grows with duration. A deficit
            # larger than the samples' agreement (``width``) may be variation they
            # missed: more samples tell them apart. A smaller one they cannot resolve.
            if fwd < _median(self.samples) * (1 - self.s["width"]):
                if self._sample(max(self.samples), self.goals[0], self.goals[1], more=True) is not None:
                    varies = max(self.samples) > min(self.samples) * (1 + self.s["width"])
            if not (varies and fwd >= min(self.samples) * (1 - 1e-9)):
                self.duration_dependent = True
                if c.loss:
                    # This full trial lost frames: it bounds the NDR from above.
                    self.dd_upper = min(self.dd_upper or candidate, candidate)
        if c.loss_ratio <= loss:
            return candidate, None
        if loss > 0.0 and self._marginal(c, loss):
            # Over the goal by less than the count's own Poisson noise: the coin flip
            # expected at the answer, which confirms it (and is its upper bound too).
            return candidate, candidate
        if self.duration_dependent and loss == 0.0:
            return self._event_search(candidate, floor, candidate)
        lowest = min(self.samples) - 0.5 * (max(self.samples) - min(self.samples)) if self.samples else 0.0
        if capacity_limited and varies and fwd >= lowest:
            below = [candidate - x for x in self.samples if x < candidate]
            share = len(below) / len(self.samples) if self.samples else 0.0
            if loss == 0.0 and below and share * (candidate - fwd) / min(below) < 1 / 60:
                # A capacity draw this close under the load is unlikely: few samples
                # lie under it (``share``), none this close. Far more likely a rare
                # event (a stall in a sample made the samples look varied): search it.
                self.duration_dependent = True
                return self._event_search(candidate, floor, candidate)
            # A coin flip at the median of the per-trial capacity: keep it as a sample.
            median = _median(self.samples + [fwd]) / (1.0 - loss)
            return max(floor, min(candidate, median)), candidate
        if loss == 0.0 and not capacity_limited:
            fit = self._fit_tail()
            if fit is not None:
                return self._follow_tail(candidate, c, fit[1], floor)
        return self._step_down(candidate, c, loss, floor)

    def _hunt(self, load: float) -> Tuple[float, int]:
        """Event probes (``event_probe_duration``) at ``load`` until one loses frames or
        they add up to one full trial; return (load, frames lost by that probe or 0).

        A probe much shorter than the time between loss events sees at most one event,
        so its loss is the loss of one event at this load.
        """
        load = self._clip(load)
        d, T = self.s["event_probe_duration"], self.s["trial_duration"]
        spent = 0.0
        while spent < T * (1 - 1e-9):
            c = self.probe(load, min(d, T - spent))
            spent += min(d, T - spent)
            if c.loss:
                return load, c.loss
        return load, 0

    def _event_search(
        self, candidate: float, floor: float, upper: Optional[float]
    ) -> Tuple[Optional[float], Optional[float]]:
        """NDR when loss grows with trial duration: rare loss events (stalls).

        A stall at load L loses ``s x (L - theta)`` frames, what arrives during it
        beyond what the ring absorbs. Event probes catch single stalls down to near
        theta (:meth:`_hunt`, :func:`_event_line`); full trials decide from
        ``theta x (1 - event_margin)`` down. See the module docstring.
        """
        w, step = self.s["width"], self.s["long_step"]
        margin, near = self.s["event_margin"], self.s["event_near"]
        accept = self.s["event_accept"]
        la, ga = self._hunt(candidate * (1 - 2 * w))
        if not ga:
            # No event in a full trial's worth of probing: events are rare, or lose
            # nothing at this load. A full trial there decides.
            c = self.long(la)
            if c.loss == 0:
                return la, upper
            upper = min(upper or la, la)
            for x in (la, la * (1 - step)):  # events do happen: catch one
                x, g = self._hunt(x)
                if g:
                    la, ga = x, g
                    break
            else:  # loss that short probes never see: search with full trials
                return self._step_down(la, c, 0.0, floor)
        events: List[Tuple[float, float]] = [(la, float(ga))]

        def catch(load: float, above: float) -> bool:
            """An event at ``load``, or, if none comes in a full trial's time (theta is
            above ``load``), one between it and ``above``. True if one was caught."""
            for x in (load, math.sqrt(load * above)):
                x, g = self._hunt(x)
                if g:
                    events.append((x, float(g)))
                    return True
            return False

        def locate() -> Tuple[Optional[float], float]:
            """(slope, theta) from the events caught, catching more as needed."""
            fit: Optional[Tuple[float, float]] = None
            for _ in range(6):
                lowest = min(x for x, _ in events)
                fit = _event_line(events) if len(events) > 1 else None
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
                fit = _event_line(events)  # with the last event caught
            if fit is None:
                return None, min(x for x, _ in events) * (1 - step)
            return fit

        slope, theta = locate()
        load = max(theta * (1 - margin), floor)
        fails = 0
        while self.budget_left():
            c = self.long(load)
            if c.loss == 0:
                return load, upper
            upper = min(upper or load, load)
            if slope is not None and c.loss <= slope * load * accept:
                # The coin flip expected at the answer: one event, barely lossy here.
                return load, upper
            fails += 1
            if slope is None and catch(load, load):
                # No line to read the loss with (no events caught lower): events do
                # happen here, so catch one and locate again.
                slope, theta = locate()
                load = max(min(theta * (1 - margin), load * (1 - margin)), floor)
                continue
            nxt = load * (1 - margin * 2 ** (fails - 1))
            if slope is not None:
                own = load - c.loss / slope  # zero-loss load of the event it met, if one
                nxt = min(nxt, max(own * (1 - margin / 2), load * (1 - 4 * margin * fails)))
            if load <= floor:
                break
            load = max(nxt, floor)
        return None, upper

    def _follow_tail(self, hi: float, counts: Counts, slope: float, floor: float) -> Tuple[float, Optional[float]]:
        """Loss tail: step down by the fitted slope until a full trial is consistent.

        At the true NDR a full trial loses Poisson(ln 2) frames: 0 half the time, more
        than ``tail_accept`` rarely. A failure with at most that many frames is such a
        coin flip and confirms the load; more frames mean the load is
        ``ln(lost / ln 2) / slope`` too high.
        """
        load, lost = hi, counts.loss
        upper = hi
        while lost > self.s["tail_accept"] and self.budget_left():
            nxt = max(floor, load - math.log(lost / math.log(2.0)) / slope)
            c = self.long(nxt)
            load, lost = nxt, c.loss
            if lost:
                upper = min(upper, nxt)
        return load, upper

    def _step_down(
        self, hi: float, hi_counts: Optional[Counts], loss: float, floor: float
    ) -> Tuple[Optional[float], Optional[float]]:
        """Loss that short probes did not predict: search with full trials."""
        T = self.s["trial_duration"]
        sw = self.s["signoff_width"]
        # PDR misses are usually marginal: start small there.
        step = self.s["long_step"] if loss == 0.0 else 2 * self.s["width"]
        lo: Optional[float] = None
        passes: List[float] = []
        fails: List[Tuple[float, float]] = []
        if hi_counts is not None and hi_counts.loss:
            fails.append((hi, float(hi_counts.loss)))
        first = True
        fwd = hi_counts.rx / T if hi_counts is not None else hi
        bottom = max(floor, self.min_rate)
        while self.budget_left():
            if lo is not None:
                if hi - lo <= sw * hi:
                    zero = _loss_intercept(fails) if loss == 0.0 else None
                    if loss > 0.0 or (zero is not None and lo <= zero * (1 + sw / 2)):
                        break  # the pass agrees with the loss counts of the failures
                    if self.long(lo).loss_ratio <= loss:
                        break
                    # Passes can be luck here (no stall happened): the answer must
                    # pass twice; a failed confirmation makes it an upper bound and
                    # falls back to the best earlier pass below it.
                    hi = lo
                    passes = [x for x in passes if x < hi]
                    lo = max(passes) if passes else None
                    step = self.s["long_step"] if loss == 0.0 else 2 * self.s["width"]
                    continue
                nxt = math.sqrt(lo * hi)
                zero = _loss_intercept(fails) if loss == 0.0 else None
                if zero is not None and lo < zero < hi:
                    # Regula falsi on loss counts, kept away from the bracket ends.
                    nxt = min(max(zero, lo + 0.2 * (hi - lo)), hi - 0.2 * (hi - lo))
            elif first and loss > 0.0:
                # Forwarded-rate correction: the load at which this trial's forwarding
                # would have met the goal, a little under it.
                nxt = min(fwd / (1.0 - loss), hi) * (1 - self.s["width"] / 2)
            else:
                nxt = hi * (1 - step)
                zero = _loss_intercept(fails) if loss == 0.0 else None
                if zero is not None:
                    # Loss counts of failed full trials grow about linearly with
                    # load above the answer: extrapolate them to zero, just under.
                    nxt = min(max(zero * (1 - sw / 2), hi * (1 - 2 * step)), hi * (1 - sw))
                step *= 2
            first = False
            nxt = max(nxt, bottom)
            c = self.long(nxt)
            if loss > 0.0 and c.loss_ratio > loss and self._marginal(c, loss):
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


def run(
    log: TrialLog, min_rate: float, max_rate: float, ndr_loss: float, pdr_loss: float, s: Dict[str, Any]
) -> Dict[str, Optional[float]]:
    search = _Search(log, min_rate, max_rate, s, goals=(ndr_loss, pdr_loss))
    ndr_c, pdr_c, cap_limited = search.locate(ndr_loss, pdr_loss)
    pdr, pdr_upper = search.decide(pdr_c, pdr_loss, cap_limited, floor=min_rate)
    if pdr is None:  # nothing met the looser goal, so nothing meets the stricter one
        return {"ndr": None, "ndr_upper": pdr_upper, "pdr": None, "pdr_upper": pdr_upper}
    ndr, ndr_upper = search.decide(min(ndr_c, pdr), ndr_loss, cap_limited, floor=min_rate)
    return {"ndr": ndr, "ndr_upper": ndr_upper, "pdr": pdr, "pdr_upper": pdr_upper}
