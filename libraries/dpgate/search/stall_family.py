"""A seeded family of stall SUTs: the sign-off search's yardstick for stalls it was not tuned to.

Real SUTs stall now and then (interrupts, housekeeping, page faults, SMIs, a noisy
neighbour). While a stall lasts ``s`` seconds the receive buffer of ``B`` packets fills
at the offered load ``L``; what does not fit is lost: ``max(0, L x s - B)`` frames
(all ``L x s`` above capacity, where the buffer is already full). :class:`StallSut`
simulates that with every parameter drawn per SUT by :func:`draw_stall_sut`:

* capacity ``C``: log-uniform 0.6-1.2 Mpps;
* stall rate: log-uniform from one per 120 s to one per 5 s (at capacity);
  load-independent, or (half the draws) proportional to the load (stalls caused by
  traffic, e.g. a slow path taken every N packets);
* stall length: ``s0`` uniform 0.1-2 ms, each stall ``s0 x (1 + j x U(-1, 1))`` with
  the jitter ``j`` uniform 0-50 %;
* buffer ``B``: uniform 0-16,384 packets;
* arrivals: Poisson, or (half the draws) Poisson clusters of ``1 + Poisson(m - 1)``
  stalls, ``m`` uniform 1.5-4, at the same mean stall rate. The buffer drains between
  two stalls of a cluster.

Draws that are not a stall problem are drawn again: those in which no stall can lose a
frame at capacity (the buffer absorbs the longest stall: the ``hard`` kind again) and
those in which no load of the search range passes a 60 s trial with probability >= 0.5
(the 60 s NDR under ``MIN_RATE / C``, 0.25 x C, where the answer is "none").

Truth, as for the other kinds (:mod:`dpgate.search.simulated`): the highest load at
which one trial of the given duration meets the loss goal with probability >= 0.5.
Zero loss: a trial passes iff no cluster holds a lossy stall, ``exp(-Lambda(L))`` with
``Lambda`` the expected number of lossy clusters (analytic). PDR: a trial at
``L > C`` loses ``(L - C) d + L x S`` (``S`` its total stall time), so it passes iff
``L <= C d / (d (1 - g) + S)``: the median of ``S`` (Monte Carlo) gives the answer.

    >>> sut = draw_stall_sut(3)
    >>> ndr, pdr = sut.truth(0.0, 60.0), sut.truth(0.005, 60.0)
    >>> 0.25 * sut.capacity <= ndr <= sut.capacity < pdr
    True
"""

from __future__ import annotations

import math
import random
from typing import Any

from dpgate.search.simulated import MAX_RATE, MIN_RATE, SimulatedSut, _bisect, poisson

#: the lowest 60 s NDR a draw may have, relative to its capacity
MIN_NDR_SHARE = 0.25


