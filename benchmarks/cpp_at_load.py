#!/usr/bin/env python3
"""Run-to-run spread of ``cpp_at_load`` per embedded SUT: real testbed, real SUTs.

    sudo .venv/bin/python benchmarks/cpp_at_load.py --prefix sg1- [--suts linux-xconnect,ovs-xconnect]
        [--runs 3] [--trials 3] [--load 60kpps] [--duration 2] [--inject-cost 0]
        [--gap 0] [--one-bringup] [--jsonl trials.jsonl]

Each run brings the testbed up from scratch (as a gate run does), starts the SUT and
measures ``--trials`` trials at the fixed ``--load``; the run's ``cpp_at_load`` is the median
over its trials of the SUT's own cycles per forwarded frame (``sut_cpu_cycles_per_packet``:
its processes' and NAPI threads' CPU time x core Hz / frames; trials of a slow phase of the
SUT core left out, as the gate does; for kernel SUTs also ``cpp_at_load_scaled``, every
trial scaled to the reference speed). Kernel SUTs run as in the gate: core held awake, NAPI
deferred (``--no-hold``/``--no-moderate`` to compare). Prints per SUT each run's
value, the spread (max/min - 1), the SUT-reported cycles where the SUT has them (and for a
polling SUT its busy cycles per kernel cycle, ``cpp_at_load_per_kernel``), and the
largest disturbance (foreign share of a core) seen, so a spread on a busy machine can be
told from a spread on a quiet one, and how much of the runs' spread their trials' own scatter
explains (the rest lies between bring-ups; with ``--one-bringup`` the runs are blocks of
trials in one bring-up, so what is left is the host's drift over time).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time
from typing import Iterator, List, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "libraries"))

from dpgate.config.units import parse_rate  # noqa: E402
from dpgate.exec.hostcpu import cpu_model  # noqa: E402
from dpgate.exec.xcore import placement  # noqa: E402
from dpgate.telemetry.cpp_scaled import memory_exponents  # noqa: E402
from dpgate.telemetry.disturbance import speed_exponent  # noqa: E402
from dpgate.telemetry.kernel_ref import cpp_per_kernel, per_kernel  # noqa: E402
from dpgate.telemetry.paired import SATURATED_FIELD  # noqa: E402
from dpgate.testbeds.embedded.session import EmbeddedSession  # noqa: E402


def spread(values: List[float]) -> Optional[float]:
    """max/min - 1 of positive values.

    >>> round(spread([100.0, 104.0, 102.0]), 3)
    0.04
    """
    vals = [v for v in values if v and v > 0]
    return (max(vals) / min(vals) - 1) if len(vals) >= 2 else None


@contextlib.contextmanager
def held(s: EmbeddedSession, hold: bool, load: float = 0.0):
    """As the gate measures cpp_at_load: the SUT core held awake (not for polling SUTs: they
    keep it awake) and, unless ``--no-moderate``, the SUT ports' NAPI deferred for ``load``."""
    if not hold or s.generator is None:
        yield
        return
    awake = s.generator.hold_sut_awake() if not getattr(s.sut, "polls", False) else contextlib.nullcontext()
    with awake:
        if load and MODERATE:
            with s.generator.moderate_sut(load):
                yield
        else:
            yield


MODERATE = True
FIELD = "sut_cpu_cycles_per_packet"


@contextlib.contextmanager
def up(sut: str, prefix: str, inject: float) -> Iterator[EmbeddedSession]:
    """The testbed brought up from scratch, as a gate run does, with ``inject`` % cost."""
    with EmbeddedSession("topologies/embedded.yaml", sut, frame_size=64, prefix=prefix, calibrate=False) as s:
        if inject:
            from dpgate.testbeds.embedded.suts.cost import inject_cost

            inject_cost(s.sut, inject)
        yield s


