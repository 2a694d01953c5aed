#!/usr/bin/env python3
"""Compare NDR/PDR search profiles on simulated SUTs: bias, spread, trials, time.

    python3 benchmarks/search.py                 # 100 repetitions per kind
    python3 benchmarks/search.py --reps 20 --kinds hard,stalls

Models and their truths are in ``dpgate.search.simulated``. Truth is the 60 s
definition: the highest load at which one 60 s trial meets the loss goal with
probability >= 0.5 (analytic, or dense Monte Carlo). ``per-commit`` is also scored
against its own 1 s truth (row ``per-commit@1s``), since 1 s trials answer that
question. Every search of repetition ``r`` faces a SUT built with the same seed, so
all searches see the same random stream.

``stall-family`` is one row over draws of :mod:`dpgate.search.stall_family` (one stall
SUT drawn per repetition, each scored against its own truth); its ``x floor`` is the
median time over the floor, and the lines under the table give the pass probability
of one 60 s trial at the NDR each search found (0.5 at the truth) and the spread an
oracle that knows each draw's exact loss-versus-load curve would still have with 240 s
or 600 s of exposure at the answer (the Poisson limit of counting its events). The
family is also split by draw (rows ``family-resolv`` and ``family-flat``): draws on
which that oracle's own p10..p90 with 240 s is within 3 % (60 s trials can place the
NDR to the target) and the rest, whose pass probability falls too slowly with load.

Error = found / truth - 1 in %; the table shows its median and its p10..p90 spread
(p90 - p10, percentage points). ``trials`` counts all trials, ``full`` those of 60 s
(the full length) or more. Simulated time = trial durations + 0.5 s per trial
(MLRsearch's ``search_duration_max`` is wall clock and is set out of the way; it
plays no part here). ``x floor`` divides the mean time by the floor of one 60 s
trial per bound (2 x 60.5 s = 121 s).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from dpgate.search import find_ndr_pdr
from dpgate.search.simulated import KINDS, MAX_RATE, MIN_RATE, make_sut, poisson, truths
from dpgate.search.stall_family import draw_stall_sut, resolvable

FAMILY = "stall-family"
#: the family split by draw: 240 s of counting at the truth can place the NDR within 3 %
#: p10-p90 (``stall_family.resolvable``), or cannot (the pass probability is flat in load)
SPLIT = {True: "family-resolv", False: "family-flat"}
ALL_KINDS = list(KINDS) + [FAMILY]

FLOOR_S = 2 * (60.0 + 0.5)

#: name -> (profile, overrides)
SEARCHES: dict[str, tuple[str, dict[str, Any]]] = {
    "per-commit": ("per-commit", {}),
    "mlr-rfc2544": ("per-commit", {"final_trial_duration": 60.0, "duration_sum": 60.0, "exceed_ratio": 0.0}),
    "rfc2544-binary": ("rfc2544-binary", {}),
    "sign-off": ("sign-off", {}),
}


def _quantile(values: Sequence[float], q: float) -> float:
    v = sorted(values)
    pos = q * (len(v) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


#: (ndr, pdr, trials, sim_time, full_trials, 60 s truths, 1 s truths, pass probability,
#: NDR bracket: 0 none, 1 open and consistent with the 60 s truth, 2 closed around it, -1 wrong)
Run = tuple[float, float, int, float, int, tuple[float, float], tuple[float, float], float, int]


def _bracket(bracket: Any, truth: float) -> int:
    if bracket is None or bracket == (None, None):
        return 0
    low, high = bracket
    if (low is not None and low > truth * (1 + 1e-9)) or (high is not None and high < truth * (1 - 1e-9)):
        return -1
    return 2 if low is not None and high is not None else 1


def _sut(kind: str, seed: int) -> Any:
    return draw_stall_sut(seed) if kind == FAMILY else make_sut(kind, seed=seed)


def run_kind(kind: str, reps: int, seed0: int) -> dict[str, list[Run]]:
    """Return search name -> [Run] over repetitions."""
    out: dict[str, list[Run]] = {name: [] for name in SEARCHES}
    fixed = None if kind == FAMILY else (truths(kind, duration=60.0), truths(kind, duration=1.0))
    for rep in range(reps):
        seed = seed0 + rep
        if fixed is None:
            sut = draw_stall_sut(seed)
            t60 = (sut.truth(0.0, 60.0), sut.truth(0.005, 60.0))
            t1 = (sut.truth(0.0, 1.0), sut.truth(0.005, 1.0))
        else:
            t60, t1 = fixed
        for name, (profile, overrides) in SEARCHES.items():
            sut = _sut(kind, seed)
            r = find_ndr_pdr(sut.measure, MIN_RATE, MAX_RATE, profile=profile, **overrides)
            full = sum(1 for _, d, _ in r.trials if d >= 60.0)
            p_pass = _pass_probability(sut, r.ndr or 0.0) if kind == FAMILY else 0.5
            out[name].append(
                (
                    r.ndr or 0.0,
                    r.pdr or 0.0,
                    r.trial_count,
                    r.total_time_s,
                    full,
                    t60,
                    t1,
                    p_pass,
                    _bracket(r.ndr_bracket, t60[0]),
                )
            )
    return out


def _pass_probability(sut: Any, load: float) -> float:
    """P(one 60 s trial at ``load`` loses nothing) on a stall-family SUT."""
    if load > sut.capacity:
        return 0.0
    return math.exp(-sut.lossy_clusters(load, 60.0))


def oracle_spread(reps: int, seed0: int, exposure_s: float = 240.0) -> tuple[float, float, float]:
    """(p10, median, p90) NDR error in % of an oracle that knows each draw's curve of lossy
    events against load up to its scale and counts events for ``exposure_s`` at the truth."""
    rng = random.Random(seed0)
    errors = []
    for rep in range(reps):
        sut = draw_stall_sut(seed0 + rep)
        truth = sut.truth(0.0, 60.0)
        lam = sut.lossy_clusters(truth, 60.0)
        k = (poisson(rng, lam * exposure_s / 60.0) + 0.5) / (lam * exposure_s / 60.0)
        lo, hi = MIN_RATE, sut.capacity
        if k * sut.lossy_clusters(hi, 60.0) <= math.log(2.0):
            lo = hi
        for _ in range(60 if lo < hi else 0):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if k * sut.lossy_clusters(mid, 60.0) <= math.log(2.0) else (lo, mid)
        errors.append((lo / truth - 1) * 100)
    return _quantile(errors, 0.1), _quantile(errors, 0.5), _quantile(errors, 0.9)


def _pair(v: object) -> tuple[float, float]:
    """A run's (NDR, PDR) reference at its index ``which`` (5 or 6: always a pair)."""
    assert isinstance(v, tuple), v
    return v


