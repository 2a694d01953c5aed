"""Simulated SUTs: ``measure(load_pps, duration_s) -> TrialResult`` with a seeded RNG.

Used by unit tests and ``benchmarks/search.py``. Each model states its *truth* for a
trial duration ``d``: the highest load at which **one trial of length d** meets the
loss goal with probability >= 0.5 (:meth:`truth`), computed analytically or, where
no closed form exists, by dense Monte Carlo with common random numbers.

Kinds (all nominal capacity 1 Mpps):

``hard``     forwards exactly ``min(load, C)``.
``noise``    per-trial capacity ``C x (1 + 1 % x N(0,1))`` (e.g. cache/placement luck).
``stalls``   capacity C plus rare stalls (Poisson, one per 20 s) of ~2.5 ms (+-1 %)
             absorbed by a 2000-packet buffer below ``Q / stall`` pps: a 1 s trial
             rarely sees one, a 60 s trial usually does, so loss grows with trial
             duration and the 60 s NDR sits ~28 % below capacity.
``knee``     soft knee: capacity C and, below it, Poisson loss with mean ratio
             ``0.005 x exp((load - C) / (0.015 C))``: the loss rate falls smoothly
             with load, so the 60 s NDR is ~6 % below the 1 s one.
``bimodal``  each trial runs in a fast (C, p = 0.7) or slow (0.9 C) mode.

    >>> sut = make_sut("hard", seed=1)
    >>> r = sut.measure(1_200_000, 1.0)
    >>> r.intended_packets, r.rx_packets
    (1200000, 1000000)
    >>> sut.truth(0.0, 60.0)
    1000000.0
"""

from __future__ import annotations

import math
import random
from typing import Callable

from dpgate.model.trial import TrialResult

CAPACITY = 1_000_000.0
MIN_RATE = 100_000.0
MAX_RATE = 1_500_000.0


def poisson(rng: random.Random, mu: float) -> int:
    """Poisson sample (exact for small means, normal approximation for large)."""
    if mu <= 0:
        return 0
    if mu < 30:
        limit, k, p = math.exp(-mu), 0, rng.random()
        while p > limit:
            k += 1
            p *= rng.random()
        return k
    return max(0, round(rng.gauss(mu, math.sqrt(mu))))


def _bisect(ok: Callable[[float], bool], lo: float, hi: float, rel: float = 1e-6) -> float:
    """Highest x in [lo, hi] with ok(x), for ok monotone (True then False)."""
    if ok(hi):
        return hi
    if not ok(lo):
        return lo
    while hi - lo > rel * hi:
        mid = (lo + hi) / 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


class SimulatedSut:
    """Base: subclasses implement :meth:`forwarded` and :meth:`truth`."""

    kind = "base"

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rng = random.Random(seed)

    def forwarded(self, load: float, duration: float, intended: int) -> int:
        raise NotImplementedError

    def measure(self, load_pps: float, duration_s: float) -> TrialResult:
        intended = round(load_pps * duration_s)
        rx = max(0, min(intended, self.forwarded(load_pps, duration_s, intended)))
        return TrialResult.from_counts(load_pps, duration_s, tx_packets=intended, rx_packets=rx)

    def truth(self, loss_ratio: float, duration: float) -> float:
        raise NotImplementedError


class HardCapacity(SimulatedSut):
    kind = "hard"

    def __init__(self, seed: int = 0, capacity: float = CAPACITY):
        super().__init__(seed)
        self.capacity = capacity

    def forwarded(self, load: float, duration: float, intended: int) -> int:
        return int(self.capacity * duration)

    def truth(self, loss_ratio: float, duration: float) -> float:
        return self.capacity / (1.0 - loss_ratio)


class NoisyCapacity(HardCapacity):
    kind = "noise"

    def __init__(self, seed: int = 0, capacity: float = CAPACITY, sigma: float = 0.01):
        super().__init__(seed, capacity)
        self.sigma = sigma

    def forwarded(self, load: float, duration: float, intended: int) -> int:
        return int(self.capacity * (1.0 + self.sigma * self.rng.gauss(0.0, 1.0)) * duration)

    # truth: the median per-trial capacity is C, so HardCapacity.truth holds.


class Bimodal(HardCapacity):
    kind = "bimodal"

    def __init__(self, seed: int = 0, capacity: float = CAPACITY, slow: float = 0.9, p_fast: float = 0.7):
        super().__init__(seed, capacity)
        self.slow, self.p_fast = slow, p_fast

    def forwarded(self, load: float, duration: float, intended: int) -> int:
        fast = self.rng.random() < self.p_fast
        return int(self.capacity * (1.0 if fast else self.slow) * duration)

    def truth(self, loss_ratio: float, duration: float) -> float:
        cap = self.capacity if self.p_fast >= 0.5 else self.capacity * self.slow
        return cap / (1.0 - loss_ratio)


