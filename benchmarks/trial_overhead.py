#!/usr/bin/env python3
"""Framework overhead per embedded trial: real testbed, real SUT, back-to-back trials.

    sudo .venv/bin/python benchmarks/trial_overhead.py --sut linux-xconnect --prefix sg0- \\
        [--trials 20] [--rate 100kpps] [--duration 1] [--frame-size 64] \\
        [--generator auto|dpgen|tcpreplay] [--calibrate]

Overhead of a trial = the time between the ends of two consecutive trials minus the trial's
intended duration, measured exactly as trials.jsonl's ``time`` stamps would show it (the
search adds only its own arithmetic between trials). Prints median and p90, and, when the
generator records them, the median of each phase of ``TcpreplayGenerator.measure``
(``details.phases_ms``) and how long late packets kept arriving after the generator stopped
(``details.settle_ms``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Dict, List

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "libraries"))

from dpgate.config.units import parse_frame_size, parse_rate  # noqa: E402
from dpgate.testbeds.embedded.session import EmbeddedSession  # noqa: E402


def pct(values: List[float], q: float) -> float:
    """Nearest-rank percentile.

    >>> pct([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9)
    9
    """
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(q * len(s))) - 1))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sut", default="linux-xconnect")
    ap.add_argument("--prefix", default="sg0-")
    ap.add_argument("--topology", default="topologies/embedded.yaml")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--rate", default="100kpps")
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--frame-size", default="64")
    ap.add_argument("--generator", default="auto", choices=("auto", "dpgen", "tcpreplay"))
    ap.add_argument("--calibrate", action="store_true", help="also measure and print the generator ceiling")
    a = ap.parse_args(argv)
    ends: List[float] = []
    results = []

    def on_trial(r) -> None:
        ends.append(time.time())
        results.append(r)

    with EmbeddedSession(
        a.topology,
        a.sut,
        frame_size=parse_frame_size(a.frame_size),
        prefix=a.prefix,
        calibrate=a.calibrate,
        on_trial=on_trial,
        generator=a.generator,
    ) as s:
        if a.calibrate:
            cal = s.generator.calibration if s.generator else {}
            print(f"{s.tg_name} ceiling {s.max_pps:.0f} pps (probes {cal.get('samples_pps')})")
            ends.clear()
            results.clear()
        load = parse_rate(a.rate).resolve(None)
        t_first = time.time()
        for _ in range(a.trials):
            s.measure(load, a.duration)
    gaps = [(e - b) - a.duration for b, e in zip([t_first] + ends[:-1], ends)]
    ms = [g * 1e3 for g in gaps]
    print(
        f"[{a.generator}] {a.sut} {a.frame_size}B {a.rate} x {a.duration:g} s, {len(ms)} trials: overhead per trial "
        f"median {statistics.median(ms):.1f} ms, p90 {pct(ms, 0.9):.1f} ms, min {min(ms):.1f}, max {max(ms):.1f}"
    )
    phases: Dict[str, List[float]] = {}
    for r in results:
        for k, v in (r.details.get("phases_ms") or {}).items():
            phases.setdefault(k, []).append(v)
    if phases:
        print(
            "  phase medians (ms): " + ", ".join(f"{k} {statistics.median(v):.1f}" for k, v in phases.items())
        )
    settle = [r.details["settle_ms"] for r in results if r.details.get("settle_ms") is not None]
    if settle:
        print(
            f"  late packets: last rx counter change after the generator stopped: median "
            f"{statistics.median(settle):.2f} ms, max {max(settle):.2f} ms"
        )
    print("  per trial: loss, shortfall, disturbance, settle_ms, superseded")
    for r in results:
        print(
            f"    {r.loss_packets:7d} {r.tg_shortfall:7d} {r.disturbance!s:>7} {r.details.get('settle_ms')!s:>7} "
            f"{'yes' if r.details.get('superseded') else ''} {r.details.get('cpu', {}).get('foreign_share')}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
