#!/usr/bin/env python3
"""Fit the speed exponent of cycles per packet from recorded gate runs, and replay the paired
check with a candidate exponent: no testbed, only what the gate wrote.

    .venv/bin/python benchmarks/speed_exponent.py RUN_DIR... [--model "AMD EPYC"]
        [--dmax 0.10] [--replay 0.5,0.65] [--max-rise 5%]

Every ``dpgate/trials.jsonl`` under a RUN_DIR (a ``dpgate gate`` output directory, or a
``benchmarks/gate_signal.py --outdir``) with its records (``dpgate/tests/*.json``) is read;
``--model`` keeps the runs whose ``host_cpu_model`` or ``host_cpu_id`` is that CPU. Prints per SUT and frame size
the exponent ``e`` of ``cycles ~ speed^-e`` fitted within runs
(:func:`dpgate.telemetry.speedfit.pooled_fit`), its trials, speed range and residual, beside
the exponent the runs were scaled by; then, with ``--replay``, each run's paired check
judged again with each exponent (:func:`dpgate.telemetry.paired.judge`): change, 99 % interval,
the change as measured, and the verdict at ``--max-rise``, beside the change the run recorded.
A replay at the exponent the run used reads the recorded change: that is the check that the
pairs were rebuilt as the gate measured them. Saturated pairs are never scaled: not replayed;
a polling SUT judged per kernel cycle moves only by its busy cycles' estimate beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import sys
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "libraries"))

from dpgate.config.units import parse_ratio  # noqa: E402
from dpgate.model.errors import ConfigError  # noqa: E402
from dpgate.model.trial import TrialResult  # noqa: E402
from dpgate.outputs.results import load_record  # noqa: E402
from dpgate.telemetry.paired import judge, verdict  # noqa: E402
from dpgate.telemetry.speedfit import DMAX, cycles_of, fixed_load_points, paired_rows, pooled_fit  # noqa: E402

FIELDS = {f.name for f in dataclasses.fields(TrialResult)}


class Run(NamedTuple):
    """One recorded case: where, its record's figures, its trials."""

    where: str
    nf: str
    frame: str
    metrics: Dict[str, Any]
    rows: List[Dict[str, Any]]

    @property
    def polling(self) -> bool:
        return any(cycles_of(r)[0] == "sut_cycles_per_packet" for r in self.rows)


def runs_under(dirs: List[str], model: Optional[str] = None) -> Iterator[Run]:
    """Every recorded case under ``dirs`` (its trials by the record's ``test_id``), of CPU
    ``model`` when given."""
    for top in dirs:
        if not os.path.isdir(top):
            raise ConfigError(f"no such directory: {top}", path="RUN_DIR")
        for jsonl in sorted(glob.glob(os.path.join(top, "**", "trials.jsonl"), recursive=True)):
            here = os.path.dirname(jsonl)
            rows = _read_jsonl(jsonl)
            for rec_path in sorted(glob.glob(os.path.join(here, "tests", "*.json"))):
                rec = load_record(rec_path)  # validated: a foreign or cut file names itself
                m = rec.get("metrics") or {}
                if model and model not in (m.get("host_cpu_model"), m.get("host_cpu_id")):
                    continue
                mine = [r for r in rows if r.get("test") == rec.get("test_id")]
                where = os.path.relpath(here, top)
                yield Run(where, str(rec.get("nf")), str(m.get("frame_size", "")), m, mine)


