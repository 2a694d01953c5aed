"""Regression check of a run against its history (jumpavg): the statistics and the verdicts.

The history store is :mod:`dpgate.regression.history`; the commands ``dpgate compare`` and
``dpgate history add`` are :mod:`dpgate.cli.compare` and :mod:`dpgate.cli.history`.

Verdict per test and metric (NDR, PDR, MRR), with the *allowance* = the largest of
``min_change`` (default 3 %) and the test's run-to-run noise:

1. History of ``NOISE_RUNS`` (5) runs or more: jumpavg (CSIT's trending library)
   classifies the history runs plus the current run into groups of similar averages; a run
   with several samples (the MRR trials) enters as a list, so jumpavg sees the noise within
   a run. The current run is a ``regression``/``progression`` only when jumpavg starts a
   new group with it, with that comment, **and** it moved from the previous group's
   average by at least the allowance, whose noise part is 3 robust standard deviations
   (1.4826 x MAD) of the history's run averages, under 10 runs at least 3 plain ones.
2. Shorter history (1-4 runs): too few runs for jumpavg to tell drift between runs from a
   step (it compares a step with the noise *within* runs, which on a shared VM is far
   smaller than the drift *between* them). The current run is compared with the history's
   mean: a ``regression``/``progression`` when it moved by at least the allowance, whose
   noise part is the larger of the case's declared ``noise``/``mrr_noise`` (thresholds
   file: the largest change seen between healthy baseline runs) and the spread the short
   history already shows. This is the tolerance rule of DPDK DTS and NFVbench, with the
   tolerance measured instead of guessed.
   ``cpp_at_load_scaled`` (kernel and polling SUTs) skips the first condition: its history runs are
   comparable by construction and their scatter is what the allowance measures, while
   jumpavg will not start a group with one run until it is far past that (`_scaled_verdict`).
3. Otherwise ``normal``; ``no history`` when the test has none. A drop of a result at
   the generator's ceiling (``limited_by=generator``) is ``generator-limited``: the SUT
   kept up with everything the generator could send, so it is not a SUT regression; and
   so is a rise over a history that was mostly at the generator's ceiling: those runs
   measured the generator, so the rise is not a SUT progression.

Runs with injected faults (``injected_sut_cpu_steal``) are compared but never added to
the history.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from typing import Dict, List, Optional, Sequence, Tuple

import jumpavg

from dpgate.outputs.results import load_records
from dpgate.regression import speed as speed_mod
from dpgate.regression.history import METRICS, RunValue, read_history, run_value, same_host, slow_host
from dpgate.telemetry.disturbance import CPP_SPEED_EXPONENT, SLOW_SHARE
from dpgate.telemetry.placement import CPP_KEY, SCALED_KEY, alike, rests_where

NOISE_RUNS = 5
#: The cpp_at_load check uses the speed-scaled figure (``cpp_at_load_scaled``)
#: once this many history runs have one scaled to the same speed.
SCALED_RUNS = 2


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
    history_means: Sequence[float], min_change: float, declared: Optional[float]
) -> Tuple[float, str]:
    """(relative change a regression must exceed, where that number comes from).

    >>> allowance([100.0] * 4 + [101.0] * 4, 0.03, None)
    (0.03, 'min change')
    >>> round(allowance([4002.0, 3848.0, 4001.0, 3999.0, 4067.0], 0.03, 0.27)[0], 3)  # MAD 2: sd 82
    0.061
    >>> allowance([100.0, 90.0], 0.03, 0.15)
    (0.15, 'declared noise')
    >>> round(allowance([100.0, 80.0], 0.03, 0.15)[0], 3), allowance([100.0, 80.0], 0.03, 0.15)[1]
    (0.25, 'history spread (2 runs)')
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
        if med > 0:
            cands.append((3 * sigma / med, f"history noise ({n} runs)"))
    else:
        if declared:
            cands.append((float(declared), "declared noise"))
        if n >= 2 and min(history_means) > 0:
            cands.append(
                ((max(history_means) - min(history_means)) / min(history_means), f"history spread ({n} runs)")
            )
    return max(cands, key=lambda c: c[0])


