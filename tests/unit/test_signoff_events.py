"""sign-off's event search: NDR of SUTs whose loss grows with trial duration (rare stalls).

Fakes at the measure() boundary: ``ScriptedStalls`` (stalls at fixed times of a running
trial clock, so every result is deterministic) and ``LongOnlyLoss`` (loss that short
probes never see). The random stall model of ``dpgate.search.simulated`` is used for the
statistical checks.
"""

from __future__ import annotations

import statistics

import pytest

from dpgate.model.trial import TrialResult
from dpgate.search import find_ndr_pdr
from dpgate.search.result import Counts
from dpgate.search.signoff import DEFAULTS, _event_line, _line, _Search
from dpgate.search.simulated import MAX_RATE, MIN_RATE, make_sut, truths

FLOOR_S = 2 * 60.5  # one 60 s trial (plus 0.5 s overhead) per bound


class ScriptedStalls:
    """Capacity 1 Mpps; a stall every ``period`` s of trial time (a running clock over
    all trials), losing ``stall_s x load - ring`` frames below capacity. With
    ``double_first`` the first event probe that meets a stall meets two."""

    def __init__(self, period=20.0, stall_s=2.5e-3, ring=2000.0, double_first=False):
        self.clock = 0.0
        self.period, self.stall_s, self.ring = period, stall_s, ring
        self.double_first, self.doubled = double_first, False

    @property
    def theta(self) -> float:
        return self.ring / self.stall_s  # zero-loss load of every stall

    def measure(self, load, duration):
        start, self.clock = self.clock, self.clock + duration
        stalls = int(self.clock // self.period) - int(start // self.period)
        if stalls and duration < 10 and load < 1e6 and self.double_first and not self.doubled:
            stalls, self.doubled = 2, True
        per_stall = load * self.stall_s if load > 1e6 else max(0.0, load * self.stall_s - self.ring)
        loss = max(0.0, load - 1e6) * duration + stalls * per_stall
        intended = round(load * duration)
        rx = intended - round(loss)
        return TrialResult.from_counts(load, duration, tx_packets=intended, rx_packets=rx)


class LongOnlyLoss:
    """Capacity 1 Mpps; above 800 kpps trials of 30 s or more lose frames, shorter ones
    never do (e.g. a slow leak): event probes cannot see it."""

    def measure(self, load, duration):
        loss = max(0.0, load - 1e6) * duration
        if duration >= 30 and load > 800e3:
            loss += max(1.0, (load - 800e3) * duration * 1e-3)
        intended = round(load * duration)
        rx = intended - round(loss)
        return TrialResult.from_counts(load, duration, tx_packets=intended, rx_packets=rx)


def _full(r):
    return [(load, res) for load, d, res in r.trials if d == DEFAULTS["trial_duration"]]


def _event_loads(r):
    return {load for load, d, _ in r.trials if d == DEFAULTS["event_probe_duration"]}


# -- the per-event line ------------------------------------------------------------------


def test_event_line_recovers_an_exact_line():
    events = [(x, 2.5e-3 * (x - 800e3)) for x in (990e3, 910e3, 830e3)]
    slope, zero = _event_line(events)
    assert slope == pytest.approx(2.5e-3)
    assert zero == pytest.approx(800e3)


def test_event_line_halves_a_probe_that_caught_two_events():
    one = [(x, 2.5e-3 * (x - 800e3)) for x in (990e3, 910e3, 830e3)]
    doubled = [(one[0][0], 2 * one[0][1])] + one[1:]  # the far probe met two stalls
    slope, zero = _event_line(doubled)
    assert zero == pytest.approx(800e3, rel=1e-3)
    assert slope == pytest.approx(2.5e-3, rel=1e-3)
    # Taken at face value the same losses would put theta some 4 % higher.
    a, b = _line(doubled)
    assert -a / b > 830e3


def test_event_line_does_not_halve_for_ordinary_spread():
    # Each event has its own zero-loss load (stall lengths differ by ~1 %): no halving.
    own_zero = {990e3: 795e3, 910e3: 805e3, 830e3: 798e3}
    events = [(x, 2.5e-3 * (x - z)) for x, z in own_zero.items()]
    slope, zero = _event_line(events)
    assert 0.8 * 2.5e-3 < slope < 1.25 * 2.5e-3
    assert abs(zero / 800e3 - 1) < 0.02


def test_event_line_needs_loss_rising_with_load():
    # Loss falling with load is no stall line, whatever losses are halved.
    assert _event_line([(990e3, 100.0), (900e3, 500.0), (800e3, 900.0)]) is None
    # Two equal losses make no line either: the lowest event is never halved (the
    # search catches one more, lower, instead).
    assert _event_line([(990e3, 500.0), (900e3, 500.0)]) is None
    _slope, zero = _event_line([(990e3, 500.0), (900e3, 500.0), (850e3, 125.0)])
    assert zero == pytest.approx(800e3, rel=0.01)  # with a third, the 900 kpps one was two


# -- event probes and the decisions on full trials --------------------------------------


def test_marginal_pdr_failure_is_within_one_poisson_sd():
    allowed = 0.005 * 60_000_000  # 300000 frames, sd ~548
    assert _Search._marginal(Counts(60_000_000, 60_000_000 - int(allowed + 500), 60_000_000), 0.005)
    assert not _Search._marginal(Counts(60_000_000, 60_000_000 - int(allowed + 600), 60_000_000), 0.005)


def test_scripted_stalls_need_one_full_trial_per_bound():
    sut = ScriptedStalls()
    r = find_ndr_pdr(sut.measure, MIN_RATE, MAX_RATE, profile="sign-off")
    # Every 60 s trial meets three stalls: the 60 s NDR is exactly their zero-loss load.
    assert sut.theta * (1 - 2 * DEFAULTS["event_margin"]) <= r.ndr <= sut.theta
    assert len(_full(r)) == 2  # the PDR trial and one NDR trial that passes
    assert _full(r)[-1][0] == r.ndr and _full(r)[-1][1].loss_packets == 0
    # The line was measured with event probes at three loads, far apart and near theta.
    loads = sorted(_event_loads(r))
    assert len(loads) == 3 and loads[0] < sut.theta * 1.1 and loads[-1] > 0.95e6
    assert r.ndr_upper is not None and r.ndr_upper > r.ndr
    assert r.total_time_s < 1.7 * FLOOR_S


def test_a_probe_meeting_two_stalls_does_not_mislead_the_search():
    sut = ScriptedStalls(double_first=True)
    r = find_ndr_pdr(sut.measure, MIN_RATE, MAX_RATE, profile="sign-off")
    assert sut.doubled
    assert sut.theta * (1 - 2 * DEFAULTS["event_margin"]) <= r.ndr <= sut.theta
    assert len(_full(r)) == 2


def test_loss_short_probes_never_see_falls_back_to_full_trials():
    r = find_ndr_pdr(LongOnlyLoss().measure, MIN_RATE, MAX_RATE, profile="sign-off")
    assert 0.97 * 800e3 <= r.ndr <= 800e3  # every load above 800 kpps fails at 60 s
    assert r.ndr in [load for load, res in _full(r) if res.loss_packets == 0]
    assert len(_full(r)) <= DEFAULTS["max_long_trials"]


# -- the random stall model: accuracy and cost over seeds --------------------------------


def test_random_stalls_accuracy_and_cost_over_seeds():
    ndr60, pdr60 = truths("stalls")
    errors, full, times = [], [], []
    for seed in range(7101, 7131):
        r = find_ndr_pdr(make_sut("stalls", seed=seed).measure, MIN_RATE, MAX_RATE, profile="sign-off")
        errors.append((r.ndr / ndr60 - 1) * 100)
        full.append(len(_full(r)))
        times.append(r.total_time_s)
        assert abs(r.pdr / pdr60 - 1) <= 0.005
        assert r.ndr in [load for load, _ in _full(r)]  # a full-length trial confirmed it
    errors.sort()
    assert abs(statistics.median(errors)) <= 1.0
    assert errors[3] >= -3.0 and errors[-4] <= 2.0  # p10 and p90 of 30
    assert all(e <= 8.0 for e in errors)  # never near the 1 s answer (+28 %)
    # The PDR trial plus, on average, under two NDR trials; the old full-trial
    # step-down search needed about eight in all.
    assert statistics.mean(full) <= 3.0
    assert statistics.mean(times) <= 2.5 * FLOOR_S


def test_event_probe_duration_override_is_used():
    sut = ScriptedStalls()
    r = find_ndr_pdr(sut.measure, MIN_RATE, MAX_RATE, profile="sign-off", event_probe_duration=4.0)
    assert 4.0 in {d for _, d, _ in r.trials}
    assert sut.theta * 0.98 <= r.ndr <= sut.theta
