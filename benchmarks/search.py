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

Error = found / truth - 1 in %; the table shows its median and its p10..p90 spread
(p90 - p10, percentage points). ``trials`` counts all trials, ``full`` those of 60 s
(the full length) or more. Simulated time = trial durations + 0.5 s per trial
(MLRsearch's ``search_duration_max`` is wall clock and is set out of the way; it
plays no part here). ``x floor`` divides the mean time by the floor of one 60 s
trial per bound (2 x 60.5 s = 121 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any, Dict, List, Sequence, Tuple

from dpgate.search import find_ndr_pdr
from dpgate.search.simulated import KINDS, MAX_RATE, MIN_RATE, make_sut, truths

FLOOR_S = 2 * (60.0 + 0.5)

#: name -> (profile, overrides)
SEARCHES: Dict[str, Tuple[str, Dict[str, Any]]] = {
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


Run = Tuple[float, float, int, float, int]


def run_kind(kind: str, reps: int, seed0: int) -> Dict[str, List[Run]]:
    """Return search name -> [(ndr, pdr, trials, sim_time, full_trials)] over repetitions."""
    out: Dict[str, List[Run]] = {name: [] for name in SEARCHES}
    for rep in range(reps):
        seed = seed0 + rep
        for name, (profile, overrides) in SEARCHES.items():
            sut = make_sut(kind, seed=seed)
            r = find_ndr_pdr(sut.measure, MIN_RATE, MAX_RATE, profile=profile, **overrides)
            full = sum(1 for _, d, _ in r.trials if d >= 60.0)
            out[name].append((r.ndr or 0.0, r.pdr or 0.0, r.trial_count, r.total_time_s, full))
    return out


def _row(label: str, kind: str, runs: List[Run], t_ndr: float, t_pdr: float) -> List[str]:
    ndr_err = [(n / t_ndr - 1) * 100 for n, _, _, _, _ in runs]
    pdr_err = [(p / t_pdr - 1) * 100 for _, p, _, _, _ in runs]
    trials = [t for _, _, t, _, _ in runs]
    times = [s for _, _, _, s, _ in runs]
    full = [f for _, _, _, _, f in runs]
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
        f"{statistics.mean(times) / FLOOR_S:.2f}",
    ]


def main(argv: Sequence[str] = ()) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=100, help="seeded repetitions per kind (default 100)")
    ap.add_argument("--kinds", default=",".join(KINDS), help=f"comma-separated, from {','.join(KINDS)}")
    ap.add_argument("--seed", type=int, default=1, help="first seed (default 1)")
    args = ap.parse_args(list(argv) or None)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        ap.error(f"unknown kind(s) {', '.join(unknown)}; accepted: {', '.join(KINDS)}")

    started = time.monotonic()
    header = ["kind", "search", "NDR med%", "NDR p10-90", "PDR med%", "PDR p10-90", "trials", "full", "time s", "x floor"]
    rows: List[List[str]] = []
    total_time: Dict[str, float] = {name: 0.0 for name in SEARCHES}
    truth_lines: List[str] = []
    misses: List[str] = []
    for i, kind in enumerate(kinds):
        results = run_kind(kind, args.reps, args.seed + 1000 * i)
        t60, t1 = truths(kind, duration=60.0), truths(kind, duration=1.0)
        truth_lines.append(
            f"  {kind:<8} 60 s: NDR {t60[0] / 1e6:.4f} PDR {t60[1] / 1e6:.4f} Mpps;"
            f"  1 s: NDR {t1[0] / 1e6:.4f} PDR {t1[1] / 1e6:.4f} Mpps"
        )
        for name, runs in results.items():
            rows.append(_row(name, kind, runs, *t60))
            total_time[name] += statistics.mean(s for _, _, _, s, _ in runs)
        rows.append(_row("per-commit@1s", kind, results["per-commit"], *t1))
        so = rows[-2]  # sign-off row: kind, name, ndr med, ndr spread, pdr med, pdr spread
        for label, value, limit in (
            ("NDR median", abs(float(so[2])), 1.0),
            ("NDR spread", float(so[3]), 3.0),
            ("PDR median", abs(float(so[4])), 0.5),
            ("PDR spread", float(so[5]), 1.0),
        ):
            if value > limit:
                misses.append(f"{kind} {label} {value:.2f} > {limit}")

    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    def fmt(cells: List[str]) -> str:
        return "  ".join(c.ljust(w) if j < 2 else c.rjust(w) for j, (c, w) in enumerate(zip(cells, widths)))
    print(f"NDR/PDR search benchmark: {args.reps} seeded repetitions per kind; "
          f"errors vs the 60 s truth (per-commit@1s: vs the 1 s truth)")
    print(fmt(header))
    print(fmt(["-" * w for w in widths]))
    last = None
    for r in rows:
        if last is not None and r[0] != last:
            print()
        print(fmt(r))
        last = r[0]
    floor = FLOOR_S * len(kinds)
    print()
    print("truth (highest load where one trial of that length passes with P >= 0.5):")
    print("\n".join(truth_lines))
    print()
    print("mean simulated time summed over kinds (floor: one 60 s trial per bound "
          f"= {floor:.0f} s):")
    for name, t in total_time.items():
        print(f"  {name:<15} {t:8.0f} s  = {t / floor:.2f} x floor")
    if total_time["sign-off"] > 1.5 * floor:
        misses.append(f"time {total_time['sign-off'] / floor:.2f} x floor > 1.5")
    print("sign-off vs issue 8 targets (NDR |median| <= 1 %, spread <= 3 %; PDR |median| <= 0.5 %, "
          "spread <= 1 %; time <= 1.5 x floor): " + ("all met" if not misses else "missed: " + "; ".join(misses)))
    print(f"(wall time {time.monotonic() - started:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
