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

    >>> from dpgate.search import find_ndr_pdr
    >>> from dpgate.search.simulated import make_sut
    >>> r = find_ndr_pdr(make_sut("hard", seed=3).measure, 1e5, 1.5e6, profile="sign-off")
    >>> r.ndr, r.ndr_bracket, r.trial_count
    (1000000.0, (1000000.0, None), 8)

``ndr_bracket``/``pdr_bracket`` are ``(low, high)``, the search's own uncertainty.
Where loss grows with trial duration (rare events: a pass or a failure is a coin
flip, not a bound), they are 95 % Poisson bounds over every trial of the search
(:func:`~dpgate.search.signoff_events.sure`): ``low`` the highest load whose lossy
exposures, pooled with those over it, stay under the goal's rate; ``high`` the lowest
whose exposures pooled with those under it exceed it; either is ``None`` where the
evidence does not set it, which on the stall family of ``benchmarks/search.py`` is
most of the time: minutes of trials rarely make one side sure, and the bracket says
so. Elsewhere they are the answer and the lowest load whose full trial failed.

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

3. *Event search* (:mod:`dpgate.search.signoff_events`): NDR when loss comes from
   rare events (stalls). A stall at load L loses what arrives during it beyond what
   the buffer absorbs: nothing under its own zero-loss load ``theta``, then linear in
   load. Stalls differ in length (so in ``theta``), may come in clusters, their rate
   may grow with load: a full trial passes if it meets no lossy event, and the NDR is
   where lossy events come ``ln 2`` per full trial. Short *event probes*
   (``event_probe_duration``, 2 s) at one load until one loses frames (*catching* an
   event) or a full trial's time passes:

   * events are caught just under ``C``, one ``long_step`` lower, then near the zero of
     a per-event line through their losses (:func:`~dpgate.search.signoff_fit.
     event_line`; a probe may have met two stalls; at most six catches);
   * *step-like* events (each one's own zero within ``event_spread`` of the line's):
     lossy events come at their full rate over ``theta`` and not under it. Their rate
     is counted on every probe and trial over ``theta`` (up to two more full trials
     while it is within 2x of the goal); under ``ln 2`` per full trial, the answer is
     just under ``C``. Else full trials decide from ``theta x (1 - event_margin)``
     down: a pass, or a failure whose loss over the slope puts its event within
     ``event_accept`` under the load (the coin flip expected there), is the answer;
     else the next trial goes under that event's own zero;
   * otherwise the events are *counted*: every probe and full trial of the search is
     an exposure, lossy or clean. Per load, lossy exposures per full trial's time
     (median-unbiased, ``(n + ln 2) / trials``), made non-decreasing in load
     (pooled where they are not), estimate the rate; the answer is where it crosses
     ``ln 2``, log-log between the loads around it. Nothing about the shape of the
     rate against load is assumed beyond that. While every load is over the goal,
     full trials go under the line's zero (then by the counts); then to the answer
     until a full trial ran there and the counts around it are decisive (over it at
     least 3x the goal, or 3 full trials' time under it), or ``event_budget`` full
     trials' time is spent: the NDR is then the highest load a full trial passed
     under the answer (one is run if none did). A pass more than ``event_refine``
     under the nearest load known to lose too often (a failed full trial, or the
     counts' 90 % lower bound over the goal) is thin evidence: the gap is bisected
     with up to ``event_refine_trials`` more full trials rather than reported;
   * no event caught in a full trial's time of probes just under ``C``, and the full
     trial there lost: one more full trial there; if it passes, lossy events come
     about ``(1 + ln 2) / 3`` per full trial, under the goal's rate, and that load is
     the answer. If it fails too, events are caught lower (as above); if none is,
     loss short probes cannot see: full trials alone (steps of ``long_step``,
     regula falsi on the failures' loss counts, a second pass required unless those
     counts agree).

   At most ``max_long_trials`` full-length trials are spent (NDR and PDR together).

Parameters (overrides) and defaults: ``trial_duration`` 60, ``probe_duration`` 1,
``width`` 0.005 (probe resolution, relative), ``signoff_width`` 0.01 (full-trial
bracket of the full-trial-only search), ``samples_min`` 5, ``samples_max`` 15,
``long_step`` 0.08, ``max_long_trials`` 10, ``tail_accept`` 3,
``tail_probe_duration`` 10, ``pdr_margin`` 0.001, ``event_probe_duration`` 2,
``event_near`` 0.04, ``event_margin`` 0.005, ``event_accept`` 0.01, ``event_spread``
0.03, ``event_budget`` 3 (full trials' time of the counted event search),
``event_refine`` 0.03, ``event_refine_trials`` 2.

``ndr_upper``/``pdr_upper`` are the lowest loads whose full-length trial failed
(``None`` if none did; equal to the answer when its trial failed by the coin flip that
confirms it). Measured on the simulated SUTs of ``benchmarks/search.py`` (100 seeds
each, simulated time with 0.5 s per trial, against one 60 s trial per bound = 121 s):
hard capacity 130 s (1.07x), per-trial noise 149 s (1.23x), rare stalls 277 s (2.29x),
soft knee 163 s (1.35x), bimodal 144 s (1.19x); 863 s in all, 1.43x. On the stall
family (:mod:`dpgate.search.stall_family`) the median search takes 3.8x and the NDR
error spreads over tens of percent: on most draws the pass probability falls so
slowly with load that counting events for minutes cannot place it closer (see the
benchmark's oracle lines); on the draws where 60 s trials can place it
(:func:`~dpgate.search.stall_family.resolvable`) the NDR spread is 2.4 % at 2.2x.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from dpgate.search.result import Counts, TrialLog
from dpgate.search.signoff_events import event_search, sure
from dpgate.search.signoff_fit import event_line as _event_line
from dpgate.search.signoff_fit import fit_log_rate as _fit_log_rate
from dpgate.search.signoff_fit import line as _line
from dpgate.search.signoff_fit import median as _median
from dpgate.search.signoff_full import follow_tail, step_down
from dpgate.search.signoff_knee import locate_knee
from dpgate.search.signoff_settings import DEFAULTS, SignOffSettings

__all__ = ["DEFAULTS", "PROFILE", "SETTINGS", "SignOffSettings", "_Search", "_event_line", "_line", "run"]

PROFILE = "sign-off"

SETTINGS = SignOffSettings


@dataclass
class _Search:
    log: TrialLog
    min_rate: float
    max_rate: float
    s: SignOffSettings
    samples: list[float] = field(default_factory=list)
    #: (load, lost frames per second) of every trial that lost something, any duration
    lossy: list[tuple[float, float]] = field(default_factory=list)
    #: (load, loss ratio) of short probes
    probes: list[tuple[float, float]] = field(default_factory=list)
    long_trials: int = 0
    #: loads below this lose by the tail, not by capacity (set in knee mode)
    tail_below: float = float("inf")
    #: a full trial forwarded less than short probes could explain
    duration_dependent: bool = False
    #: lowest load whose full trial lost frames once loss was found to grow with duration
    dd_upper: float | None = None
    #: (ndr_loss, pdr_loss)
    goals: tuple[float, float] = (0.0, 0.005)
    #: (low, high) the event search is sure of, when it ran
    bracket: tuple[float | None, float | None] | None = None

    # -- measuring -------------------------------------------------------------
    def _clip(self, load: float) -> float:
        return min(self.max_rate, max(self.min_rate, load))

    def probe(self, load: float, duration: float | None = None) -> Counts:
        load = self._clip(load)
        d = duration or self.s.probe_duration
        c = self.log.measure(load, d)
        self.probes.append((load, c.loss_ratio))
        if c.loss:
            self.lossy.append((load, c.loss / d))
        return c

    def long(self, load: float) -> Counts:
        load = self._clip(load)
        d = self.s.trial_duration
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
        return self.long_trials < self.s.max_long_trials

    # -- phase 1: locate -------------------------------------------------------
    def locate(self, ndr_loss: float, pdr_loss: float) -> tuple[float, float, bool]:
        """Return (ndr_candidate, pdr_candidate, capacity_limited)."""
        d = self.s.probe_duration
        first = self.probe(self.max_rate)
        if first.loss_ratio <= ndr_loss:
            return self.max_rate, self.max_rate, True
        if first.loss_ratio > pdr_loss and first.rx > 0:
            self.samples.append(first.rx / d)
        top = self.max_rate if not self.samples else self.samples[0]
        for more in (False, True):
            result = None
            seen = self._sample(top, ndr_loss, pdr_loss, more)
            if seen is None:
                return self.max_rate, self.max_rate, True
            top = seen
            cap = _median(self.samples) if self.samples else self.max_rate
            # Below the lowest capacity sample a capacity-limited SUT loses nothing.
            # A check that loses anyway may have drawn a low capacity: check lower (at
            # most three times), and take more samples before believing the result.
            low = min(self.samples or [cap])
            for _ in range(3):
                check = self.probe(low * (1 - self.s.width))
                if check.loss_ratio <= ndr_loss:
                    # A little under the exact PDR load (``pdr_margin``), so that frame
                    # rounding or a rare stall does not cost a second full trial.
                    pdr_c = cap / (1 - pdr_loss) * (1 - self.s.pdr_margin)
                    result = cap, min(self.max_rate, pdr_c), True
                    break
                if check.rx > 0:
                    low = min(low, check.rx / d)
            if result is not None and (low >= min(self.samples or [cap]) or more):
                return result
            if result is None:
                break
        self.tail_below = min(self.samples or [cap]) * (1 - self.s.width)
        return locate_knee(self, ndr_loss, pdr_loss, cap)

    def _sample(self, top: float, ndr_loss: float, pdr_loss: float, more: bool) -> float | None:
        """Overloaded probes until the capacity samples agree (or ``samples_max``, if
        ``more``); return the highest load seen, or None if ``max_rate`` passed."""
        d = self.s.probe_duration
        tries = 0
        while len(self.samples) < self.s.samples_max and tries < self.s.samples_max + 3:
            tries += 1
            if len(self.samples) >= self.s.samples_min and not more:
                lo, hi = min(self.samples), max(self.samples)
                if hi <= lo * (1 + self.s.width):
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

    def _fit_tail(self) -> tuple[float, float] | None:
        pts = sorted(p for p in self.lossy if p[0] < self.tail_below)[:3]
        return _fit_log_rate(pts)

    # -- phase 2: decide with full-length trials -------------------------------
    def decide(
        self, candidate: float, loss: float, capacity_limited: bool, floor: float
    ) -> tuple[float | None, float | None]:
        """Confirm ``candidate`` for ``loss`` with full trials; return (lower, upper)."""
        T = self.s.trial_duration
        candidate = max(self._clip(candidate), floor)
        varies = bool(self.samples) and max(self.samples) > min(self.samples) * (1 + self.s.width)
        if self.duration_dependent and loss == 0.0:
            # An earlier full trial forwarded less than every short probe at the same
            # overload: loss grows with duration, the short-trial NDR is too high.
            return event_search(self, candidate, floor, self.dd_upper)
        c = self.long(candidate)
        fwd = c.rx / T
        if capacity_limited and not varies and self.samples and fwd < _median(self.samples) * (1 - 1e-6):
            # The full trial forwarded less than the agreeing short samples: per-trial
            # variation the samples missed, or loss that grows with duration. A deficit
            # larger than the samples' agreement (``width``) may be variation they
            # missed: more samples tell them apart. A smaller one they cannot resolve.
            if fwd < _median(self.samples) * (1 - self.s.width) and (
                self._sample(max(self.samples), self.goals[0], self.goals[1], more=True) is not None
            ):
                varies = max(self.samples) > min(self.samples) * (1 + self.s.width)
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
            return event_search(self, candidate, floor, candidate)
        lowest = min(self.samples) - 0.5 * (max(self.samples) - min(self.samples)) if self.samples else 0.0
        if capacity_limited and varies and fwd >= lowest:
            below = [candidate - x for x in self.samples if x < candidate]
            share = len(below) / len(self.samples) if self.samples else 0.0
            if loss == 0.0 and below and share * (candidate - fwd) / min(below) < 1 / 60:
                # A capacity draw this close under the load is unlikely: few samples
                # lie under it (``share``), none this close. Far more likely a rare
                # event (a stall in a sample made the samples look varied): search it.
                self.duration_dependent = True
                return event_search(self, candidate, floor, candidate)
            # A coin flip at the median of the per-trial capacity: keep it as a sample.
            median = _median(self.samples + [fwd]) / (1.0 - loss)
            return max(floor, min(candidate, median)), candidate
        if loss == 0.0 and not capacity_limited:
            fit = self._fit_tail()
            if fit is not None:
                return follow_tail(self, candidate, c, fit[1], floor)
        return step_down(self, candidate, c, loss, floor)


def run(
    log: TrialLog, min_rate: float, max_rate: float, ndr_loss: float, pdr_loss: float, s: SignOffSettings
) -> dict[str, Any]:
    search = _Search(log, min_rate, max_rate, s, goals=(ndr_loss, pdr_loss))
    ndr_c, pdr_c, cap_limited = search.locate(ndr_loss, pdr_loss)
    pdr, pdr_upper = search.decide(pdr_c, pdr_loss, cap_limited, floor=min_rate)
    pdr_bracket = (pdr, pdr_upper)
    if pdr is None:  # nothing met the looser goal, so nothing meets the stricter one
        return {
            "ndr": None,
            "ndr_upper": pdr_upper,
            "pdr": None,
            "pdr_upper": pdr_upper,
            "ndr_bracket": (None, pdr_upper),
            "pdr_bracket": pdr_bracket,
        }
    ndr, ndr_upper = search.decide(min(ndr_c, pdr), ndr_loss, cap_limited, floor=min_rate)
    if search.duration_dependent:
        # Loss grows with duration: a pass or a failure is a coin flip, not a bound.
        search.bracket = sure(search, 0, min_rate)
    ndr_bracket = search.bracket or (ndr, ndr_upper)
    return {
        "ndr": ndr,
        "ndr_upper": ndr_upper,
        "pdr": pdr,
        "pdr_upper": pdr_upper,
        "ndr_bracket": ndr_bracket,
        "pdr_bracket": pdr_bracket,
    }
