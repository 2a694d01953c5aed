#!/usr/bin/env python3
"""Lab on one machine benchmark: TRex itself, then (part 2, per NF) NDR/PDR/latency through TRex.

Part 1a, TRex rate accuracy: TRex v3.08 (software mode, ``low_end`` on CPU 0) with its two
ports looped back on CPU 1, over veth/af_packet (tc mirred) and over memif (DPDK testpmd io,
``--no-huge``). For each requested rate from 10 kpps up past the ceiling, one 64 B IPv4 trial
(port 0 -> loop -> port 1) of ``--duration`` s: sent/s = TRex opackets / intended duration,
the accuracy (sent / requested), rx/s, the trial's real duration (veth: TRex falls behind and
stretches; memif: low_end TRex drops when the ring is full) and the driver's verdict
(``limited_by``).

Part 1b, per-trial framework overhead: wall time of ``measure()`` minus the trial duration,
for TRex (clear stats, start, poll, rx delay, settle, stats) and for the embedded path's
tcpreplay (``--tcpreplay``, linux-xconnect SUT) at the same rate.

Part 1c (``--parts loop``), the latency path end to end: NDR/PDR of the loop itself through
TRex (per-commit search, bidirectional 64 B IPv4), then latency streams at 90/50/10 % of PDR:
min/avg/p50/p99/max (us) of the worse direction.

Part 2 (per NF and frame size NDR/PDR/latency through TRex) plugs in as ``PARTS["nf"]``:
a function ``(args) -> rows`` like the two here; the lab-local bring-up belongs to it.

Needs root and TRex (DPGATE_TREX or .ci/install). Usage::

    .venv/bin/python benchmarks/lab_local.py [--parts rates,overhead] [--duration 2] [--quick]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from typing import Any, Callable, Dict, List

from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex.install import trex_missing
from dpgate.traffic.trex.loop import TrexLoop

HERE = os.path.dirname(os.path.abspath(__file__))

PREFIX = "txb-"
MGMT = "198.19.255.32"
RATES = {
    "veth": (10_000, 50_000, 100_000, 200_000, 300_000, 400_000, 500_000, 700_000, 1_000_000),
    "memif": (10_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 1_500_000, 2_000_000, 3_000_000),
}
QUICK = {"veth": (10_000, 100_000, 400_000, 1_000_000), "memif": (10_000, 200_000, 1_000_000, 2_000_000)}


def load_avg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def rate_accuracy(args: argparse.Namespace) -> List[Dict[str, Any]]:
    rows = []
    for mode in args.modes:
        with TrexLoop(PREFIX, mode, tg_cpu=0, loop_cpu=1, mgmt_net=MGMT) as loop:
            gen = loop.generator(make_profile("ip4", 64), max_retries=1)
            gen.measure(10_000, 1.0)  # warm-up (memif: testpmd has connected)
            for rate in (QUICK if args.quick else RATES)[mode]:
                r = gen.measure(rate, args.duration)
                d = r.details
                took = max(d["elapsed_s"], args.duration)
                sent = r.tx_packets / took  # the rate TRex really sent (veth: it stretches the trial)
                rows.append(
                    {
                        "path": mode,
                        "requested_pps": rate,
                        "sent_pps": round(sent),
                        "accuracy_pct": round(100.0 * sent / rate, 2),
                        "sent_of_asked_pct": round(100.0 * r.tx_packets / r.intended_packets, 2),
                        "rx_pps": round(r.rx_packets / took),
                        "loss_pct": round(100.0 * r.loss_ratio, 3),
                        "took_s": d["elapsed_s"],
                        "limited_by": r.limited_by or "-",
                        "load": load_avg(),
                    }
                )
                print_row(rows[-1])
            gen.disconnect()
    return rows


def _latency_of(gen: Any, load: float, duration: float) -> Any:
    """A trial's latency figures (``details.latency``) at ``load``."""
    return gen.measure(load, duration).details.get("latency")


def overhead(args: argparse.Namespace) -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []
    rate, n = 50_000, 3 if args.quick else 6
    with TrexLoop(PREFIX, "veth", tg_cpu=0, loop_cpu=1, mgmt_net=MGMT) as loop:
        for label, kw in (
            ("trex 64B unidir", {}),
            ("trex 64B bidir (flow stats)", {"bidir": True}),
            ("trex 64B + latency streams", {"latency_pps": 1000}),
        ):
            gen = loop.generator(
                make_profile("ip4", 64, bidirectional=bool(kw.get("bidir", False))),
                latency_pps=kw.get("latency_pps", 0.0),
            )
            gen.measure(rate, 1.0)  # connect + first streams outside the timing
            trial = functools.partial(gen.measure, rate, args.duration)
            rows.append(_overhead_row(label, trial, args.duration, n))
            gen.disconnect()
    if args.tcpreplay:
        from dpgate.testbeds.embedded.session import EmbeddedSession

        topo = os.path.join(os.path.dirname(HERE), "topologies", "embedded.yaml")
        with EmbeddedSession(topo, "linux-xconnect", prefix="txe-", calibrate=False) as s:
            s.measure(rate, 1.0)
            rows.append(
                _overhead_row(
                    "tcpreplay 64B (embedded)", lambda: s.measure(rate, args.duration), args.duration, n
                )
            )
    return rows