def classify_current(
    history: Sequence[RunValue],
    current: Sequence[float],
    min_change: float = 0.03,
    noise: Optional[float] = None,
    lower_is_better: bool = False,
    jump: bool = True,
) -> Verdict:
    """Classify ``current`` (one or more samples of this run) against ``history`` (one value
    or a list of samples per run); ``noise`` is the case's declared run-to-run noise.
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
    allow, source = allowance(means, min_change, noise)
    if len(hist) < NOISE_RUNS:
        baseline = sum(means) / len(means)
        change = (cur - baseline) / baseline if baseline else 0.0
        verdict = fall if change <= -allow else (rise if change >= allow else "normal")
        return Verdict("", "", verdict, cur, baseline, change * 100, len(history), allow * 100, source)
    if not jump:
        base_vals = means[-len(jumpavg.classify(hist)[-1]) :]
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


def verdicts_for(
    rec: Dict,
    store: str,
    min_change: float = 0.03,
    noise: Optional[float] = None,
    mrr_noise: Optional[float] = None,
) -> List[Verdict]:
    """Every metric of one record against its history. ``noise`` (NDR/PDR) and ``mrr_noise``
    default to the record's ``regression_noise``/``regression_mrr_noise`` (the case's declared
    noise, recorded by the gate); MRR without its own falls back to ``noise``."""
    m = rec.get("metrics", {})

    def recorded(key: str) -> Optional[float]:
        v = m.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    noise = noise if noise is not None else recorded("regression_noise")
    mrr_noise = mrr_noise if mrr_noise is not None else recorded("regression_mrr_noise")
    if mrr_noise is None:
        mrr_noise = noise
    cpp_noise = recorded("regression_cpp_noise")
    if cpp_noise is None:
        cpp_noise = noise
    scaled_noise = recorded("regression_cpp_scaled_noise")
    if scaled_noise is None:
        scaled_noise = cpp_noise
    hist = read_history(store, rec.get("testbed", ""), rec["longname"])
    if rec.get("started") is not None:
        # the gate adds a run to the history as it ends: never compare a run with itself
        hist = [h for h in hist if h.get("time") != rec["started"]]
    hist, others = same_host(hist, m.get("host_cpu_model"))
    noises = (noise, mrr_noise, cpp_noise, scaled_noise)
    out = _verdicts(rec, hist, min_change, *noises)
    if not others:
        return out
    left = f"{others} run(s) of other CPU models left out"
    return [replace(v, note="; ".join(filter(None, [v.note, left]))) for v in out]


def _verdicts(
    rec: Dict,
    hist: List[Dict],
    min_change: float,
    noise: Optional[float],
    mrr_noise: Optional[float],
    cpp_noise: Optional[float],
    scaled_noise: Optional[float],
) -> List[Verdict]:
    m = rec.get("metrics", {})
    out = []
    for metric in METRICS:
        cur = run_value(rec, metric)
        if cur is None:
            continue
        if metric == "cpp_at_load":
            # a far run against far runs, a near one against the others (placement.py), each
            # figure by the placement of its own trials: the scaled one when enough history has it
            key, (same, far) = SCALED_KEY, alike(m, hist, SCALED_KEY)
            v = _scaled_verdict(m, same, min_change, cpp_noise if scaled_noise is None else scaled_noise)
            if v is None:
                key, (same, far) = CPP_KEY, alike(m, hist)
                past = [v for v in (run_value(h, metric) for h in same) if v is not None]
                v = _cpp_verdict(m, same, past, cur, min_change, cpp_noise)
            if far:  # a rise is not a verdict; no rise (or no far history) says why too
                v = replace(v, verdict="inconclusive" if v.verdict == "regression" else v.verdict, note=far)
            elif rests_where(m, key) == "far":
                v = replace(v, note="; ".join(filter(None, [f"against {v.history_len} far run(s)", v.note])))
            out.append(replace(v, test=rec.get("name", rec["longname"])))
            continue
        declared = mrr_noise if metric == "mrr_pps" else noise
        # throughput measured in a slow host phase is the host's: not a reference (history.py)
        past = [v for v in (run_value(h, metric) for h in hist if not slow_host(h)) if v is not None]
        v = classify_current(past, cur if isinstance(cur, list) else [cur], min_change, declared)
        lim_key = "mrr_limited_by" if metric == "mrr_pps" else "limited_by"
        base = [h.get(lim_key) for h in hist if run_value(h, metric) is not None]
        base_at_ceiling = bool(base) and sum(b == "generator" for b in base) > len(base) / 2
        if (v.verdict == "regression" and m.get(lim_key) == "generator") or (
            v.verdict == "progression" and base_at_ceiling
        ):
            # at the generator's ceiling a number measures the generator, not the SUT: a drop
            # there is not a SUT regression, nor a rise over such a history a SUT progression
            v = replace(v, verdict="generator-limited")
        out.append(replace(v, test=rec.get("name", rec["longname"]), metric=metric))
    return out


def _cpp_verdict(
    m: Dict,
    hist: List[Dict],
    past: List[RunValue],
    cur: RunValue,
    min_change: float,
    cpp_noise: Optional[float],
) -> Verdict:
    """cycles per packet: lower is better (a rise is the regression, allowances are rises),
    no generator ceiling limits it, and the host's speed moves it: held against the history
    runs at about this run's SUT core speed when there are any (``dpgate.regression.speed``),
    else against all, a rise on a slower core being inconclusive (:func:`slow_core`). (A
    run with every trial scaled to a reference speed is held against the history's figures
    scaled alike first: :func:`_scaled_verdict`, when there are enough of them.)"""
    speed = m.get("sut_core_speed")
    matched = speed_mod.at_speed(hist, speed, m.get("cpp_speed_exponent"))
    v = classify_current(
        [x for _, x in matched] or past,
        cur if isinstance(cur, list) else [cur],
        min_change,
        cpp_noise,
        lower_is_better=True,
    )
    v = replace(v, metric="cpp_at_load")
    if matched and isinstance(speed, (int, float)):
        at = sorted(s for s, _ in matched)
        return replace(
            v,
            note=f"history at this SUT core speed: {len(at)} run(s) at {at[0]:.1f}-{at[-1]:.1f} M it/s "
            f"(this run {speed:.1f}), scaled by speed^-{m['cpp_speed_exponent']:g}",
        )
    # the regression's threshold in cycles per packet
    limit = v.baseline * (1 + (v.allowance_pct or 0.0) / 100) if v.baseline else None
    slow = slow_core(
        speed, [(h.get("metrics") or h).get("sut_core_speed") for h in hist], value=v.current, limit=limit
    )
    return replace(v, verdict="inconclusive", note=slow) if v.verdict == "regression" and slow else v


def _scaled_verdict(
    m: Dict, hist: List[Dict], min_change: float, cpp_noise: Optional[float]
) -> Optional[Verdict]:
    """``cpp_at_load_scaled`` (every trial scaled to the reference speed ``cpp_scaled_speed``:
    :mod:`dpgate.telemetry.cpp_scaled`) against the history runs scaled to the same speed;
    None when this run has none or fewer than :data:`SCALED_RUNS` history runs have one. All
    such runs count, whatever speed they ran at: the scaling took the speed out; not those
    scaled by another exponent (``cpp_speed_exponent``: another CPU model's; entries written
    before the history kept it count).

    >>> h = [{"cpp_at_load_scaled": x, "cpp_scaled_speed": 30.0} for x in (4000.0, 4100.0)]
    >>> v = _scaled_verdict({"cpp_at_load_scaled": 4700.0, "cpp_scaled_speed": 30.0}, h, 0.03, 0.1)
    >>> v.verdict, round(v.change_pct, 1), v.note
    ('regression', 16.0, 'every trial scaled to 30 M it/s by speed^-0.5')
    >>> _scaled_verdict({"cpp_at_load_scaled": 4700.0, "cpp_scaled_speed": 25.0}, h, 0.03, 0.1) is None
    True
    >>> e1 = {"cpp_at_load_scaled": 4700.0, "cpp_scaled_speed": 30.0, "cpp_speed_exponent": 1.0}
    >>> _scaled_verdict(e1, [dict(x, cpp_speed_exponent=0.5) for x in h], 0.03, 0.1) is None
    True
    """
    cur, ref = m.get("cpp_at_load_scaled"), m.get("cpp_scaled_speed")
    if not isinstance(cur, (int, float)) or not isinstance(ref, (int, float)):
        return None
    exp = m.get("cpp_speed_exponent")  # figures scaled by another exponent are not comparable
    past: List[RunValue] = [
        x
        for h in hist
        if (h.get("metrics") or h).get("cpp_scaled_speed") == ref
        and (h.get("metrics") or h).get("cpp_speed_exponent", exp) == exp
        and isinstance(x := run_value(h, "cpp_at_load_scaled"), float)
    ]
    if len(past) < SCALED_RUNS:
        return None
    # the allowance alone decides (jump=False): jumpavg let +6.1 % pass over five runs 1.2 % sd
    # apart (gs15, linux-ip4 with +5 % injected); it starts a group with one run from +7.8 %
    verdict = classify_current(past, [float(cur)], min_change, cpp_noise, lower_is_better=True, jump=False)
    return replace(
        verdict,
        metric="cpp_at_load_scaled",
        note=f"every trial scaled to {ref:g} M it/s by speed^-{m.get('cpp_speed_exponent', CPP_SPEED_EXPONENT['kernel']):g}",
    )


def slow_core(
    current: Optional[float],
    history: Sequence[Optional[float]],
    share: float = SLOW_SHARE,
    value: Optional[float] = None,
    limit: Optional[float] = None,
) -> str:
    """Why a higher ``cpp_at_load`` may be the host's doing: this run's SUT core ran (awake
    loop or speed probe, M iterations/s) below ``share`` of the history's median, or slower
    than it by enough that ``value`` scaled to the history's speed stays within ``limit``
    (the regression's threshold).

    >>> slow_core(21.0, [30.1, 29.5, None, 30.8])
    "SUT core ran at 21.0 M it/s, 70 % of the history's 30.1: the host, not the SUT, may be slower"
    >>> slow_core(29.0, [30.1, 29.5]), slow_core(None, [30.1]), slow_core(21.0, [None])
    ('', '', '')
    >>> slow_core(27.4, [30.0], value=6715.0, limit=6500.0)
    "SUT core ran at 27.4 M it/s, 91 % of the history's 30.0: at its speed about 6133, within 6500"
    """
    past = [float(x) for x in history if isinstance(x, (int, float)) and x > 0]
    if not isinstance(current, (int, float)) or not past:
        return ""
    med = statistics.median(past)
    if current >= med:
        return ""
    head = f"SUT core ran at {current:.1f} M it/s, {current / med * 100:.0f} % of the history's {med:.1f}"
    if current < share * med:
        return f"{head}: the host, not the SUT, may be slower"
    if value is not None and limit is not None and value * current / med <= limit:
        return f"{head}: at its speed about {value * current / med:.0f}, within {limit:.0f}"
    return ""


def compare(outdir: str, store: str, min_change: float = 0.03) -> List[Verdict]:
    out = []
    for rec in load_records(outdir):
        out.extend(verdicts_for(rec, store, min_change))
    return out
