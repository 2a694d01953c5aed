"""The paired check's statistics: the pairs' log ratios, their (trimmed) mean and its 99 %
confidence interval, and :class:`PairedCpp`, the estimate (``dpgate.telemetry.paired`` judges
trials into it).

>>> est = estimate([(1000.0, 1100.0), (1010.0, 1098.0), (990.0, 1093.0), (1005.0, 1104.0)])
>>> round(est.change, 3), est.pairs, round(est.low, 3) > 0.05
(0.097, 4, True)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

from dpgate.telemetry.cpp_scaled import CPP_REF_SPEED

#: Two-sided 99 % quantiles of Student's t by degrees of freedom (larger df: the next lower
#: row's, which errs on the wide side; beyond 30: 2.75).
T995 = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355,
        9: 3.250, 10: 3.169, 12: 3.055, 15: 2.947, 20: 2.845, 30: 2.750}  # fmt: skip


def t995(df: int) -> float:
    """Student's t 0.995 quantile for ``df`` degrees of freedom (a wide-side table lookup).

    >>> t995(7), t995(11), t995(100)
    (3.499, 3.169, 2.75)
    """
    if df < 1:
        raise ValueError("t quantile needs at least 1 degree of freedom")
    return T995[max(k for k in T995 if k <= df)]


@dataclass(frozen=True)
class PairedCpp:
    """The SUT's cycles per packet against its baseline's, from paired trials."""

    #: SUT / baseline - 1: the geometric mean of the pairs' ratios
    change: float
    #: 99 % confidence interval of ``change``
    low: float
    high: float
    pairs: int
    #: medians of the two sides' trials (cycles per packet)
    sut: float = 0.0
    baseline: float = 0.0
    load_pps: float = 0.0
    #: largest foreign share of a core in the trials used (None: not measured)
    disturbance: Optional[float] = None
    #: pairs left out (a trial without a cycles figure, across a change of core placement,
    #: or disturbed: :func:`judged_pairs`)
    dropped: int = 0
    #: the exponent the trials were scaled to the reference speed by (None: not scaled)
    exponent: Optional[float] = None
    #: the change of the same pairs as measured, not scaled (None: not scaled, or not known)
    unscaled: Optional[float] = None
    #: measured at saturation (:data:`SATURATED_FIELD`): a polling SUT without a busy-cycle
    #: report, its threads' CPU time per forwarded frame at an overload
    saturated: bool = False
    #: share of the pairs left out at each end of their ratios (:func:`trimmed`; 0: a mean of all)
    trim: float = 0.0
    #: the kernel cycles per frame every trial was scaled to (each by its own trial's kernel
    #: cycles per frame on the SUT core: :mod:`dpgate.telemetry.kernel_ref`); None: not so scaled
    reference: Optional[float] = None
    #: with ``reference``: the same pairs judged by the busy cycles at one core speed, as
    #: without a reference (the check FAILs when either does: ``dpgate.telemetry.paired.verdict``)
    also: Optional[PairedCpp] = None
    #: with ``reference``: the kernel's own cycles per frame, SUT side against baseline side,
    #: and its 99 % interval (a reference that moved is no reference: ``paired.verdict``)
    kernel_change: Optional[float] = None
    kernel_low: Optional[float] = None
    kernel_high: Optional[float] = None
    #: at saturation, the same judgement on the pairs whose two trials ran at one core speed
    #: (``placement.same_speed``) when some did not: their change and how many (a FAIL needs
    #: them to rise beyond the allowance too: ``dpgate.telemetry.paired.verdict``)
    one_speed: Optional[float] = None
    one_speed_pairs: int = 0

    def metrics(self) -> dict:
        """The record's (and JUnit's) properties of the check."""
        out = {
            "cpp_paired_change": round(self.change, 4),
            "cpp_paired_low": round(self.low, 4),
            "cpp_paired_high": round(self.high, 4),
            "cpp_paired_pairs": self.pairs,
            "cpp_paired_sut": round(self.sut, 1),
            "cpp_paired_baseline": round(self.baseline, 1),
            "cpp_paired_pps": round(self.load_pps, 1),
        }
        if self.disturbance is not None:
            out["cpp_paired_disturbance"] = round(self.disturbance, 4)
        if self.dropped:  # pairs without a figure, across a change of core placement (or speed)
            out["cpp_paired_dropped"] = self.dropped
        if self.exponent is not None:  # the medians are at the reference speed
            out["cpp_paired_speed_exponent"] = self.exponent
            out["cpp_paired_scaled_speed"] = CPP_REF_SPEED
        if self.unscaled is not None:
            out["cpp_paired_change_unscaled"] = round(self.unscaled, 4)
        if self.saturated:
            out["cpp_paired_saturated"] = True
        if self.trim:
            out["cpp_paired_trim"] = self.trim
        if self.reference is not None:
            out["cpp_paired_kernel_cpp"] = round(self.reference, 1)
        if self.kernel_change is not None:
            out["cpp_paired_kernel_change"] = round(self.kernel_change, 4)
        if self.also is not None:  # the busy cycles at one core speed, judged beside
            out["cpp_paired_busy_change"] = round(self.also.change, 4)
            out["cpp_paired_busy_low"] = round(self.also.low, 4)
            out["cpp_paired_busy_high"] = round(self.also.high, 4)
        if self.one_speed is not None:
            out["cpp_paired_one_speed_change"] = round(self.one_speed, 4)
            out["cpp_paired_one_speed_pairs"] = self.one_speed_pairs
        return out

    def describe(self) -> str:
        """``cpp_at_load +10.4 % against its baseline (8 pairs, 99 % CI +8.1 to +12.8 %)``."""
        at = "" if self.exponent is None else f" at {CPP_REF_SPEED:g} M it/s"
        if self.reference is not None:
            at = f" per {self.reference:.0f} kernel cycles/frame"
        pairs = f"{self.pairs} pairs" + (f" ({self.trim:.0%} trimmed at each end)" if self.trim else "")
        what = "cycles per packet at saturation" if self.saturated else "cpp_at_load"
        return (
            f"{what} {self.change * 100:+.1f} % against its baseline ({self.sut:.0f} vs "
            f"{self.baseline:.0f} cycles/packet{at}, {pairs} at {self.load_pps / 1e3:.1f} kpps, "
            f"99 % CI {self.low * 100:+.1f} to {self.high * 100:+.1f} %)"
        )


def estimate(
    pairs: Sequence[Tuple[Optional[float], Optional[float]]],
    load_pps: float = 0.0,
    disturbance: Optional[float] = None,
    dropped: int = 0,
    exponent: Optional[float] = None,
    trim: float = 0.0,
) -> PairedCpp:
    """(baseline, SUT) cycles per packet of each pair -> :class:`PairedCpp`: the mean of the
    pairs' log ratios, or with ``trim`` their trimmed mean (:func:`trimmed`).

    >>> estimate([(100.0, 100.0)])
    Traceback (most recent call last):
    ...
    ValueError: a paired estimate needs at least 2 pairs, got 1
    """
    good = [(b, s) for b, s in pairs if b and s and b > 0 and s > 0]
    if len(good) < 2:
        raise ValueError(f"a paired estimate needs at least 2 pairs, got {len(good)}")
    logs = [math.log(s / b) for b, s in good]
    mean, half = trimmed(logs, trim)
    return PairedCpp(
        change=math.exp(mean) - 1,
        low=math.exp(mean - half) - 1,
        high=math.exp(mean + half) - 1,
        pairs=len(good),
        sut=statistics.median(s for _, s in good),
        baseline=statistics.median(b for b, _ in good),
        load_pps=load_pps,
        disturbance=disturbance,
        dropped=dropped + len(pairs) - len(good),
        exponent=exponent,
        trim=trim if cut(len(logs), trim) else 0.0,
    )


def cut(n: int, trim: float) -> int:
    """How many of ``n`` values :func:`trimmed` leaves out at each end (0 when fewer than two
    would stay).

    >>> cut(20, 0.2), cut(4, 0.2), cut(3, 0.34)
    (4, 0, 0)
    """
    k = int(trim * n)
    return k if n - 2 * k > 1 else 0


def trimmed(values: Sequence[float], trim: float = 0.0) -> Tuple[float, float]:
    """(centre, half width of its 99 % interval) of ``values``: with ``trim``, Yuen's trimmed
    mean (the ``int(trim * n)`` lowest and highest left out) and its interval from the
    winsorized variance, on n - 2k - 1 degrees of freedom; else the mean and Student's t.
    A pair the host's phase split lands in a tail, and one such pair no longer decides.

    >>> logs = [0.10, 0.11, 0.09, 0.10, 0.12, 0.08, 0.10, 0.11, 0.09, 0.60]
    >>> [round(x, 3) for x in trimmed(logs)], [round(x, 3) for x in trimmed(logs, 0.2)]
    ([0.15, 0.163], [0.102, 0.019])
    """
    n = len(values)
    k = cut(n, trim)
    if not k:
        return statistics.fmean(values), t995(n - 1) * statistics.stdev(values) / math.sqrt(n)
    x = sorted(values)
    winsorized = [min(max(v, x[k]), x[n - k - 1]) for v in x]
    se = statistics.stdev(winsorized) / ((1 - 2 * k / n) * math.sqrt(n))
    return statistics.fmean(x[k : n - k]), t995(n - 2 * k - 1) * se