def _read_jsonl(path: str) -> List[Dict[str, Any]]:
    """A trials.jsonl's rows; a line that is not JSON names the file and line."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except ValueError as err:
                    raise ConfigError(f"line {n} is not JSON ({err})", source=path) from None
    return rows


def trial(row: Mapping[str, Any]) -> TrialResult:
    return TrialResult(**{k: v for k, v in row.items() if k in FIELDS})


def fit_table(runs: List[Run], dmax: float) -> List[str]:
    """One line per SUT and frame size (and per SUT over its sizes), beside the exponent the
    runs' ``cpp_at_load_scaled`` used (``cpp_speed_exponent``; "-": none, a SUT judged at
    saturation)."""
    groups: Dict[Tuple[str, str], List[List[Tuple[float, float]]]] = {}
    used: Dict[str, set] = {}
    for run in runs:
        e = run.metrics.get("cpp_speed_exponent")
        used.setdefault(run.nf, set()).update([f"{e:g}"] if isinstance(e, (int, float)) else [])
        for pts in fixed_load_points(run.rows, dmax, run.where).values():
            for key in ((run.nf, run.frame), (run.nf, "all")):
                groups.setdefault(key, []).append(pts)
    lines = [
        f"{'SUT':20s} {'frame':6s} {'e fitted':>8s} {'trials':>6s} {'groups':>6s} {'speeds':>11s} {'resid':>6s} {'gate e':>6s}"
    ]
    for (nf, frame), gs in sorted(groups.items()):
        fit = pooled_fit(gs)
        gate_e = ",".join(sorted(used.get(nf, ()))) or "-"
        if fit is None:
            lines.append(f"{nf:20s} {frame:6s} {'-':>8s}  (no group of 3 trials at 2 speeds)")
            continue
        lines.append(
            f"{nf:20s} {frame:6s} {fit.exponent:8.2f} {fit.points:6d} {fit.groups:6d} "
            f"{fit.speed_low:5.1f}-{fit.speed_high:<5.1f} {fit.residual:6.3f} {gate_e:>6s}"
        )
    return lines


def replay(run: Run, exponents: List[float], max_rise: float, dmax: float) -> Optional[str]:
    """The run's paired check judged again at each exponent; None: nothing to replay."""
    m = run.metrics
    load = m.get("cpp_paired_pps")
    if not load or m.get("cpp_paired_saturated"):
        return None
    pairs = [(trial(b), trial(s)) for b, s in paired_rows(run.rows, float(load))]
    rec = m.get("cpp_paired_change")
    out = [
        f"{run.where} {run.nf} {run.frame} injected {m.get('injected_cost') or 0:g}: "
        f"recorded {rec * 100:+.1f} % at e {m.get('cpp_paired_speed_exponent', '-')}"
        if isinstance(rec, (int, float))
        else f"{run.where} {run.nf}: recorded {rec}"
    ]
    for e in exponents:
        try:
            est = judge(pairs, run.polling, float(load), dmax, exponent=e)
        except ValueError as err:
            out.append(f"  e {e:g}: {err}")
            continue
        status, _ = verdict(est, max_rise, dmax)
        raw = f", as measured {est.unscaled * 100:+.1f} %" if est.unscaled is not None else ""
        out.append(
            f"  e {e:g}: {est.change * 100:+.1f} % ({est.low * 100:+.1f}..{est.high * 100:+.1f}) "
            f"{est.pairs} pairs{raw}: {status}"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", metavar="RUN_DIR")
    ap.add_argument(
        "--model",
        default=None,
        help='only runs on this CPU: host_cpu_model ("AMD EPYC") or host_cpu_id ("AuthenticAMD family 25 model 17")',
    )
    ap.add_argument("--dmax", type=float, default=DMAX, help="leave out trials others disturbed beyond this")
    ap.add_argument(
        "--replay", default="", help="exponents to judge each run's paired check at, e.g. 0.5,0.65"
    )
    ap.add_argument("--max-rise", default="5%", help="the paired check's allowance")
    a = ap.parse_args(argv)
    try:
        exps = [float(x) for x in a.replay.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"--replay: exponents are numbers separated by commas, got {a.replay!r}") from None
    try:
        rise = parse_ratio(a.max_rise, "--max-rise")
        runs = list(runs_under(a.dirs, a.model))
    except ConfigError as err:
        raise SystemExit(str(err)) from None
    if not runs:
        raise SystemExit(
            f"no recorded runs under {', '.join(a.dirs)}" + (f" on CPU {a.model!r}" if a.model else "")
        )
    print(f"{len(runs)} recorded cases" + (f" on {a.model}" if a.model else ""))
    print("\n".join(fit_table(runs, a.dmax)))
    if exps:
        done = [r for r in (replay(run, exps, rise, a.dmax) for run in runs) if r]
        print(f"\nthe paired check replayed ({len(done)} runs with scaled pairs):")
        print("\n".join(done) if done else "  none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