def _row(label: str, kind: str, runs: list[Run], which: int = 5) -> list[str]:
    ndr_err = [(r[0] / _pair(r[which])[0] - 1) * 100 for r in runs]
    pdr_err = [(r[1] / _pair(r[which])[1] - 1) * 100 for r in runs]
    trials = [r[2] for r in runs]
    times = [r[3] for r in runs]
    full = [r[4] for r in runs]
    family = kind == FAMILY or kind in SPLIT.values()
    t_ratio = (statistics.median(times) if family else statistics.mean(times)) / FLOOR_S
    return [
        kind,
        label,
        f"{statistics.median(ndr_err):+.2f}",
        f"{_quantile(ndr_err, 0.9) - _quantile(ndr_err, 0.1):.2f}",
        f"{statistics.median(pdr_err):+.2f}",
        f"{_quantile(pdr_err, 0.9) - _quantile(pdr_err, 0.1):.2f}",
        f"{statistics.mean(trials):.1f}",
        f"{statistics.mean(full):.1f}",
        f"{statistics.mean(times):.0f}",
        f"{t_ratio:.2f}",
    ]


def main(argv: Sequence[str] = ()) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=100, help="seeded repetitions per kind (default 100)")
    ap.add_argument(
        "--kinds", default=",".join(ALL_KINDS), help=f"comma-separated, from {','.join(ALL_KINDS)}"
    )
    ap.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    args = ap.parse_args(list(argv) or None)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown:
        ap.error(f"unknown kind(s) {', '.join(unknown)}; accepted: {', '.join(ALL_KINDS)}")

    started = time.monotonic()
    header = [
        "kind",
        "search",
        "NDR med%",
        "NDR p10-90",
        "PDR med%",
        "PDR p10-90",
        "trials",
        "full",
        "time s",
        "x floor",
    ]
    rows: list[list[str]] = []
    total_time: dict[str, float] = {name: 0.0 for name in SEARCHES}
    truth_lines: list[str] = []
    misses: list[str] = []
    family_lines: list[str] = []
    for i, kind in enumerate(kinds):
        results = run_kind(kind, args.reps, args.seed + 1000 * i)
        if kind == FAMILY:
            for name, runs in results.items():
                pp = [r[7] for r in runs]
                family_lines.append(
                    f"  {name:<15} P(60 s pass at its NDR) p10 {_quantile(pp, 0.1):.2f}  median "
                    f"{statistics.median(pp):.2f}  p90 {_quantile(pp, 0.9):.2f}"
                )
            for exposure in (240.0, 600.0):
                o10, o50, o90 = oracle_spread(args.reps, args.seed + 1000 * i, exposure)
                family_lines.append(
                    f"  oracle (exact curve, {exposure:.0f} s of events counted at the truth): "
                    f"NDR median {o50:+.2f} %, p10-90 {o90 - o10:.2f}"
                )
        else:
            t60, t1 = results["sign-off"][0][5], results["sign-off"][0][6]
            truth_lines.append(
                f"  {kind:<8} 60 s: NDR {t60[0] / 1e6:.4f} PDR {t60[1] / 1e6:.4f} Mpps;"
                f"  1 s: NDR {t1[0] / 1e6:.4f} PDR {t1[1] / 1e6:.4f} Mpps"
            )
        for name, runs in results.items():
            rows.append(_row(name, kind, runs))
            if kind != FAMILY:
                total_time[name] += statistics.mean(r[3] for r in runs)
        rows.append(_row("per-commit@1s", kind, results["per-commit"], which=6))
        checked = [rows[-2]]
        if kind == FAMILY:
            flags = [resolvable(draw_stall_sut(args.seed + 1000 * i + rep)) for rep in range(args.reps)]
            for flag, label in SPLIT.items():
                if any(f is flag for f in flags):
                    for name, runs in results.items():
                        rows.append(_row(name, label, [r for r, f in zip(runs, flags) if f is flag]))
                    checked.append(rows[-1])  # sign-off: the last of SEARCHES
            for flag, label in SPLIT.items():
                br = [r[8] for r, f in zip(results["sign-off"], flags) if f is flag]
                if br:
                    family_lines.append(
                        f"  sign-off ndr_bracket on {label}: closed around the truth "
                        f"{100 * br.count(2) / len(br):.0f} %, open on one side and consistent "
                        f"{100 * br.count(1) / len(br):.0f} %, excluding it {100 * br.count(-1) / len(br):.0f} %"
                    )
            family_lines.append(
                f"  {SPLIT[True]}: the {sum(flags)} draws where that oracle's own p10-90 is <= 3 %; "
                f"{SPLIT[False]}: the other {len(flags) - sum(flags)} (flat pass probability)"
            )
        for so in checked:  # sign-off row: kind, name, ndr med, ndr spread, pdr med, pdr spread
            k = so[0]
            if k != kind and k not in SPLIT.values():
                continue
            if (k == FAMILY or k in SPLIT.values()) and float(so[9]) > 2.5:
                misses.append(f"{k} median time {so[9]} x floor > 2.5")
            for label, value, limit in (
                ("NDR median", abs(float(so[2])), 1.0),
                ("NDR spread", float(so[3]), 3.0),
                ("PDR median", abs(float(so[4])), 0.5),
                ("PDR spread", float(so[5]), 1.0),
            ):
                if value > limit:
                    misses.append(f"{k} {label} {value:.2f} > {limit}")

    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if j < 2 else c.rjust(w) for j, (c, w) in enumerate(zip(cells, widths)))

    print(
        f"NDR/PDR search benchmark: {args.reps} seeded repetitions per kind; "
        f"errors vs the 60 s truth (per-commit@1s: vs the 1 s truth)"
    )
    print(fmt(header))
    print(fmt(["-" * w for w in widths]))
    last = None
    for r in rows:
        if last is not None and r[0] != last:
            print()
        print(fmt(r))
        last = r[0]
    floor = FLOOR_S * len([k for k in kinds if k != FAMILY])
    print()
    print("truth (highest load where one trial of that length passes with P >= 0.5):")
    print("\n".join(truth_lines))
    if family_lines:
        print(f"{FAMILY} (truth per draw; x floor is the median):")
        print("\n".join(family_lines))
    print()
    print(
        f"mean simulated time summed over the five kinds (floor: one 60 s trial per bound = {floor:.0f} s):"
    )
    for name, t in total_time.items():
        print(f"  {name:<15} {t:8.0f} s  = {t / max(floor, 1e-9):.2f} x floor")
    if floor and total_time["sign-off"] > 1.5 * floor:
        misses.append(f"time {total_time['sign-off'] / floor:.2f} x floor > 1.5")
    print(
        "sign-off vs issue 8/16 targets (NDR |median| <= 1 %, spread <= 3 %; PDR |median| <= 0.5 %, "
        "spread <= 1 %; time <= 1.5 x floor, stall-family median <= 2.5 x): "
        + ("all met" if not misses else "missed: " + "; ".join(misses))
    )
    print(f"(wall time {time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