class SoftKnee(SimulatedSut):
    kind = "knee"

    def __init__(self, seed: int = 0, capacity: float = CAPACITY, scale: float = 0.015):
        super().__init__(seed)
        self.capacity, self.scale = capacity, scale

    def mean_loss_ratio(self, load: float) -> float:
        """Loss tail below capacity: 0.5 % at C, falling by e every ``scale x C`` below."""
        return 0.005 * math.exp((min(load, self.capacity) - self.capacity) / (self.scale * self.capacity))

    def forwarded(self, load: float, duration: float, intended: int) -> int:
        lost = poisson(self.rng, intended * self.mean_loss_ratio(load))
        return min(intended - min(intended, lost), int(self.capacity * duration))

    def truth(self, loss_ratio: float, duration: float) -> float:
        def ok(load: float) -> bool:
            if load > self.capacity / (1.0 - loss_ratio):
                return False
            mu = load * duration * self.mean_loss_ratio(load)
            if loss_ratio == 0.0:
                return math.exp(-mu) >= 0.5
            # Above capacity the excess is lost too; Poisson median ~ mu + 1/3.
            excess = max(0.0, load - self.capacity) * duration
            return mu + excess + 1.0 / 3.0 <= math.floor(loss_ratio * load * duration) + 0.5

        return _bisect(ok, MIN_RATE, MAX_RATE)


class RareStalls(SimulatedSut):
    kind = "stalls"

    def __init__(
        self,
        seed: int = 0,
        capacity: float = CAPACITY,
        stall_rate: float = 1.0 / 20.0,
        stall_s: float = 2.541e-3,
        stall_sigma: float = 0.01,
        buffer_packets: int = 2000,
    ):
        super().__init__(seed)
        self.capacity, self.stall_rate = capacity, stall_rate
        self.stall_s, self.stall_sigma, self.buffer = stall_s, stall_sigma, buffer_packets

    def _stalls(self, rng: random.Random, duration: float) -> list[float]:
        return [
            self.stall_s * math.exp(self.stall_sigma * rng.gauss(0.0, 1.0))
            for _ in range(poisson(rng, self.stall_rate * duration))
        ]

    def _loss(self, load: float, duration: float, stalls: list[float]) -> float:
        over = max(0.0, load - self.capacity) * duration
        headroom = 0 if load > self.capacity else self.buffer
        return over + sum(max(0.0, load * s - headroom) for s in stalls)

    def forwarded(self, load: float, duration: float, intended: int) -> int:
        return intended - round(self._loss(load, duration, self._stalls(self.rng, duration)))

    def truth(self, loss_ratio: float, duration: float, samples: int = 4000) -> float:
        if loss_ratio == 0.0:
            # P(no lossy stall) = exp(-rate x d x P(stall > Q / load)) >= 0.5
            def ok(load: float) -> bool:
                if load > self.capacity:
                    return False
                z = math.log(self.buffer / (load * self.stall_s)) / self.stall_sigma
                p_lossy = 0.5 * math.erfc(z / math.sqrt(2.0))
                return self.stall_rate * duration * p_lossy <= math.log(2.0)

            return _bisect(ok, MIN_RATE, self.capacity)
        rng = random.Random(12345)
        draws = [self._stalls(rng, duration) for _ in range(samples)]

        def ok_mc(load: float) -> bool:
            allowed = loss_ratio * load * duration
            good = sum(1 for st in draws if self._loss(load, duration, st) <= allowed)
            return good >= 0.5 * samples

        return _bisect(ok_mc, MIN_RATE, 2 * self.capacity, rel=1e-5)


KINDS: dict[str, Callable[..., SimulatedSut]] = {
    "hard": HardCapacity,
    "noise": NoisyCapacity,
    "stalls": RareStalls,
    "knee": SoftKnee,
    "bimodal": Bimodal,
}


def make_sut(kind: str, seed: int = 0, **params: float) -> SimulatedSut:
    """Build a simulated SUT of ``kind`` (one of :data:`KINDS`)."""
    try:
        return KINDS[kind](seed=seed, **params)
    except KeyError:
        raise ValueError(f"unknown simulated SUT kind {kind!r}; accepted: {', '.join(KINDS)}") from None


def truths(
    kind: str, ndr_loss: float = 0.0, pdr_loss: float = 0.005, duration: float = 60.0
) -> tuple[float, float]:
    """``(ndr_truth, pdr_truth)`` for ``kind`` at trial ``duration``."""
    sut = make_sut(kind)
    return sut.truth(ndr_loss, duration), sut.truth(pdr_loss, duration)