class StallSut(SimulatedSut):
    """Capacity ``capacity`` pps; stalls lose ``max(0, L x s - buffer)`` frames each."""

    kind = "stall-family"

    def __init__(
        self,
        seed: int = 0,
        capacity: float = 1e6,
        stall_rate: float = 1.0 / 20.0,
        load_dependent: bool = False,
        stall_s: float = 1e-3,
        jitter: float = 0.0,
        buffer_packets: float = 1000.0,
        cluster_mean: float = 1.0,
    ):
        super().__init__(seed)
        self.capacity, self.stall_rate, self.load_dependent = capacity, stall_rate, load_dependent
        self.stall_s, self.jitter, self.buffer = stall_s, jitter, buffer_packets
        self.cluster_mean = cluster_mean

    def params(self) -> dict[str, float]:
        """The drawn parameters (for test names and failure messages)."""
        return {
            "capacity": self.capacity,
            "stall_rate": self.stall_rate,
            "load_dependent": float(self.load_dependent),
            "stall_s": self.stall_s,
            "jitter": self.jitter,
            "buffer_packets": self.buffer,
            "cluster_mean": self.cluster_mean,
        }

    def rate(self, load: float) -> float:
        """Stalls per second at ``load``."""
        if self.load_dependent:
            return self.stall_rate * min(load, self.capacity) / self.capacity
        return self.stall_rate

    def _stalls(self, rng: random.Random, load: float, duration: float) -> list[float]:
        out: list[float] = []
        for _ in range(poisson(rng, self.rate(load) / self.cluster_mean * duration)):
            n = 1 + poisson(rng, self.cluster_mean - 1.0) if self.cluster_mean > 1.0 else 1
            out.extend(self.stall_s * (1.0 + self.jitter * rng.uniform(-1.0, 1.0)) for _ in range(n))
        return out

    def _loss(self, load: float, duration: float, stalls: list[float]) -> float:
        over = max(0.0, load - self.capacity) * duration
        headroom = 0.0 if load > self.capacity else self.buffer
        return over + sum(max(0.0, load * s - headroom) for s in stalls)

    def forwarded(self, load: float, duration: float, intended: int) -> int:
        return intended - round(self._loss(load, duration, self._stalls(self.rng, load, duration)))

    def lossy_share(self, load: float) -> float:
        """Probability that one stall loses a frame at ``load`` (<= capacity)."""
        need = self.buffer + 0.5  # a loss under half a frame rounds to none
        if load <= 0.0:
            return 0.0
        if self.jitter == 0.0:
            return 1.0 if load * self.stall_s > need else 0.0
        x = (need / (load * self.stall_s) - 1.0) / self.jitter  # lossy iff U(-1, 1) > x
        return min(1.0, max(0.0, (1.0 - x) / 2.0))

    def lossy_clusters(self, load: float, duration: float) -> float:
        """Expected number of clusters holding a lossy stall in one trial (``Lambda``)."""
        p = self.lossy_share(load)
        m = self.cluster_mean
        q = 1.0 - (1.0 - p) * math.exp(-(m - 1.0) * p) if m > 1.0 else p
        return self.rate(load) / m * duration * q

    def truth(self, loss_ratio: float, duration: float, samples: int = 4000) -> float:
        if loss_ratio == 0.0:

            def ok(load: float) -> bool:
                return load <= self.capacity and self.lossy_clusters(load, duration) <= math.log(2.0)

            return _bisect(ok, MIN_RATE, self.capacity, rel=1e-7)
        rng = random.Random(12345)
        load = self.capacity / (1.0 - loss_ratio)
        for _ in range(3):  # the stall rate may depend on the load: iterate
            totals = sorted(sum(self._stalls(rng, load, duration)) for _ in range(samples))
            median = totals[(samples - 1) // 2]
            load = self.capacity * duration / (duration * (1.0 - loss_ratio) + median)
        return load


def oracle_spread(sut: StallSut, exposure_s: float = 240.0, goal_s: float = 60.0) -> float:
    """p10-p90 spread (percentage points of the NDR) of an oracle that knows ``sut``'s
    curve of lossy events against load up to its scale and counts them for
    ``exposure_s`` at the truth: ``n`` ~ Poisson, scale ``(n + 0.5) / mean``, answer
    where the scaled curve crosses ``ln 2`` per ``goal_s`` trial (exact over ``n``).

    No search without a model of the curve beats it with that much time: a draw whose
    spread exceeds 3 % has an NDR that 60 s trials cannot place within +-1.5 %.

    >>> round(oracle_spread(draw_stall_sut(5061)), 1), round(oracle_spread(draw_stall_sut(3)), 1)
    (1.6, 14.8)
    """
    truth = sut.truth(0.0, goal_s)
    mean = sut.lossy_clusters(truth, goal_s) * exposure_s / goal_s

    def answer(k: float) -> float:
        lo, hi = MIN_RATE, sut.capacity
        if k * sut.lossy_clusters(hi, goal_s) <= math.log(2.0):
            return hi
        for _ in range(50):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if k * sut.lossy_clusters(mid, goal_s) <= math.log(2.0) else (lo, mid)
        return lo

    cdf, n, pn = 0.0, 0, math.exp(-mean)
    p10 = p90 = None
    while p90 is None:  # answers fall as n grows: the 90th percentile of n is the p10 answer
        cdf += pn
        if p10 is None and cdf >= 0.1:
            p10 = answer((n + 0.5) / mean)
        if cdf >= 0.9 or n > 10_000:
            p90 = answer((n + 0.5) / mean)
        n += 1
        pn *= mean / n
    assert p10 is not None
    return (p10 - p90) / truth * 100


def resolvable(sut: StallSut, target: float = 3.0) -> bool:
    """True if 240 s of counting can place this draw's NDR within ``target`` p10-p90."""
    return oracle_spread(sut) <= target


def draw_stall_sut(seed: int) -> StallSut:
    """The stall SUT of draw ``seed`` (its parameters and its random stream)."""
    rng = random.Random(f"stall-family/{seed}")
    while True:
        params: dict[str, Any] = {
            "capacity": math.exp(rng.uniform(math.log(0.6e6), math.log(1.2e6))),
            "stall_rate": math.exp(rng.uniform(math.log(1 / 120), math.log(1 / 5))),
            "load_dependent": rng.random() < 0.5,
            "stall_s": rng.uniform(0.1e-3, 2e-3),
            "jitter": rng.uniform(0.0, 0.5),
            "buffer_packets": rng.uniform(0.0, 16384.0),
            "cluster_mean": rng.uniform(1.5, 4.0) if rng.random() < 0.5 else 1.0,
        }
        sut = StallSut(seed=seed, **params)
        if sut.lossy_share(sut.capacity) == 0.0:
            continue  # the buffer absorbs every stall: hard capacity
        if sut.truth(0.0, 60.0) < max(MIN_NDR_SHARE * sut.capacity, MIN_RATE * 1.01):
            continue  # nothing in the search range passes
        return sut


assert MAX_RATE >= 1.25 * 1.2e6  # overload probes above the highest capacity stay in range