def bring_ups(sut: str, a, load: float) -> Iterator[Tuple[bool, list]]:
    """(polling, trials) per run: each run a new bring-up, or with ``--one-bringup`` every run
    a block of trials in the same bring-up (what is left of the runs' spread then is the
    host's drift over time, not the bring-up)."""

    def block(s: EmbeddedSession) -> Tuple[bool, list]:
        res = []
        with held(s, not a.no_hold, load):
            for i in range(a.trials):
                if i and a.gap:
                    time.sleep(a.gap)
                res.append(s.measure(load, a.duration))
        return bool(getattr(s.sut, "polls", False)), res

    if a.one_bringup:
        with up(sut, a.prefix, a.inject_cost) as s:
            for _ in range(a.runs):
                yield block(s)
        return
    for _ in range(a.runs):
        with up(sut, a.prefix, a.inject_cost) as s:
            got = block(s)
        yield got


def one_run(polling: bool, res: list):
    own = [r.sut_cpu_cycles_per_packet for r in res if r.sut_cpu_cycles_per_packet]
    rep = [r.sut_cycles_per_packet for r in res if r.sut_cycles_per_packet]
    from dpgate.telemetry.cpp_scaled import scaled_signal
    from dpgate.telemetry.disturbance import cpp_at_load
    from dpgate.telemetry.placement import xcore_signal

    return (
        cpp_at_load(res, polling=polling) if own or polling else None,
        statistics.median(rep) if rep else None,
        max((r.disturbance or 0.0) for r in res),
        sum(r.loss_packets for r in res),
        statistics.median([r.details.get("sut_core_speed") or 0.0 for r in res]),
        None  # as the gate scales it: by speed, and where measured by the memory probe too
        if polling
        else scaled_signal(
            res, speed_exponent(False, cpu_model()), memory_exponents(False, cpu_model()), FIELD
        ).get("cpp_at_load_scaled"),
        xcore_signal(res).get("xcore_rtt_ns"),
        cpp_per_kernel(res) if polling else None,
    )


def components(groups: List[List[float]]) -> Optional[Tuple[float, float, float, float]]:
    """Where a spread between runs comes from, on log values (so shares of the level): (a
    trial's sd within its run, the sd of the runs' means, the part of that the trials' own
    scatter explains (within / sqrt(n)), the rest: sd between runs beyond the trials' scatter).
    None with fewer than two runs of three values.

    >>> [round(x, 3) for x in components([[100.0, 110.0, 90.0], [100.0, 110.0, 90.0]])]
    [0.1, 0.0, 0.058, 0.0]
    >>> round(components([[100.0, 101.0, 99.0], [120.0, 121.0, 119.0]])[3], 2)
    0.13
    """
    logs = [[math.log(v) for v in g if v and v > 0] for g in groups]
    logs = [g for g in logs if len(g) >= 3]
    if len(logs) < 2:
        return None
    within = statistics.mean(statistics.variance(g) for g in logs)
    n = statistics.mean(len(g) for g in logs)
    between = statistics.variance([statistics.mean(g) for g in logs])
    return (
        math.sqrt(within),
        math.sqrt(between),
        math.sqrt(within / n),
        math.sqrt(max(0.0, between - within / n)),
    )


def dump(path: str, sut: str, run: int, polling: bool, res: list) -> None:
    """One JSON line per trial: what the run's figures rest on."""
    with open(path, "a") as f:
        for i, r in enumerate(res):
            d = r.details or {}
            row = {
                "sut": sut,
                "run": run,
                "trial": i,
                "polling": polling,
                "own": r.sut_cpu_cycles_per_packet,
                "rep": r.sut_cycles_per_packet,
                "speed": d.get("sut_core_speed"),
                "core_speeds": d.get("core_speeds"),
                "xcore_rtt_ns": d.get("xcore_rtt_ns"),
                "disturbance": r.disturbance,
                "loss": r.loss_packets,
                "rx": d.get("sut_rx_packets") or r.rx_packets,
                "kernel_s": (d.get("cpu") or {}).get("sut_kernel_s"),
            }
            f.write(json.dumps(row) + "\n")