def loop_ndrpdr(args: argparse.Namespace) -> List[Dict[str, Any]]:
    """NDR/PDR of the loop itself (tc mirred over veth, testpmd io over memif) by the per-commit
    search through TRex, then TRex latency streams at 90/50/10 % of PDR (the lab keywords' flow)."""
    from dpgate.search import find_ndr_pdr
    from dpgate.search.latency import latency_trials

    rows = []
    for mode in args.modes:
        with TrexLoop(PREFIX, mode, tg_cpu=0, loop_cpu=1, mgmt_net=MGMT) as loop:
            gen = loop.generator(make_profile("ip4", 64, bidirectional=True), latency_pps=1000)
            gen.measure(10_000, 1.0)
            t0 = time.monotonic()
            res = find_ndr_pdr(
                gen.measure, 10_000, 1_000_000, ndr_loss=0.0, pdr_loss=0.005, profile="per-commit"
            )
            search_s = time.monotonic() - t0
            row: Dict[str, Any] = {
                "loop": mode,
                "ndr_pps": round(res.ndr or 0),
                "pdr_pps": round(res.pdr or 0),
                "trials": res.trial_count,
                "search_s": round(search_s, 1),
            }
            if res.pdr:
                for load, lat in latency_trials(
                    functools.partial(_latency_of, gen),
                    res.pdr,
                    duration=args.duration,
                ):
                    tag = f"{round(100 * load / res.pdr)}%"
                    worst: Dict[str, Any] = max(
                        (v for v in lat.values() if "p99_us" in v), key=lambda v: v["p99_us"], default={}
                    )
                    row[f"lat{tag}_min/avg/p50/p99/max_us"] = "/".join(
                        str(round(worst.get(k) or 0))
                        for k in ("min_us", "avg_us", "p50_us", "p99_us", "max_us")
                    )
            gen.disconnect()
            row["load"] = load_avg()
            rows.append(row)
            print_row(row)
    return rows


def _overhead_row(label: str, trial: Callable[[], Any], duration: float, n: int) -> Dict[str, Any]:
    walls = []
    for _ in range(n):
        t0 = time.monotonic()
        trial()
        walls.append(time.monotonic() - t0 - duration)
    row = {
        "generator": label,
        "trials": n,
        "duration_s": duration,
        "overhead_median_s": round(statistics.median(walls), 3),
        "overhead_max_s": round(max(walls), 3),
        "load": load_avg(),
    }
    print_row(row)
    return row


def print_row(row: Dict[str, Any]) -> None:
    print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)


def table(rows: List[Dict[str, Any]]) -> str:
    if not rows:
        return ""
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r.get(k, "")) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


#: name -> part; part 2 ("nf": NDR/PDR/latency per NF and frame size) registers here.
PARTS: Dict[str, Callable[[argparse.Namespace], List[Dict[str, Any]]]] = {
    "rates": rate_accuracy,
    "overhead": overhead,
    "loop": loop_ndrpdr,
}

from lab_local_nf import add_arguments as nf_arguments  # noqa: E402  (part 2, per NF through TRex)
from lab_local_nf import nf_rows  # noqa: E402

PARTS["nf"] = nf_rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="rates,overhead", help=f"comma list of {', '.join(PARTS)}")
    ap.add_argument("--modes", default="veth,memif", help="rates: veth, memif or both")
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tcpreplay", action="store_true", help="overhead: also the embedded tcpreplay path")
    nf_arguments(ap)
    args = ap.parse_args(argv)
    args.modes = args.modes.split(",")
    if os.geteuid() != 0:
        print("lab_local benchmark: needs root (network namespaces)", file=sys.stderr)
        return 3
    missing = trex_missing()
    if missing:
        print(f"lab_local benchmark: {missing}", file=sys.stderr)
        return 3
    print(
        f"# lab_local benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load_avg()}, "
        f"{os.cpu_count()} CPUs; TRex on CPU 0, loop/SUT on CPU 1"
    )
    out = {}
    for part in args.parts.split(","):
        if part not in PARTS:
            print(f"lab_local benchmark: unknown part {part!r}: one of {', '.join(PARTS)}", file=sys.stderr)
            return 2
        out[part] = PARTS[part](args)
    for part, rows in out.items():
        print(f"\n## {part}\n{table(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
