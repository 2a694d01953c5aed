"""The statistics of the regression check: one run's value against its history (jumpavg plus an
allowance); the rules are :mod:`dpgate.regression.compare`'s docstring."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import jumpavg

from dpgate.regression.history import RunValue

NOISE_RUNS = 5
#: Hours a history's runs must span before their own scatter may set an allowance under the
#: case's declared noise: runs back to back measure one hour's scatter, and the host's level
#: moves more than that between hours (gk98-gk99 on the Zen 4 VM: twelve runs within an hour
#: allowed linux-ip4 7.8 %, and an hour later a healthy run read +8.9 %). The declared noise is
#: the spread seen over days (thresholds files), so it stays the floor until the history
#: spans as long (``dpgate gate --history-span``, recorded as ``regression_history_span_h``).
HISTORY_SPAN_H = 24.0


@dataclass(frozen=True)
class Verdict:
    test: str
    metric: str
    verdict: str  # regression | progression | normal | no history | generator-limited | inconclusive
    current: float
    baseline: Optional[float]
    change_pct: Optional[float]
    history_len: int
    allowance_pct: Optional[float] = None
    noise_source: str = ""
    #: why a verdict is ``inconclusive`` (the measurement, not the SUT, may have moved), or
    #: what it was held against when not the whole history (cpp_at_load at the run's speed)
    note: str = ""

    def _show(self, v: float) -> str:
        if self.metric.startswith("cpp_at_load_per_kernel"):  # a ratio: busy cycles per kernel cycle
            return f"{v:.3f} busy/kernel cycles"
        return f"{v:.0f} cycles/packet" if self.metric.startswith("cpp_at_load") else f"{v / 1e6:.3f} Mpps"

    def line(self) -> str:
        if self.baseline is None:
            note = f": {self.note}" if self.note else ""
            return f"{self.test} {self.metric}: {self.verdict} (current {self._show(self.current)}){note}"
        allow = (
            f", allowance {self.allowance_pct:.1f} % from {self.noise_source}"
            if self.allowance_pct is not None
            else ""
        )
        return (
            f"{self.test} {self.metric}: {self.verdict}: {self._show(self.current)} vs "
            f"{self._show(self.baseline)} ({self.change_pct:+.1f} %, {self.history_len} runs of history{allow})"
            + (f": {self.note}" if self.note else "")
        )


def _mean(v: RunValue) -> float:
    return sum(v) / len(v) if isinstance(v, list) else float(v)


def allowance(
    history_means: Sequence[float],
    min_change: float,
    declared: Optional[float],
    span_h: Optional[float] = None,
    span_min_h: float = HISTORY_SPAN_H,
) -> Tuple[float, str]:
    """(relative change a regression must exceed, where that number comes from). From
    :data:`NOISE_RUNS` runs on the history's own noise sets it, and the ``declared`` noise
    stays its floor while the runs span ``span_h`` < ``span_min_h`` hours (``span_h`` None:
    the runs' times are unknown, their noise alone counts).

    >>> allowance([100.0] * 4 + [101.0] * 4, 0.03, None)
    (0.03, 'min change')
    >>> round(allowance([4002.0, 3848.0, 4001.0, 3999.0, 4067.0], 0.03, 0.27)[0], 3)  # MAD 2: sd 82
    0.061
    >>> allowance([100.0, 90.0], 0.03, 0.15)
    (0.15, 'declared noise')
    >>> round(allowance([100.0, 80.0], 0.03, 0.15)[0], 3), allowance([100.0, 80.0], 0.03, 0.15)[1]
    (0.25, 'history spread (2 runs)')
    >>> ten = [4348.0, 4402.0, 4455.0, 4510.0, 4560.0, 4600.0, 4650.0, 4700.0, 4749.0, 4480.0]
    >>> allowance(ten, 0.03, 0.14, span_h=0.9)
    (0.14, 'declared noise (history spans 0.9 h of 24 h; its own 9.6 %)')
    >>> allowance(ten, 0.03, 0.14, span_h=30.0)[1], allowance(ten, 0.03, 0.14)[1]
    ('history noise (10 runs)', 'history noise (10 runs)')
    """
    n = len(history_means)
    cands: List[Tuple[float, str]] = [(min_change, "min change")]
    if n >= NOISE_RUNS:
        med = statistics.median(history_means)
        sigma = 1.4826 * statistics.median(abs(x - med) for x in history_means)
        if n < 2 * NOISE_RUNS:
            # the MAD of a few runs can be near zero by chance (five runs, three of them alike,
            # gs14: 3,999-4,002 of 3,848-4,067 made it 0.2 %): the plain deviation floors it
            sigma = max(sigma, statistics.stdev(history_means))
        own = 3 * sigma / med if med > 0 else None
        if own is not None:
            cands.append((own, f"history noise ({n} runs)"))
        if declared and span_h is not None and span_h < span_min_h:
            # the history's own figure too: what a shorter --history-span would allow
            mine = f"; its own {own * 100:.1f} %" if own is not None else ""
            cands.append(
                (float(declared), f"declared noise (history spans {span_h:.1f} h of {span_min_h:g} h{mine})")
            )
    else:
        if declared:
            cands.append((float(declared), "declared noise"))
        if n >= 2 and min(history_means) > 0:
            cands.append(
                ((max(history_means) - min(history_means)) / min(history_means), f"history spread ({n} runs)")
            )
    return max(cands, key=lambda c: c[0])


def _last_level(hist: List, means: List[float]) -> int:
    """How many of the history's last runs make its current level: jumpavg's last group, but one
    run is not a level (as ``cpp_at_load_per_kernel`` needs two runs, ``regression.cycles``): a
    last group of one run counts with the group before it. On the Zen 4 VM (gk96, linux-ip4
    ``cpp_at_load_scaled``) the sixth healthy run read 12.4 % under the five before it, jumpavg
    made it a group of its own, and held against it alone a "+5 %" read +19.9 % and failed
    against the 16.7 % the six runs' noise allowed; the seventh run was back at the five's
    level. After a real step the next run is held against the step and the level before it,
    and from the run after on against the new level.

    >>> noisy = [6287.0, 5927.0, 6043.0, 6264.0, 6225.0, 5386.0]
    >>> _last_level(noisy, noisy), _last_level(noisy + [5390.0], noisy + [5390.0])
    (6, 2)
    """
    groups = jumpavg.classify(hist)
    n = len(groups[-1])
    if n == 1 and len(groups) > 1:
        n += len(groups[-2])
    return n


def classify_current(
    history: Sequence[RunValue],
    current: Sequence[float],
    min_change: float = 0.03,
    noise: Optional[float] = None,
    lower_is_better: bool = False,
    jump: bool = True,
    span_h: Optional[float] = None,
    span_min_h: float = HISTORY_SPAN_H,
) -> Verdict:
    """Classify ``current`` (one or more samples of this run) against ``history`` (one value
    or a list of samples per run); ``noise`` is the case's declared run-to-run noise, the
    allowance's floor while the history's runs span ``span_h`` < ``span_min_h`` hours
    (:func:`allowance`).
    ``lower_is_better`` (cycles per packet): a rise is the regression, and the allowance is
    a rise of the metric itself. ``jump=False``: from :data:`NOISE_RUNS` history runs on, the
    current run is held against the history's last level (jumpavg on the history alone) by
    the allowance only, without asking jumpavg to start a group with a single run.

    >>> classify_current([10.0] * 20, [10.1]).verdict
    'normal'
    >>> classify_current([10.0, 10.1, 9.9] * 7, [8.5, 8.6, 8.4]).verdict
    'regression'
    >>> classify_current([3007.0], [3735.0], 0.03, 0.23, lower_is_better=True).verdict
    'regression'
    >>> five = [5773.1, 5860.0, 5830.4, 5789.2, 5680.3]  # gs15 linux-ip4: sd 1.2 %, allowance 3.5 %
    >>> [classify_current(five, [6142.0], lower_is_better=True, jump=j).verdict for j in (True, False)]
    ['normal', 'regression']
    """
    # the verdict for a fall and for a rise of the metric
    fall, rise = ("progression", "regression") if lower_is_better else ("regression", "progression")

    cur = sum(current) / len(current)
    if not history:
        return Verdict("", "", "no history", cur, None, None, 0)
    hist = [list(map(float, h)) if isinstance(h, list) else float(h) for h in history]
    means = [_mean(h) for h in hist]
    allow, source = allowance(means, min_change, noise, span_h, span_min_h)
    if len(hist) < NOISE_RUNS:
        baseline = sum(means) / len(means)
        change = (cur - baseline) / baseline if baseline else 0.0
        verdict = fall if change <= -allow else (rise if change >= allow else "normal")
        return Verdict("", "", verdict, cur, baseline, change * 100, len(history), allow * 100, source)
    if not jump:
        base_vals = means[-_last_level(hist, means) :]
        baseline = sum(base_vals) / len(base_vals)
        change = (cur - baseline) / baseline if baseline else 0.0
        verdict = fall if change <= -allow else (rise if change >= allow else "normal")
        return Verdict("", "", verdict, cur, baseline, change * 100, len(history), allow * 100, source)
    values: List = hist + [list(current) if len(current) > 1 else current[0]]
    groups = jumpavg.classify(values)
    last = groups[-1]
    if len(groups) == 1 or len(last) > 1:
        # the current run joined an existing group: compare with the group without it
        base_vals = means[-(len(last) - 1) :] if len(last) > 1 else means
        baseline = sum(base_vals) / len(base_vals)
        comment = "normal"
    else:
        baseline = groups[-2].stats.avg
        # jumpavg names a lower group average a regression (higher is better)
        comment = {"regression": fall, "progression": rise}.get(last.comment, last.comment)
    change = (cur - baseline) / baseline if baseline else 0.0
    verdict = comment if comment in ("regression", "progression") and abs(change) >= allow else "normal"
    return Verdict("", "", verdict, cur, baseline, change * 100, len(history), allow * 100, source)