def calibrate(
    sut: str, prefix: str, load: float, trials: int, duration: float, units: int, runs: int, hold=True
) -> None:
    """Within one bring-up, ``trials`` pairs of trials without and with ``units`` injection
    units (added before and removed after each second trial), so the host's drift within a
    bring-up cancels in each pair; prints the median pair difference per unit."""
    from dpgate.testbeds.embedded.suts import cost

    for _ in range(runs):
        pairs = []
        with EmbeddedSession(
            "topologies/embedded.yaml", sut, frame_size=64, prefix=prefix, calibrate=False
        ) as s:
            for _ in range(trials):
                with held(s, hold, load):
                    b = s.measure(load, duration)
                cost.inject_units(s.sut, units)
                try:
                    with held(s, hold, load):
                        h = s.measure(load, duration)
                finally:
                    cost.remove_injection(s.sut)
                pairs.append((b, h))
        # polling SUTs (testpmd): their own busy cycles; the others: their threads' CPU time
        # (l3fwd, OVS on af_packet ports: no report; at an overload --load their threads' CPU
        # time per forwarded frame is their cycles per packet at saturation)
        field = "sut_cycles_per_packet" if getattr(s.sut, "polls", False) else "sut_cpu_cycles_per_packet"
        if all(getattr(b, field) is None for b, _ in pairs):
            field = SATURATED_FIELD
        got = [(getattr(b, field), getattr(h, field), b, h) for b, h in pairs]
        got = [g for g in got if g[0] and g[1]]
        if not got:
            print(f"{sut:16s} no cycles per packet measured")
            continue
        base = statistics.median(g[0] for g in got)
        diff = statistics.median(g[1] - g[0] for g in got)
        speeds = [round(min(x.details.get("core_speeds", {"": 0}).values()), 1) for g in got for x in g[2:]]
        print(
            f"{sut:16s} base {base:7.0f}  +{units} units: {diff:+7.0f} ({diff / units:5.2f} cycles/unit, "
            f"{diff / base * 100:+.1f} %); pairs "
            + " ".join(f"{g[0]:.0f}/{g[1]:.0f}" for g in got)
            + f"; probe speeds {speeds}; max disturbance {max(x.disturbance or 0 for g in got for x in g[2:]):.2f}"
        )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--suts",
        default="linux-xconnect,linux-bridge,linux-ip4,testpmd-io,testpmd-mac,ovsdpdk-xconnect,ovs-afxdp-xconnect",
    )
    ap.add_argument("--prefix", default="sg1-")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--load", default="60kpps")
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--inject-cost", type=float, default=0.0, help="percent of per-packet cost to inject")
    ap.add_argument(
        "--calibrate-units",
        type=int,
        default=0,
        help="instead: measure what this many injection units add per packet",
    )
    ap.add_argument(
        "--no-hold", action="store_true", help="let the SUT core halt when idle (the gate holds it awake)"
    )
    ap.add_argument(
        "--no-moderate", action="store_true", help="no NAPI deferral on the SUT ports (the gate defers)"
    )
    ap.add_argument("--gap", type=float, default=0.0, help="seconds between a run's trials")
    ap.add_argument(
        "--one-bringup",
        action="store_true",
        help="every run a block of trials in one bring-up (the host's drift without the bring-up's)",
    )
    ap.add_argument("--jsonl", default="", help="append every trial to this file, one JSON line each")
    a = ap.parse_args(argv)
    global MODERATE
    MODERATE = not a.no_moderate
    load = parse_rate(a.load).resolve(None)
    if a.calibrate_units:
        for sut in a.suts.split(","):
            calibrate(sut, a.prefix, load, a.trials, a.duration, a.calibrate_units, a.runs, not a.no_hold)
        return 0
    print(
        f"cpp_at_load at {a.load}, {a.runs} runs x {a.trials} trials x {a.duration:g} s"
        + (f", injected +{a.inject_cost:g} %" if a.inject_cost else "")
    )
    for sut in a.suts.split(","):
        rows, groups = [], []
        kept = []
        for i, (polling, res) in enumerate(bring_ups(sut, a, load)):
            rows.append(one_run(polling, res))
            kept.append((polling, res))
            field = "sut_cycles_per_packet" if polling else "sut_cpu_cycles_per_packet"
            groups.append([getattr(r, field) for r in res])
            if a.jsonl:
                dump(a.jsonl, sut, i, polling, res)
        own = [r[0] for r in rows]
        rep = [r[1] for r in rows]
        sp = spread([v for v in own if v])
        print(
            f"{sut:16s} own cpp "
            + " ".join(f"{v:7.0f}" if v else "    n/a" for v in own)
            + (f"  spread {sp * 100:5.1f} %" if sp is not None else "")
        )
        rtts = [r[6] for r in rows]
        if any(rtts):  # where the host placed the TG and SUT cores (dpgate.exec.xcore)
            print(
                f"{'':16s} TG-SUT core round trip (ns) "
                + " ".join(f"{v:7.0f}" if v else "    n/a" for v in rtts)
            )
            for where in ("near", "far"):
                same = [v for v, t in zip(own, rtts) if v and placement(t) == where]
                sw = spread(same)
                if sw is not None:
                    print(
                        f"{'':16s} own cpp, {where} placement only ({len(same)} runs): spread {sw * 100:5.1f} %"
                    )
        if any(rep):
            sr = spread([v for v in rep if v])
            print(
                f"{'':16s} SUT-reported "
                + " ".join(f"{v:7.0f}" if v else "    n/a" for v in rep)
                + (f"  spread {sr * 100:5.1f} %" if sr is not None else "")
            )
        print(
            f"{'':16s} max disturbance per run "
            + " ".join(f"{r[2]:.2f}" for r in rows)
            + "  loss "
            + " ".join(str(r[3]) for r in rows)
        )
        comp = components(groups)
        if comp:  # is the runs' spread more than their trials' own scatter explains?
            w, m, e, x = (v * 100 for v in comp)
            print(
                f"{'':16s} a trial's sd {w:.1f} %, the runs' means' sd {m:.1f} % (the trials' scatter "
                f"explains {e:.1f} %): between {'blocks' if a.one_bringup else 'bring-ups'} beyond it {x:.1f} %"
            )
        scaled = [r[5] for r in rows]
        if any(scaled):  # kernel SUTs: every trial scaled to the reference speed (cpp_at_load_scaled)
            ss = spread([v for v in scaled if v])
            pair = memory_exponents(False, cpu_model())
            how = (
                f"speed^-{pair[0]:g} x memory ns^{pair[1]:g}"
                if pair
                else f"speed^-{speed_exponent(False, cpu_model()):g}"
            )
            mems = [
                statistics.median([r.details.get("sut_memory_ns") or 0.0 for r in res]) for _, res in kept
            ]
            if any(mems):
                print(f"{'':16s} memory probe (ns per element) " + " ".join(f"{m:.2f}" for m in mems))
            print(
                f"{'':16s} scaled (cpp_at_load_scaled, {how}) "
                + " ".join(f"{v:7.0f}" if v else "    n/a" for v in scaled)
                + (f"  spread {ss * 100:5.1f} %" if ss is not None else "")
            )
        per_k = [r[7] for r in rows]
        if any(per_k):  # polling SUTs: busy cycles per kernel cycle (cpp_at_load_per_kernel)
            sk = spread([v for v in per_k if v])
            ks = [[per_kernel(r) for r in res] for _, res in kept]
            comp_k = components([[v for v in g if v] for g in ks])
            print(
                f"{'':16s} per kernel cycle "
                + " ".join(f"{v:7.3f}" if v else "    n/a" for v in per_k)
                + (f"  spread {sk * 100:5.1f} %" if sk is not None else "")
                + (f"; a trial's sd {comp_k[0] * 100:.1f} %" if comp_k else "")
            )
        if any(r[4] for r in rows):
            print(f"{'':16s} SUT core speed (awake loop, M it/s) " + " ".join(f"{r[4]:.1f}" for r in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
