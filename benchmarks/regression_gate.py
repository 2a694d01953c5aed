"""Regression gate on synthetic histories: false alarms on unchanged data, detection of steps.

    python3 benchmarks/regression_gate.py [--checks 1000] [--history 30] [--samples 3]

Each check: a history of --history runs with 1 % Gaussian noise (one value per run), then
the current run (--samples samples, 1 % noise) either unchanged or stepped down by 3, 5,
10 %. Verdict by dpgate.compare.classify_current (jumpavg + 3 % minimum change).
Targets (issue 6): false alarms < 1 % of checks, detection of -5 % >= 95 %.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "libraries"))

from dpgate.compare import classify_current  # noqa: E402


def run(checks: int, history: int, samples: int, noise: float, seed: int = 7):
    rng = random.Random(seed)
    rows = []
    for step in (0.0, -0.03, -0.05, -0.10):
        flagged = 0
        for _ in range(checks):
            hist = [1e6 * (1 + rng.gauss(0, noise)) for _ in range(history)]
            cur = [1e6 * (1 + step) * (1 + rng.gauss(0, noise)) for _ in range(samples)]
            if classify_current(hist, cur).verdict == "regression":
                flagged += 1
        rows.append((step, flagged / checks))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checks", type=int, default=1000)
    ap.add_argument("--history", type=int, default=30)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--noise", type=float, default=0.01)
    a = ap.parse_args()
    t0 = time.time()
    rows = run(a.checks, a.history, a.samples, a.noise)
    print(f"regression gate: {a.checks} checks per row, history {a.history} runs, {a.samples} samples per "
          f"current run, noise {a.noise:.0%}, min change 3 %")
    print(f"{'step':>6s}  {'flagged as regression':>22s}  target")
    for step, rate in rows:
        target = "< 1 % (false alarms)" if step == 0 else (">= 95 %" if step == -0.05 else "")
        print(f"{step:+6.0%}  {rate:>21.1%}   {target}")
    fa, det5 = rows[0][1], rows[2][1]
    print(f"false alarms {'OK' if fa < 0.01 else 'MISSED'}; -5 % detection {'OK' if det5 >= 0.95 else 'MISSED'}"
          f"  ({time.time() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
