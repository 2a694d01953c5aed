"""sign-off on the stall family (``dpgate.search.stall_family``): SUTs it was not tuned to.

Four draws the event search before issue 16 got wrong (its error in the comments, from
its code at commit 18de767: it read the NDR off a line through the stalls' losses and
took the first full trial that passed as the answer); three draws the counted search of
commit b5c6d5e got wrong (it reported the first full trial that passed, however far
under the lowest load known to lose; now that gap is bisected with full trials); two it
spent 718 s on (a rare lossy cluster just under capacity sent it stepping down); and
the family's statistics over draws. The draws are seeded: each run is deterministic.
"""

from __future__ import annotations

import math
import statistics

import pytest

from dpgate.search import find_ndr_pdr
from dpgate.search.simulated import MAX_RATE, MIN_RATE
from dpgate.search.stall_family import StallSut, draw_stall_sut, oracle_spread

FLOOR_S = 2 * 60.5


def _run(seed: int):
    sut = draw_stall_sut(seed)
    return sut, sut.truth(0.0, 60.0), find_ndr_pdr(sut.measure, MIN_RATE, MAX_RATE, profile="sign-off")


def _pass_probability(sut: StallSut, load: float) -> float:
    return math.exp(-sut.lossy_clusters(load, 60.0)) if load <= sut.capacity else 0.0


@pytest.mark.parametrize(
    "seed, why",
    [
        # old: +60.5 % (a 60 s pass at 1.6x the answer: P(pass) 0.25 there, one lucky trial)
        (340, "stall lengths +-47 %: the line through the losses says little"),
        # old: -46 % (the line's zero, then full trials stepping down until one passed)
        (233, "load-dependent stall rate: lossy events grow slowly with load"),
        # old: -21.9 % after 1262 s (ten full trials stepping down from a low line zero)
        (151, "clustered stalls just above the goal's rate"),
        # old: +34.4 % (a pass at 1.34x; P(pass) 0.14 there)
        (2, "clustered stalls, lengths +-37 %"),
    ],
)
def test_draws_the_line_search_got_wrong(seed, why):
    sut, truth, r = _run(seed)
    assert truth < sut.capacity  # the stalls set the answer, not the capacity
    # These draws' pass probability falls slowly with load (the counting oracle of
    # 240 s spreads 12-128 % on them): no search places their NDR within a few % of
    # load; what a gate cares about is that one 60 s trial at the reported NDR passes
    # about half the time (the definition), not 0.14-0.25 as before.
    assert oracle_spread(sut) > 10.0
    assert 0.3 <= _pass_probability(sut, r.ndr) <= 0.7, why
    # A full-length trial at the answer passed, or the answer is under one that did.
    full = [(x, res.loss_packets) for x, d, res in r.trials if d == 60.0]
    assert any(x >= r.ndr * (1 - 1e-9) and lost == 0 for x, lost in full), why
    low, high = r.ndr_bracket
    assert high is None or high >= truth  # its upper bound holds
    assert low is None or low <= truth
    assert r.total_time_s <= 6 * FLOOR_S


@pytest.mark.parametrize(
    "seed, why",
    [
        # b5c6d5e: -3.4 % (P(pass) 1.00: one pass 3 % under the truth, 16 % under the lowest lossy load)
        (5061, "clustered stalls, lengths +-5 %: a steep curve, resolvable by 60 s trials"),
        # b5c6d5e: -4.1 % (P(pass) 1.00)
        (5049, "stall lengths +-35 %, a stall every 7 s"),
        # b5c6d5e: -4.1 % (P(pass) 0.97)
        (5037, "a steep curve the first full trial under-shot"),
    ],
)
def test_draws_the_first_pass_got_wrong(seed, why):
    sut, truth, r = _run(seed)
    assert oracle_spread(sut) < 10.0  # 60 s trials can place this NDR within a few %
    assert abs(r.ndr / truth - 1) <= 0.03, why
    assert 0.25 <= _pass_probability(sut, r.ndr) <= 0.75, why
    full = [(x, res.loss_packets) for x, d, res in r.trials if d == 60.0]
    assert (r.ndr, 0) in full, why  # a full trial passed at the answer itself
    assert any(x > r.ndr and lost for x, lost in full), why  # and one over it failed
    low, high = r.ndr_bracket
    assert high is not None and high >= truth and (low is None or low <= truth)


