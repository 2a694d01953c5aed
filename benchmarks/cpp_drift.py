#!/usr/bin/env python3
"""Where does ``cpp_at_load``'s run-to-run drift come from? Real testbed, real SUTs.

    sudo .venv/bin/python benchmarks/cpp_drift.py --blocks testpmd-io:72kpps testpmd-mac:37.5kpps \\
        testpmd-mac:37.5kpps:10 [--rounds 16] [--trials 8] [--duration 2] [--out drift.jsonl]

Each round brings up every block in turn (``SUT:load[:injected %]``: a fresh testbed and SUT,
measured as the gate measures ``cpp_at_load``: ports moderated for the load, a kernel SUT's
core held awake) and runs ``--trials`` trials at its load. Every trial's cycles per packet
(a polling SUT's own busy-cycle report, a kernel SUT's CPU time) is scaled to the reference
core speed as ``cpp_at_load_scaled`` is. It prints, per block kind, the spread of the
rounds' medians and how much of it the trials' own scatter explains; against the first kind,
the correlation of the rounds' medians and the spread of their ratio (a reference data plane
measured in the same minutes cancels a host drift only if that correlation is high); and,
within each bring-up, how the scatter of ``n``-trial means falls with ``n`` against white
noise's ``1/sqrt(n)`` and the trials' autocorrelation (how long the host's phases last).
``--out`` keeps every trial as JSON lines; ``--analyse FILE`` prints the tables of one again.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from collections import defaultdict
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "libraries"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling benchmark cpp_at_load

from cpp_at_load import held, spread  # noqa: E402  (the gate's way of measuring; max/min - 1)

from dpgate.config.units import parse_rate  # noqa: E402
from dpgate.model.errors import ConfigError  # noqa: E402

Block = Tuple[str, float, float]  # SUT, load (pps), injected cost (%)


def parse_block(spec: str) -> Block:
    """``SUT:load[:percent]`` as (SUT, pps, percent).

    >>> parse_block("testpmd-mac:37.5kpps:10")
    ('testpmd-mac', 37500.0, 10.0)
    >>> parse_block("linux-ip4")
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: blocks: 'linux-ip4' is not SUT:load[:percent] (e.g. linux-ip4:167.5kpps)
    """
    parts = spec.split(":")
    if len(parts) not in (2, 3) or not parts[0]:
        raise ConfigError(f"{spec!r} is not SUT:load[:percent] (e.g. linux-ip4:167.5kpps)", path="blocks")
    return parts[0], parse_rate(parts[1], "blocks").resolve(None), float(parts[2]) if len(parts) == 3 else 0.0


def kind_name(block: Block) -> str:
    """A block's name in the tables.

    >>> kind_name(("testpmd-mac", 37500.0, 10.0))
    'testpmd-mac+10%'
    """
    return f"{block[0]}+{block[2]:g}%" if block[2] else block[0]


def scaled(row: dict, exponent: float, ref: float = 30.0) -> Optional[float]:
    """A trial's cycles per packet at the reference speed (``cpp_at_load_scaled``'s rule).

    >>> scaled({"cpp": 10000.0, "speed": 15.0}, 0.25)
    8408.96
    >>> scaled({"cpp": None, "speed": 15.0}, 0.25) is None
    True
    """
    cpp, speed = row.get("cpp"), row.get("speed")
    if not cpp or not speed or speed <= 0:
        return None
    return round(float(cpp) * (float(speed) / ref) ** exponent, 2)


def sequences(rows: Iterable[dict]) -> Dict[str, Dict[int, List[float]]]:
    """Scaled trials per kind and round, in the order measured (rows carry ``value``)."""
    out: Dict[str, Dict[int, List[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("value"):
            out[r["kind"]][int(r["round"])].append(float(r["value"]))
    return out


def rel_sd(values: Sequence[float]) -> Optional[float]:
    """Sample sd / mean.

    >>> round(rel_sd([90.0, 100.0, 110.0]), 3)
    0.1
    """
    return statistics.stdev(values) / statistics.fmean(values) if len(values) >= 2 else None


def window_sd(seqs: Sequence[Sequence[float]], n: int) -> Tuple[Optional[float], Optional[float]]:
    """(sd of the means of consecutive ``n``-trial windows within each sequence, what white
    noise would give: the trials' sd / sqrt(n)), both relative to the mean of all trials.

    A drift that lasts longer than the windows keeps the first above the second:

    >>> window_sd([[1.0, 1.0, 3.0, 3.0], [1.0, 1.0, 3.0, 3.0]], 2)[0] > window_sd([[1.0, 3.0, 1.0, 3.0]] * 2, 2)[0]
    True
    """
    allv = [v for s in seqs for v in s]
    means = [statistics.fmean(s[i : i + n]) for s in seqs for i in range(0, len(s) - n + 1, n)]
    if len(means) < 2 or len(allv) < 2:
        return None, None
    m = statistics.fmean(allv)
    return statistics.stdev(means) / m, statistics.stdev(allv) / m / math.sqrt(n)


def autocorrelation(seqs: Sequence[Sequence[float]], lag: int) -> Optional[float]:
    """Correlation of log trials ``lag`` apart within each sequence (each centred on its own mean).

    >>> round(autocorrelation([[1.0, 1.1, 1.2, 1.3, 1.4, 1.5]], 1), 2)
    0.78
    """
    xs: List[float] = []
    ys: List[float] = []
    for s in seqs:
        logs = [math.log(v) for v in s]
        mu = statistics.fmean(logs)
        c = [v - mu for v in logs]
        xs += c[:-lag]
        ys += c[lag:]
    if len(xs) < 3:
        return None
    den = math.sqrt(sum(x * x for x in xs) * sum(y * y for y in ys))
    return sum(x * y for x, y in zip(xs, ys)) / den if den else None


def paired(
    ref: Dict[int, List[float]], other: Dict[int, List[float]]
) -> Tuple[Optional[float], Optional[float]]:
    """(correlation of the log round medians of two kinds, relative sd of their ratio), over
    the rounds both have. A common-mode drift gives a high correlation and a ratio steadier
    than either kind:

    >>> ref = {0: [100.0], 1: [110.0], 2: [95.0], 3: [105.0]}
    >>> corr, ratio_sd = paired(ref, {r: [2 * v[0]] for r, v in ref.items()})
    >>> round(corr, 2), round(ratio_sd, 3)
    (1.0, 0.0)
    """
    rounds = sorted(set(ref) & set(other))
    if len(rounds) < 3:
        return None, None
    a = [math.log(statistics.median(ref[r])) for r in rounds]
    b = [math.log(statistics.median(other[r])) for r in rounds]
    try:
        corr: Optional[float] = statistics.correlation(a, b)
    except statistics.StatisticsError:  # one of them constant
        corr = None
    return corr, rel_sd([math.exp(y - x) for x, y in zip(a, b)])


def report(rows: List[dict], lags: Sequence[int] = (1, 2, 4, 8)) -> List[str]:
    """The printed tables for recorded trials (see the module's docstring)."""
    seqs = sequences(rows)
    kinds = list(seqs)
    pct = lambda v: "-" if v is None else f"{100 * v:.1f} %"  # noqa: E731
    out = ["kind                  rounds  median   rounds' medians sd / spread   trial sd   trials explain"]
    for k in kinds:
        per = seqs[k]
        meds = [statistics.median(v) for v in per.values()]
        within = [rel_sd(v) for v in per.values() if len(v) >= 2]
        w = statistics.fmean([x for x in within if x is not None]) if within else None
        n = statistics.median(len(v) for v in per.values())
        explain = 1.25 * w / math.sqrt(n) if w else None  # sd of a median ~ 1.25 sd / sqrt(n)
        out.append(
            f"{k:20s}  {len(meds):6d}  {statistics.median(meds):7.0f}   {pct(rel_sd(meds)):>9s} / {pct(spread(meds)):>8s}"
            f"         {pct(w):>8s}   {pct(explain):>8s}"
        )
    for k in kinds[1:]:
        corr, ratio_sd = paired(seqs[kinds[0]], seqs[k])
        c = "-" if corr is None else f"{corr:+.2f}"
        out.append(f"{k} against {kinds[0]}: correlation of round medians {c}, ratio sd {pct(ratio_sd)}")
    for k in kinds:
        s = list(seqs[k].values())
        longest = max(len(v) for v in s)
        sizes = [n for n in (1, 2, 4, 8, 16, 32, 64) if n <= longest // 2 or n == 1]
        cells = []
        for n in sizes:
            seen, white = window_sd(s, n)
            cells.append(f"{n}: {pct(seen)} ({pct(white)})")
        acf = ", ".join(f"lag {lag} {a:+.2f}" for lag in lags if (a := autocorrelation(s, lag)) is not None)
        out.append(f"{k}: sd of n-trial means within a bring-up (white noise's): {'; '.join(cells)}")
        out.append(f"{k}: autocorrelation of trials: {acf or '-'}")
    return out


def tg_row(row: dict, t, tg_cpus: Sequence[int], tg_s: float) -> Optional[dict]:
    """The generator's side of the same trial as a kind of its own (``<kind>:tg``): its time
    inside ``sendmmsg`` (``tg_s``: dpgen's ``send_ns`` with ``DPGEN_TIME_SEND`` set; the rest of
    its run time is the pacing spin) per frame sent, relative to the SUT's run time per frame
    forwarded (``sut_own_s / rx`` over ``tg_s / tx``: the kernel's transmit work on the other
    core as a reference measured in the same seconds), with both times kept.

    >>> class T:
    ...     tx_packets, rx_packets = 1000, 1000
    ...     details = {"cpu": {"sut_own_s": 0.4}, "core_speeds": {"0": 20.0}}
    >>> tg_row({"round": 0, "kind": "linux-ip4", "trial": 0, "time": 1.0}, T(), [0], 0.2)["value"]
    2.0
    """
    cpu = t.details.get("cpu") or {}
    sut_s = cpu.get("sut_own_s")
    if not sut_s or not tg_s or not t.tx_packets or not t.rx_packets:
        return None
    speeds = t.details.get("core_speeds") or {}
    speed = speeds.get(tg_cpus[0], speeds.get(str(tg_cpus[0])))  # int keys, str once stored
    return {
        **{k: row[k] for k in ("round", "trial", "time")},
        "kind": f"{row['kind']}:tg",
        "sut_own_s": sut_s,
        "tg_own_s": tg_s,
        "tx": t.tx_packets,
        "rx": t.rx_packets,
        "tg_speed": speed,
        "sut_speed": row.get("speed"),
        "value": round((sut_s / t.rx_packets) / (tg_s / t.tx_packets), 4),
    }


def measure_block(block: Block, trials: int, duration: float, prefix: str, rnd: int, sink) -> None:
    from dpgate.exec.hostcpu import cpu_model
    from dpgate.telemetry.disturbance import speed_exponent
    from dpgate.testbeds.embedded.session import EmbeddedSession
    from dpgate.testbeds.embedded.suts.cost import inject_cost

    sut, load, inject = block
    with EmbeddedSession("topologies/embedded.yaml", sut, frame_size=64, prefix=prefix, calibrate=False) as s:
        polling = bool(getattr(s.sut, "polls", False))
        if inject:
            inject_cost(s.sut, inject)
        exponent = speed_exponent(polling, cpu_model())
        with held(s, True, load):
            for i in range(trials):
                t = s.measure(load, duration)
                done = getattr(s.generator, "last_done", None) or {}
                tg_s = sum(done.get("send_ns") or []) / 1e9  # dpgen with DPGEN_TIME_SEND
                row = {
                    "round": rnd,
                    "kind": kind_name(block),
                    "trial": i,
                    "time": round(time.time(), 3),
                    "cpp": t.sut_cycles_per_packet if polling else t.sut_cpu_cycles_per_packet,
                    "speed": t.details.get("sut_core_speed"),
                    "disturbance": (t.details.get("cpu") or {}).get("disturbance"),
                    "loss": t.loss_packets,
                }
                row["value"] = scaled(row, exponent)
                sink(row)
                tg = tg_row(row, t, s.testbed.tg_cpus, tg_s)
                if tg:
                    sink(tg)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--blocks", nargs="+", help="SUT:load[:injected percent], measured in this order each round"
    )
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--trials", type=int, default=8, help="trials per bring-up")
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--prefix", default="dr-")
    ap.add_argument("--out", help="JSON lines of every trial (default: none kept)")
    ap.add_argument("--analyse", help="print the tables of a recorded --out file and exit")
    a = ap.parse_args(argv)
    if a.analyse:
        with open(a.analyse) as f:
            print("\n".join(report([json.loads(line) for line in f if line.strip()])))
        return 0
    if not a.blocks:
        ap.error("--blocks (or --analyse FILE) is required")
    blocks = [parse_block(b) for b in a.blocks]
    rows: List[dict] = []
    out = open(a.out, "a") if a.out else None

    def sink(row: dict) -> None:
        rows.append(row)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()

    try:
        for rnd in range(a.rounds):
            for block in blocks:
                measure_block(block, a.trials, a.duration, a.prefix, rnd, sink)
            print(f"{time.strftime('%H:%M:%S')} round {rnd + 1}/{a.rounds} done", flush=True)
    except KeyboardInterrupt:
        print("interrupted: tables over the trials so far", flush=True)
    finally:
        if out:
            out.close()
    print("\n".join(report(rows)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
