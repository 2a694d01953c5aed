#!/usr/bin/env python3
"""The gate's signal on this machine: spread, false FAILs, inconclusive verdicts, detection.

    sudo .venv/bin/python benchmarks/gate_signal.py --prefix sg0- --k 6 \\
        [--suts linux-xconnect,linux-bridge,linux-ip4,testpmd-io,testpmd-mac,ovsdpdk-xconnect,ovs-afxdp-xconnect] [--steps 5,10]
        [--outdir /tmp/gate-signal] [--inject-runs 2] [--hogged 3] [--variable CPP_TRIALS:11]
        [--paired] [--report-only] [--keep-healthy]

For each SUT, with its 64B case only (``dpgate gate --include 64B <suite>``):

1. ``--k`` healthy runs sharing one history store; the last ``--hogged`` (default half) of
   them with a ``nice -n 19`` CPU hog pinned on each of the TG and SUT cores (a normal CI
   neighbour; those runs stay out of the history, so its regression check uses the declared
   noise until 5 quiet runs are in it);
2. ``--inject-runs`` runs per injected cost step (``--inject-cost 5``, ``--inject-cost 10``),
   checked against that history (injected runs are never added to it).

The runs come back to back, so their history spans an hour or two: the gate keeps each case's
declared noise as the allowance's floor until a history spans ``--history-span`` (the gate's
default, 24 h). ``--history-span 0`` lets the runs' own scatter set it from five runs on, as a
history spread over days would: what the history check could catch then, not a promise (gk99:
one hour's scatter allowed too little for the next hour).

Prints how many searches completed within their bound and the framework overhead between
trials (from the runs' trials.jsonl), and per metric (NDR, PDR, MRR, cpp_at_load, cpp_at_load_scaled) the spread over the quiet healthy runs and
over all healthy runs (max/min - 1), and the change of each injected run against the quiet
healthy runs' median; per run the verdict
(PASS / FAIL / SKIP: inconclusive) and the largest ``disturbance``. A FAIL in a healthy run
is a false FAIL; an injected run whose verdict is FAIL is a detection. With ``--paired`` every
run also measures ``cpp_at_load`` against a baseline twin beside the SUT (``dpgate gate
--paired``): one more line per SUT with each run's ``cpp_paired_change`` and that gate's
verdict (healthy runs: a false FAIL is an A/A pair that disagreed; injected: a detection). A
``history`` line gives each run's ``regression_cpp`` and ``regression_cpp_kernel`` (a polling
SUT's busy cycles per kernel cycle) against the history. Every number comes
from the runs' JUnit (``<outdir>/<sut>/<run>/junit.xml``) but the overhead. With two or more
load counts among the injected runs' paired readings, the line through them and the cost row
it makes (``dpgate.testbeds.embedded.suts.costfit``): a calibration on the gate's own figure.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling gate_readings

from gate_readings import by_placement, fmt, overhead_line, read_case, read_run, seen, spread, trial_gaps  # noqa: E402, F401

from dpgate.model.errors import ConfigError  # noqa: E402
from dpgate.testbeds.embedded.suts import cost  # noqa: E402
from dpgate.testbeds.embedded.suts.costfit import StepReading, fit_row  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
METRICS = (
    "ndr_pps",
    "pdr_pps",
    "mrr_pps",
    "cpp_at_load",
    "cpp_at_load_scaled",
    "cpp_at_load_per_kernel",
    "cpp_at_load_per_kernel_scaled",
)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when this process dies, however it dies (a killed
    set once left its hogs spinning through the next set's "quiet" runs)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def hogs(cpus: List[int]) -> List[subprocess.Popen]:
    """One ``nice -n 19`` busy loop pinned to each CPU (argv lists, no shell strings of ours),
    gone with this process even when it is killed."""
    return [
        subprocess.Popen(
            ["taskset", "-c", str(c), "nice", "-n", "19", "sh", "-c", "while :; do :; done"],
            preexec_fn=_die_with_parent,
        )
        for c in cpus
    ]


def run_gate(sut: str, prefix: str, outdir: str, history: str, extra: List[str], report_only=False) -> Dict:
    if report_only:
        return read_run(outdir)
    suite = os.path.join(ROOT, "suites", "embedded", f"{sut}-ndrpdr.robot")
    argv = [
        sys.executable,
        "-m",
        "dpgate.cli",
        "gate",
        suite,
        "--include",
        "64B",
        "--prefix",
        prefix,
        "--outdir",
        outdir,
        "--history",
        history,
    ] + extra
    subprocess.run(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return read_run(outdir)


def history_line(healthy: List[Dict], injected: Dict[float, List[Dict]]) -> Optional[str]:
    """The history checks of the cycles in one line: each run's ``regression_cpp`` and (a polling
    SUT) ``regression_cpp_kernel`` gate as its change against the history and P/F/S (``-``: no
    history yet), healthy runs first (``h``: hogged); None when no run had either gate.

    >>> g = {"gate.regression_cpp": "PASS: t cpp_at_load: normal: 4650 vs 4574 (+1.7 %, 3 runs)",
    ...      "gate.regression_cpp_kernel": "FAIL: t cpp_at_load_per_kernel: regression: 1.3 vs 1.2 (+9.1 %, 3 runs)"}
    >>> history_line([{"gates": {}}], {10.0: [{"gates": g}]})
    '  history      healthy: -/- | +10 %: +1.7 % P/+9.1 % F'
    """

    def one(r: Dict, gate: str) -> str:
        text = r.get("gates", {}).get(gate, "")
        if not text:
            return "-"
        ch = re.search(r"\(([+-]\d+\.\d) %", text)
        mark = {"PASS": "P", "FAIL": "F", "SKIP": "S"}.get(text.split(":", 1)[0], "?")
        return f"{ch.group(1) + ' % ' if ch else ''}{mark}"

    runs = healthy + [r for rs in injected.values() for r in rs]
    gates = ("gate.regression_cpp", "gate.regression_cpp_kernel")
    if not any(g in r.get("gates", {}) for r in runs for g in gates):
        return None

    def cell(r: Dict) -> str:
        return "/".join(one(r, g) for g in gates) + ("h" if r.get("hog") else "")

    line = "  history      healthy: " + ", ".join(cell(r) for r in healthy)
    for s, rs in injected.items():
        line += f" | +{s:g} %: " + ", ".join(cell(r) for r in rs)
    return line


def paired_line(healthy: List[Dict], injected: Dict[float, List[Dict]]) -> Optional[str]:
    """The paired check (``--paired``) in one line: each run's ``cpp_paired_change`` (and the busy
    cycles' change where it was judged per kernel cycle) and its gate's verdict (P/F/S), healthy runs first (``h`` marks a hogged one, ``2`` a verdict on
    two rounds of pairs: the first left it undecided), with the quiet runs' spread of the SUT's
    cycles against its twin's (max/min - 1 of 1 + change); None without it.

    >>> run = lambda ch, g="PASS": {"props": {"cpp_paired_change": ch}, "gates": {"gate.cpp_paired": g}}
    >>> paired_line([run(0.01), run(-0.02), run(0.2) | {"hog": True}], {10.0: [run(0.11, "FAIL: x")]})
    '  cpp_paired   healthy: +1.0 % P, -2.0 % P, +20.0 % Ph (quiet spread +3.1 %) | +10 %: +11.0 % F (1/1 FAIL)'

    ``P!`` marks a PASS whose pairs agree it rose (``cpp_paired_rise_seen``: a rise within the
    allowance, beyond the pairs' scatter).
    """

    def cell(r: Dict) -> str:
        ch = r["props"].get("cpp_paired_change")
        g = r.get("gates", {}).get("gate.cpp_paired", "")
        mark = {"PASS": "P", "FAIL": "F", "SKIP": "S"}.get(g.split(":", 1)[0], "-")
        mark += "!" if mark == "P" and seen(r) else ""  # a PASS whose pairs agree it rose
        rounds = "2" if r["props"].get("cpp_paired_rounds") == 2 else ""
        busy = r["props"].get("cpp_paired_busy_change")  # judged per kernel cycle: the busy cycles' too
        also = f" (busy {fmt(busy)})" if isinstance(busy, float) else ""
        return f"{fmt(ch) if isinstance(ch, float) else 'n/a'}{also} {mark}{rounds}" + (
            "h" if r.get("hog") else ""
        )

    if not any(
        "cpp_paired_change" in r["props"] for r in healthy + [x for rs in injected.values() for x in rs]
    ):
        return None
    line = "  cpp_paired   healthy: " + ", ".join(cell(r) for r in healthy)
    # the SUT against its twin, 1 + change, over the quiet runs: the A/A spread of the ratio
    ratios = [
        1 + r["props"]["cpp_paired_change"]
        for r in healthy
        if not r.get("hog") and isinstance(r["props"].get("cpp_paired_change"), float)
    ]
    line += f" (quiet spread {fmt(spread(ratios))})" if len(ratios) >= 2 else ""
    for s, runs in injected.items():
        fails = sum(r.get("gates", {}).get("gate.cpp_paired", "").startswith("FAIL") for r in runs)
        line += f" | +{s:g} %: " + ", ".join(cell(r) for r in runs) + f" ({fails}/{len(runs)} FAIL)"
    return line


def row_line(injected: Dict[float, List[Dict]]) -> Optional[str]:
    """The injected runs' paired readings against their loads, and the cost row their line
    makes (``dpgate.testbeds.embedded.suts.costfit``): a calibration on the gate's own figure.
    None without readings at two load counts."""
    keys = (
        "injected_cost_loads",
        "cpp_paired_change",
        "cpp_paired_low",
        "cpp_paired_high",
        "cpp_paired_baseline",
    )
    got = [
        StepReading(int(p[keys[0]]), p[keys[1]], p[keys[2]], p[keys[3]], p[keys[4]])
        for p in (r["props"] for rs in injected.values() for r in rs)
        if all(isinstance(p.get(k), float) for k in keys)
    ]
    fit = fit_row(got)
    if fit is None:
        return None
    return (
        f"  paired readings by loads: {fit.per_load * 100:.4f} % a load (+-{fit.per_load_se * 100:.4f}), "
        f"{fit.at_zero * 100:+.2f} % at none (+-{fit.at_zero_se * 100:.2f}), {fit.points} runs: row {fit.row}"
    )


def injected_aim(sut: str, step: float, runs: List[Dict]) -> str:
    """What the step was, to within one load: as the runs' records say (the loads and the
    table of the host class the gate picked), else by the fast class's table."""
    props = next((r["props"] for r in runs if "injected_cost_loads" in r["props"]), None)
    if props:
        loads, exp = int(props["injected_cost_loads"]), float(props.get("injected_cost_expected", 0)) * 100
        return f"{loads} loads, {exp:.1f} % by the {props.get('injected_cost_calibration', '?')} calibration"
    name, table = next((c[1:] for c in cost.CLASSES if sut in c[2]), cost.CLASSES[0][1:])
    try:
        n = cost.units_for(sut, step, table)
    except ConfigError as e:  # no class calibrates it: the gate refused the run too
        return f"not calibrated: {e}"[:160]
    return f"{n} loads, {cost.expected_percent(sut, n, table):.1f} % by the {name} calibration"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--suts",
        default="linux-xconnect,linux-bridge,linux-ip4,testpmd-io,testpmd-mac,ovsdpdk-xconnect,ovs-afxdp-xconnect",
    )
    ap.add_argument("--prefix", default="sg0-")
    ap.add_argument("--k", type=int, default=6, help="healthy runs per SUT (second half with CPU hogs)")
    ap.add_argument("--steps", default="5,10", help="injected cost steps in %%")
    ap.add_argument("--inject-runs", type=int, default=1, help="runs per injected cost step")
    ap.add_argument("--outdir", default="/tmp/gate-signal")
    ap.add_argument("--hog-cpus", default="0,1")
    ap.add_argument(
        "--paired",
        action="store_true",
        help="every gate run with --paired (cpp_at_load against a baseline twin)",
    )
    ap.add_argument(
        "--hogged", type=int, default=None, help="how many healthy runs have the hogs (default k/2)"
    )
    ap.add_argument(
        "--variable", action="append", default=[], help="Robot variable NAME:VALUE for every run (repeatable)"
    )
    ap.add_argument(
        "--history-span",
        default=None,
        help="dpgate gate --history-span for every run (default the gate's: 24 h; 0: the runs' own scatter)",
    )
    ap.add_argument(
        "--report-only", action="store_true", help="print the table from the runs already in --outdir"
    )
    ap.add_argument(
        "--keep-healthy",
        action="store_true",
        help="read the healthy runs already in --outdir (their output.xml) instead of running them again",
    )
    a = ap.parse_args(argv)
    ro = a.report_only
    hog_cpus = [int(c) for c in a.hog_cpus.split(",") if c]
    steps = [float(s) for s in a.steps.split(",") if s]
    n_hog = a.k // 2 if a.hogged is None else max(0, min(a.k, a.hogged))
    extra = [f"--variable={v}" for v in a.variable] + (["--paired"] if a.paired else [])
    extra += ["--history-span", a.history_span] if a.history_span is not None else []
    totals: Dict = {"healthy": 0, "false_fail": 0, "inconclusive": 0, "paired_skip": 0, "paired_seen": 0}
    for sut in a.suts.split(","):
        base = os.path.join(a.outdir, sut)
        history = os.path.join(base, "history")
        healthy = []
        for i in range(a.k):
            hogged = i >= a.k - n_hog
            out = os.path.join(base, f"healthy-{i}")
            kept = ro or (a.keep_healthy and os.path.exists(os.path.join(out, "output.xml")))
            procs = hogs(hog_cpus) if hogged and not kept else []
            try:
                res = run_gate(sut, a.prefix, out, history, extra, kept)
            finally:
                for p in procs:
                    p.terminate()
                    p.wait()
            res["hog"] = hogged
            healthy.append(res)
        # a SUT without a cost injection (dpgate.testbeds.embedded.suts.cost) has no injected
        # runs: its refused setup would read as a FAIL, i.e. a detection
        calibrated = cost.calibrated_suts()
        injectable = sut in calibrated
        if not injectable:
            print(f"== {sut}: no cost injection (available: {', '.join(calibrated)})")
        injected = {
            s: [
                run_gate(
                    sut,
                    a.prefix,
                    os.path.join(base, f"inject-{s:g}-{j}"),
                    history,
                    ["--inject-cost", f"{s:g}", "--no-history-add"] + extra,
                    ro,
                )
                for j in range(a.inject_runs)
            ]
            for s in (steps if injectable and a.inject_runs > 0 else [])
        }
        print(
            f"== {sut} 64B: {a.k} healthy runs ({n_hog} with nice -n 19 hogs on CPUs {a.hog_cpus}), "
            f"injected {', '.join(f'+{s:g} %' for s in injected) or 'none'}"
        )
        for i, r in enumerate(healthy):
            d = r["props"].get("disturbance")
            print(
                f"  healthy-{i}{' (hog)' if r['hog'] else '      '} {r['verdict']:5s} disturbance "
                f"{fmt(d, pct=False)} core_speed_min {fmt(r['props'].get('core_speed_min'), pct=False)}  "
                + "  ".join(f"{m}={fmt(r['props'].get(m), pct=False)}" for m in METRICS)
                + (f"  [{r['message'][:110]}]" if r["verdict"] != "PASS" else "")
            )
            totals["healthy"] += 1
            totals["false_fail"] += r["verdict"] in ("FAIL", "ERROR")
            totals["inconclusive"] += r["verdict"] == "SKIP"
            # a skipped paired gate leaves the case its other verdicts: counted apart
            totals["paired_skip"] += r.get("gates", {}).get("gate.cpp_paired", "").startswith("SKIP")
            totals["paired_seen"] += seen(r)  # a healthy PASS with a rise seen: a false notice
        runs = healthy + [r for rs in injected.values() for r in rs]
        done = [r["props"].get("search_complete") for r in runs if "search_complete" in r["props"]]
        print(
            f"  searches complete in {sum(str(d) == 'True' for d in done)}/{len(done)} runs; "
            + overhead_line(runs)
        )
        for m in METRICS:
            # injected runs are quiet: compare them with the quiet healthy runs' median
            quiet = [
                r["props"].get(m) for r in healthy if not r["hog"] and isinstance(r["props"].get(m), float)
            ]
            hogged = [r["props"].get(m) for r in healthy if r["hog"] and isinstance(r["props"].get(m), float)]
            med = statistics.median(quiet) if quiet else None
            line = f"  {m:12s} spread quiet {fmt(spread(quiet))}"
            line += by_placement([r["props"] for r in healthy if not r["hog"]], m)
            line += f", with hogs {fmt(spread(quiet + hogged))}"
            for s, runs in injected.items():
                chs = [
                    fmt(r["props"][m] / med - 1) if isinstance(r["props"].get(m), float) and med else "n/a"
                    for r in runs
                ]
                line += f" | +{s:g} %: {', '.join(chs)}"
            print(line)
        for summary in (history_line(healthy, injected), paired_line(healthy, injected), row_line(injected)):
            if summary:
                print(summary)
        for s, runs in injected.items():
            hits = sum(r["verdict"] == "FAIL" for r in runs)
            totals.setdefault(f"detected +{s:g} %", [0, 0])
            totals[f"detected +{s:g} %"][0] += hits
            totals[f"detected +{s:g} %"][1] += len(runs)
            noticed = sum(seen(r) for r in runs)  # its paired gate passed, the pairs agree it rose
            totals.setdefault(f"detected or a rise seen +{s:g} %", [0, 0])
            totals[f"detected or a rise seen +{s:g} %"][0] += sum(
                r["verdict"] == "FAIL" or seen(r) for r in runs
            )
            totals[f"detected or a rise seen +{s:g} %"][1] += len(runs)
            aim = injected_aim(sut, s, runs)
            print(
                f"  inject +{s:g} % ({aim}): detected in {hits}/{len(runs)} runs"
                + (f", a PASS with the rise seen in {noticed}" if a.paired else "")
            )
            for r in runs:
                speed = fmt(r["props"].get("core_speed_min"), pct=False)
                print(f"    {r['verdict']:5s} core_speed_min {speed} {r['message'][:160]}")
                cpp, at = r["props"].get("cpp_at_load"), r["props"].get("sut_core_speed")
                if isinstance(cpp, float):  # what the cpp_at_load checks said, and at what speed
                    print(f"      cpp_at_load {cpp:.0f} at {fmt(at, pct=False)} M it/s")
                    for g in ("gate.cpp_at_load_max", "gate.regression_cpp", "gate.regression_cpp_kernel"):
                        if g in r.get("gates", {}):
                            print(f"      {g}={r['gates'][g][:230]}")
    print(
        f"total: {totals['healthy']} healthy runs, {totals['false_fail']} false FAIL, {totals['inconclusive']} inconclusive"
        + (
            f" (the paired gate inconclusive in {totals['paired_skip']}, a PASS with a rise seen in "
            f"{totals['paired_seen']})"
            if a.paired
            else ""
        )
        + "".join(f"; {k} in {v[0]}/{v[1]}" for k, v in totals.items() if isinstance(v, list))
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