@pytest.mark.parametrize("seed", [5002, 5018])
def test_a_rare_lossy_cluster_at_capacity_is_decided_by_one_more_full_trial(seed):
    # The answer is the capacity (under ln 2 lossy clusters a full trial even there),
    # but the first full trial just under it met one. b5c6d5e read that as loss short
    # probes cannot see and stepped down with full trials: -1.5 % and -3.5 % after
    # 718 s. One lossy full trial in three full trials' time is under the goal's rate.
    sut, truth, r = _run(seed)
    assert truth == sut.capacity
    assert -0.011 <= r.ndr / truth - 1 <= 0.0
    assert r.total_time_s <= 2.5 * FLOOR_S


def test_family_statistics_over_draws():
    errors, passes, times = [], [], []
    for seed in range(1001, 1041):
        sut, truth, r = _run(seed)
        errors.append((r.ndr / truth - 1) * 100)
        passes.append(_pass_probability(sut, r.ndr))
        times.append(r.total_time_s)
    assert abs(statistics.median(errors)) <= 2.0
    # Centred on the definition (P(pass) = 0.5) on the median draw; never an answer
    # that fails nearly always.
    assert 0.4 <= statistics.median(passes) <= 0.75
    assert sorted(passes)[4] >= 0.15  # p10 of 40
    # Thin evidence is bisected with full trials (issue 16): 4.1x the floor on the
    # benchmark's 100 draws, against 3.2x when the first pass was the answer.
    assert statistics.median(times) <= 4.5 * FLOOR_S


def test_the_ndr_bracket_rarely_excludes_the_truth():
    # "Report its own uncertainty (the bracket it is sure of)": b5c6d5e put a single
    # failed full trial in it, which fails up to half the time at the answer and often
    # under it; its bracket excluded the truth on 11 of these 40 draws. 95 % Poisson
    # bounds over all trials: mostly open (not sure), rarely wrong.
    wrong = 0
    for seed in range(1001, 1041):
        sut, truth, r = _run(seed)
        low, high = r.ndr_bracket
        wrong += (low is not None and low > truth * (1 + 1e-9)) or (
            high is not None and high < truth * (1 - 1e-9)
        )
    assert wrong <= 4


def test_family_pdr_within_half_a_percent():
    for seed in (3, 17, 58):
        sut = draw_stall_sut(seed)
        r = find_ndr_pdr(sut.measure, MIN_RATE, MAX_RATE, profile="sign-off")
        assert abs(r.pdr / sut.truth(0.005, 60.0) - 1) <= 0.005


def test_family_draws_are_stall_problems_with_an_answer_in_range():
    for seed in range(1, 30):
        sut = draw_stall_sut(seed)
        truth = sut.truth(0.0, 60.0)
        assert sut.lossy_share(sut.capacity) > 0.0  # some stall loses at capacity
        assert 0.25 * sut.capacity <= truth <= sut.capacity
        assert MIN_RATE < truth and sut.capacity * 1.25 <= MAX_RATE
    assert draw_stall_sut(7).params() == draw_stall_sut(7).params()  # seeded


def test_family_truth_matches_simulation():
    # P(one 60 s trial loses nothing) crosses 1/2 at the analytic NDR.
    sut = draw_stall_sut(233)
    truth = sut.truth(0.0, 60.0)

    def pass_fraction(load: float, n: int = 600) -> float:
        return sum(sut.measure(load, 60.0).loss_packets == 0 for _ in range(n)) / n

    assert pass_fraction(truth * 0.9) > 0.55
    assert pass_fraction(truth * 1.1) < 0.45


@pytest.mark.parametrize("name", ["signoff_events", "signoff_fit", "stall_family"])
def test_doctests_of_the_split_modules(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"dpgate.search.{name}"))
    assert result.attempted > 0 and result.failed == 0
