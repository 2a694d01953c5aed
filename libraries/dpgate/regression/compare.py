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
   (1.4826 x MAD) of the history's run averages, under 10 runs at least 3 plain ones, and
   at least the case's declared noise until the history's runs span ``HISTORY_SPAN_H`` (24)
   hours (``dpgate gate --history-span``): runs back to back measure one hour's scatter only.
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
   jumpavg will not start a group with one run until it is far past that (``dpgate.regression.cycles.scaled_verdict``);
   it is held against the history's last level (jumpavg's last group of the history alone,
   where one run is not a level). From five runs of history on, ``cpp_at_load`` as measured
   judges in its place where its history scattered clearly less
   (``dpgate.regression.cycles.steadier_raw``: which one is steadier moves with the host).
   A polling SUT's ``cpp_at_load_per_kernel`` (busy cycles per kernel cycle on the same frames)
   is checked the same way beside ``cpp_at_load``, against every history run with one, from
   two on, allowance ``cpp_kernel_noise``; a rise on a core in a slow phase (under 90 % of the
   history's speed) that the speed explains is inconclusive
   (``dpgate.regression.cycles.per_kernel_verdict``), and so is a rise the SUT's own
   ``cpp_at_load`` figure carries less than half of (the kernel reference fell,
   ``dpgate.regression.cycles.unshared_rise``).
3. Otherwise ``normal``; ``no history`` when the test has none. A drop of a result at
   the generator's ceiling (``limited_by=generator``) is ``generator-limited``: the SUT
   kept up with everything the generator could send, so it is not a SUT regression; and
   so is a rise over a history that was mostly at the generator's ceiling: those runs
   measured the generator, so the rise is not a SUT progression.

Runs with injected faults (``injected_sut_cpu_steal``) are compared but never added to
the history.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Dict, List, Optional, Tuple

from dpgate.outputs.results import load_records
from dpgate.regression.classify import (  # noqa: F401 (re-exported)
    HISTORY_SPAN_H,
    NOISE_RUNS,
    Verdict,
    allowance,
    classify_current,
)
from dpgate.regression.cycles import (  # noqa: F401 (re-exported)
    SCALED_RUNS,
    cpp_verdict,
    per_kernel_verdict,
    scaled_verdict,
    slow_core,
    steadier_raw,
    unshared_rise,
)
from dpgate.regression.history import (
    METRICS,
    read_history,
    run_value,
    same_host,
    slow_host,
    span_h,
    with_values,
)
from dpgate.telemetry.disturbance import DISTURBANCE_MAX, disturbance_for, inconclusive
from dpgate.telemetry.placement import CPP_KEY, SCALED_KEY, alike, rests_where


def with_fallbacks(
    noise: Optional[float],
    mrr_noise: Optional[float],
    cpp_noise: Optional[float],
    scaled_noise: Optional[float],
    kernel_noise: Optional[float],
) -> Tuple[Optional[float], ...]:
    """The declared allowances (NDR/PDR, MRR, cycles, scaled cycles, per-kernel cycles) with the
    fallbacks of a case that declares fewer: MRR's and the cycles' take NDR's, the scaled and
    per-kernel cycles' take the cycles'.

    >>> with_fallbacks(0.2, None, None, 0.1, None)
    (0.2, 0.2, 0.2, 0.1, 0.2)
    """
    cpp = noise if cpp_noise is None else cpp_noise
    return (
        noise,
        noise if mrr_noise is None else mrr_noise,
        cpp,
        cpp if scaled_noise is None else scaled_noise,
        cpp if kernel_noise is None else kernel_noise,
    )


def held_reason(
    metrics: Dict, v: Verdict, disturbance_max: Optional[float] = DISTURBANCE_MAX
) -> Optional[str]:
    """Why a ``regression`` is held as inconclusive: others took more than ``disturbance_max`` of a
    core in the trials it rests on (``metrics``: a record's, or a run's telemetry); None when it
    is not a regression or its trials were clean. The gate, ``dpgate compare`` and the replay all
    hold by it.

    >>> v = Verdict("t", "ndr_pps", "regression", 4e5, 5e5, -20.0, 6)
    >>> held_reason({"disturbance": 0.31}, v)[:45], held_reason({"disturbance": 0.02}, v)
    ('disturbed measurement: 31.0 % of a TG/SUT cor', None)
    """
    if v.verdict != "regression":
        return None
    return inconclusive(disturbance_for(metrics, v.metric), disturbance_max)


def verdicts_for(
    rec: Dict,
    store: str,
    min_change: float = 0.03,
    noise: Optional[float] = None,
    mrr_noise: Optional[float] = None,
    history_span_h: Optional[float] = None,
) -> List[Verdict]:
    """Every metric of one record against its history in ``store`` (:func:`verdicts_against`)."""
    hist = read_history(store, rec.get("testbed", ""), rec["longname"])
    if rec.get("started") is not None:
        # the gate adds a run to the history as it ends: never compare a run with itself
        hist = [h for h in hist if h.get("time") != rec["started"]]
    return verdicts_against(rec, hist, min_change, noise, mrr_noise, history_span_h)


def verdicts_against(
    rec: Dict,
    hist: List[Dict],
    min_change: float = 0.03,
    noise: Optional[float] = None,
    mrr_noise: Optional[float] = None,
    history_span_h: Optional[float] = None,
) -> List[Verdict]:
    """Every metric of one record against the history entries ``hist`` (those of other CPUs are
    left out, and the verdicts say how many). ``noise`` (NDR/PDR) and ``mrr_noise``
    default to the record's ``regression_noise``/``regression_mrr_noise`` (the case's declared
    noise, recorded by the gate); MRR without its own falls back to ``noise``. The declared
    noises floor each allowance until the history's runs span ``history_span_h`` hours (default
    the record's ``regression_history_span_h``, else :data:`HISTORY_SPAN_H`)."""
    m = rec.get("metrics", {})

    def recorded(key: str) -> Optional[float]:
        v = m.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    noise, mrr_noise, cpp_noise, scaled_noise, kernel_noise = with_fallbacks(
        noise if noise is not None else recorded("regression_noise"),
        mrr_noise if mrr_noise is not None else recorded("regression_mrr_noise"),
        recorded("regression_cpp_noise"),
        recorded("regression_cpp_scaled_noise"),
        recorded("regression_cpp_kernel_noise"),
    )
    if history_span_h is None:
        history_span_h = recorded("regression_history_span_h")
    span_min_h = HISTORY_SPAN_H if history_span_h is None else history_span_h
    hist, others = same_host(hist, m.get("host_cpu_model"), m.get("host_cpu_id"))
    noises = (noise, mrr_noise, cpp_noise, scaled_noise, kernel_noise)
    out = _verdicts(rec, hist, min_change, *noises, span_min_h=span_min_h)
    if not others:
        return out
    left = f"{others} run(s) of other CPUs left out"
    return [replace(v, note="; ".join(filter(None, [v.note, left]))) for v in out]


def _verdicts(
    rec: Dict,
    hist: List[Dict],
    min_change: float,
    noise: Optional[float],
    mrr_noise: Optional[float],
    cpp_noise: Optional[float],
    scaled_noise: Optional[float],
    kernel_noise: Optional[float] = None,
    span_min_h: float = HISTORY_SPAN_H,
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
            v = scaled_verdict(
                m, same, min_change, cpp_noise if scaled_noise is None else scaled_noise, span_min_h
            )
            if v is not None:  # the figure as measured where its history is the steadier one
                raw_same, raw_far = alike(m, hist)
                if (raw := steadier_raw(m, raw_same, v, min_change, cpp_noise, span_min_h)) is not None:
                    key, same, far, v = CPP_KEY, raw_same, raw_far, raw
            if v is None:
                key, (same, far) = CPP_KEY, alike(m, hist)
                past = [v for v in (run_value(h, metric) for h in same) if v is not None]
                v = cpp_verdict(m, same, past, cur, min_change, cpp_noise, span_min_h)
            if far:  # a rise is not a verdict; no rise (or no far history) says why too
                v = replace(v, verdict="inconclusive" if v.verdict == "regression" else v.verdict, note=far)
            elif rests_where(m, key) == "far":
                v = replace(v, note="; ".join(filter(None, [f"against {v.history_len} far run(s)", v.note])))
            out.append(replace(v, test=rec.get("name", rec["longname"])))
            # a polling SUT's busy cycles per kernel cycle: every run counts (cycles.py)
            pk = per_kernel_verdict(m, hist, min_change, kernel_noise, span_min_h)
            if pk is not None:  # a rise the SUT's own cycles do not carry is the reference's
                out.append(replace(unshared_rise(pk, v), test=rec.get("name", rec["longname"])))
            continue
        declared = mrr_noise if metric == "mrr_pps" else noise
        # throughput measured in a slow host phase is the host's: not a reference (history.py)
        used, past = with_values([h for h in hist if not slow_host(h)], metric)
        cur_l = cur if isinstance(cur, list) else [cur]
        v = classify_current(past, cur_l, min_change, declared, span_h=span_h(used), span_min_h=span_min_h)
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


def compare(
    outdir: str, store: str, min_change: float = 0.03, history_span_h: Optional[float] = None
) -> List[Verdict]:
    out = []
    for rec in load_records(outdir):
        out.extend(verdicts_for(rec, store, min_change, history_span_h=history_span_h))
    return out
