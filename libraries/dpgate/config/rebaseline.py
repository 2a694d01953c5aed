"""Thresholds from the spread actually seen: floors and ceilings derived from N healthy runs.

    python -m dpgate.config.rebaseline results/base-1 results/base-2 ... results/base-5 [--min-runs 5]
        > variables/embedded.new.yaml

Reads each run's records (``<dir>/dpgate/tests/*.json``) and, per NF and frame size, the
values of NDR, PDR, MRR and ``cpp_at_load`` over the runs. A run's value is left out when the
record says it was disturbed (``disturbance`` above ``disturbance_max``) or injected
(``injected_*``): thresholds come from healthy measurements only. With ``s`` = the spread
seen (max/min - 1, at least ``--min-margin``):

* ``ndr_min``/``pdr_min`` = lowest value seen / (1 + s): a healthy run can land one more
  spread (as a ratio) below the worst one seen, a collapse cannot; never negative, however
  wide the spread;
* ``cpp_max`` (CPP at NDR = core Hz x cores / NDR) = the mirror of the NDR floor: Hz x cores
  / ``ndr_min``, rounded up to 100 cycles (a tighter one fails runs whose NDR passed);
* ``cpp_at_load_max`` = highest value seen x (1 + s), and ``cpp_load`` = the load it was
  measured at (the lowest of the runs' ``cpp_at_load_pps``), so later runs measure there;
  ``core_speed`` = the median of the runs' ``sut_core_speed`` (the SUT core's full speed on
  this machine class); a run whose cpp_at_load was measured below 90 % of it is left out;
* ``noise`` (NDR/PDR), ``mrr_noise``, ``cpp_noise`` (cpp_at_load), ``cpp_scaled_noise``
  (``cpp_at_load_scaled``: every run counts, the scaling took the speed out) and
  ``cpp_kernel_noise`` (a polling SUT's ``cpp_at_load_per_kernel_scaled``, or
  ``cpp_at_load_per_kernel`` where a run lacks it: every run counts) =
  s x 1.1, the regression check's allowance while its history is short;
* a throughput at the generator's ceiling still gets a floor: it catches a collapse, and a
  run that misses it while at the ceiling is inconclusive, not FAIL (the gates say so).

Fewer than ``--min-runs`` usable runs for a case is an error naming the case: a spread from
two runs is not a spread. Output is YAML in the layout of ``variables/embedded.yaml``.
``--leave-one-out`` checks the rules before they gate: every run against the rows derived
from the others, one line per value that would have missed, the count, and the count for
each least margin of floors and ceilings from 3 to 50 %; ``--gate-margin`` sets that margin
(five runs underestimate the spread: on the 2-core VMs 3 % left 28 of 369 healthy values
below a floor or above a ceiling, 30 % left 3), the noise allowances keep the spread.

>>> derive_case({"ndr_pps": [500e3, 520e3, 480e3]}, min_margin=0.03)["ndr_min"]
'0.443 Mpps'
"""

from __future__ import annotations

import argparse
import statistics
import sys
from typing import Dict, List, Optional, Tuple

from dpgate.model.errors import ConfigError

RATE_KEYS = {"ndr_pps": "ndr_min", "pdr_pps": "pdr_min"}
#: every threshold :func:`derive_case` may set (``--keys`` chooses among them)
DERIVED = (
    "ndr_min",
    "pdr_min",
    "cpp_max",
    "core_speed",
    "cpp_load",
    "cpp_at_load_max",
    "noise",
    "mrr_noise",
    "cpp_noise",
    "cpp_scaled_noise",
    "cpp_kernel_noise",
)
DEFAULT_DISTURBANCE_MAX = 0.10


def _spread(vals: List[float], min_margin: float) -> float:
    return max(min_margin, max(vals) / min(vals) - 1) if vals and min(vals) > 0 else min_margin


def _pct(x: float) -> str:
    """A noise allowance, rounded up to 1 %, at most 100 % (thresholds take ratios in [0, 1]).

    >>> _pct(0.0405), _pct(1.6)
    ('5%', '100%')
    """
    return f"{min(100, int(-(-x * 100 // 1)))}%"


def derive_case(
    values: Dict[str, List[float]], min_margin: float = 0.03, gate_margin: Optional[float] = None
) -> Dict[str, str]:
    """Thresholds of one case from its per-run values (see the module doc). ``gate_margin``
    (default ``min_margin``): the least margin of the floors and ceilings, which a spread of
    five runs underestimates; the noise allowances keep ``min_margin``.

    >>> row = derive_case({"ndr_pps": [500e3, 520e3]}, 0.03, gate_margin=0.3)
    >>> row["ndr_min"], row["noise"]
    ('0.385 Mpps', '5%')
    """
    gm = min_margin if gate_margin is None else max(min_margin, gate_margin)
    out: Dict[str, str] = {}
    noise = 0.0
    for key, name in RATE_KEYS.items():
        vals = [v for v in values.get(key, []) if v and v > 0]
        if not vals:
            continue
        s = _spread(vals, min_margin)
        noise = max(noise, s)
        # At the generator's ceiling the floor still guards against a collapse: a run whose
        # value misses it while at the ceiling is inconclusive, not FAIL (robot/gates.py).
        out[name] = f"{min(vals) / (1 + max(s, gm)) / 1e6:.3f} Mpps"
    # CPP at NDR is core Hz x cores / NDR: its ceiling is the NDR floor's mirror (a tighter one
    # failed healthy runs whose NDR passed its floor), rounded up to 100 cycles
    hz = [v for v in values.get("hz", []) if v and v > 0]
    if hz and "ndr_min" in out:
        floor_pps = float(out["ndr_min"].split()[0]) * 1e6
        if floor_pps > 0:
            out["cpp_max"] = f"{-(-max(hz) / floor_pps // 100) * 100:.0f}"
    cpp = [v for v in values.get("cpp_at_load", []) if v and v > 0]
    speeds = values.get("sut_core_speed", [])
    timed = [x for x in speeds if x > 0]
    if timed and len(speeds) == len(values.get("cpp_at_load", [])):
        # the machine class's full speed of the SUT core (median of the runs); a run measured
        # in a slow phase of the host (below 90 % of it) does not set the cpp_at_load ceiling
        full = statistics.median(timed)
        out["core_speed"] = f"{full:.1f}"
        cpp = [c for c, x in zip(values["cpp_at_load"], speeds) if c > 0 and (not x or x >= 0.9 * full)]
    if cpp:
        s = _spread(cpp, min_margin)
        loads = [v for v in values.get("cpp_at_load_pps", []) if v and v > 0]
        if loads:  # the ceiling holds at the load it was measured at: pin that load
            out["cpp_load"] = f"{min(loads):.0f}pps"
        out["cpp_at_load_max"] = f"{max(cpp) * (1 + max(s, gm)):.0f}"
        out["cpp_noise"] = _pct(s * 1.1)
    scaled = [v for v in values.get("cpp_at_load_scaled", []) if v and v > 0]
    if scaled:  # every trial scaled to one speed: slow runs count too
        out["cpp_scaled_noise"] = _pct(_spread(scaled, min_margin) * 1.1)
    # a polling SUT's busy cycles per kernel cycle: slow runs count too; the history check
    # compares the figure scaled to the reference speed, where every run has one
    scaled_pk = [v for v in values.get("cpp_at_load_per_kernel_scaled", []) if v and v > 0]
    measured_pk = [v for v in values.get("cpp_at_load_per_kernel", []) if v and v > 0]
    per_kernel = scaled_pk if len(scaled_pk) >= len(measured_pk) else measured_pk
    if per_kernel:
        out["cpp_kernel_noise"] = _pct(_spread(per_kernel, min_margin) * 1.1)
    if noise:
        out["noise"] = _pct(noise * 1.1)
    mrr = [v for v in values.get("mrr_pps", []) if v and v > 0]
    if mrr:
        out["mrr_noise"] = _pct(_spread(mrr, min_margin) * 1.1)
    return out


def _usable(rec: Dict, disturbance_max: float) -> bool:
    m = rec.get("metrics") or {}
    if any(k.startswith("injected_") and m.get(k) for k in m):
        return False
    d = m.get("disturbance")
    return not (isinstance(d, (int, float)) and d > disturbance_max)


def collect(run_dirs: List[str], disturbance_max: float = DEFAULT_DISTURBANCE_MAX):
    """{(nf, frame size): {metric: [value per run]}} over the usable records of the runs."""
    from dpgate.outputs.results import load_records

    cases: Dict = {}
    for d in run_dirs:
        for rec in load_records(d):
            m = rec.get("metrics") or {}
            if "ndr_pps" not in m or not _usable(rec, disturbance_max):
                continue
            key = (rec.get("nf") or "?", str(rec.get("name", "?")).split("-")[0])
            vals = cases.setdefault(key, {})
            if isinstance(m.get("cpp"), (int, float)) and isinstance(m.get("ndr_pps"), (int, float)):
                vals.setdefault("hz", []).append(float(m["cpp"]) * float(m["ndr_pps"]))  # Hz x cores
            for k in (
                "ndr_pps",
                "pdr_pps",
                "mrr_pps",
                "cpp_at_load",
                "cpp_at_load_pps",
                "cpp_at_load_scaled",
                "cpp_at_load_per_kernel",
                "cpp_at_load_per_kernel_scaled",
            ):
                if isinstance(m.get(k), (int, float)):
                    vals.setdefault(k, []).append(float(m[k]))
            if isinstance(m.get("cpp_at_load"), (int, float)):  # aligned with cpp_at_load; 0: not timed
                speed = m.get("sut_core_speed")
                vals.setdefault("sut_core_speed", []).append(
                    float(speed) if isinstance(speed, (int, float)) else 0.0
                )
    return cases


SEEN = (
    ("ndr_pps", "NDR", 1e6, "{:.3f}-{:.3f} Mpps"),
    ("mrr_pps", "MRR", 1e6, "{:.3f}-{:.3f} Mpps"),
    ("cpp_at_load", "cpp_at_load", 1.0, "{:.0f}-{:.0f}"),
    ("cpp_at_load_scaled", "scaled", 1.0, "{:.0f}-{:.0f}"),
    ("cpp_at_load_per_kernel", "per kernel", 1.0, "{:.3f}-{:.3f}"),
    ("cpp_at_load_per_kernel_scaled", "per kernel scaled", 1.0, "{:.3f}-{:.3f}"),
)


def seen(vals: Dict[str, List[float]]) -> str:
    """The ranges a row was derived from, for its comment (a reviewer sees the spread).

    >>> seen({"ndr_pps": [4.9e5, 5.2e5], "cpp_at_load": [3010.0, 3105.0, 0.0]})
    'n=2: NDR 0.490-0.520 Mpps (+6.1 %), cpp_at_load 3010-3105 (+3.2 %)'
    """
    parts = []
    for key, label, unit, fmt in SEEN:
        v = [x / unit for x in vals.get(key, []) if x and x > 0]
        if v:
            parts.append(f"{label} {fmt.format(min(v), max(v))} (+{(max(v) / min(v) - 1) * 100:.1f} %)")
    return f"n={len(vals.get('ndr_pps', []))}: " + ", ".join(parts)


def render(
    cases,
    runs: int,
    min_runs: int,
    min_margin: float,
    gate_margin: Optional[float] = None,
    keys: Optional[List[str]] = None,
) -> str:
    """The rows as YAML; ``keys``: only those thresholds (e.g. a machine class's file that
    takes its floors from these runs and the rest from the base file)."""
    lines = [
        f"# Derived by 'python -m dpgate.config.rebaseline' from {runs} runs (healthy measurements only):",
        "# floors = lowest seen / (1 + spread), cpp_at_load_max = highest seen x (1 + spread),",
        f"# noise = spread x 1.1; spread = max/min - 1 over the runs, at least {min_margin:.0%};",
        f"# floors and ceilings at least {max(min_margin, gate_margin or 0):.0%} from the lowest/highest seen.",
    ]
    if keys:
        lines.append(f"# Only {', '.join(keys)}: the rest comes from the file these rows are laid over.")
    lines += ["defaults: {}", "nfs:"]
    by_nf: Dict[str, Dict[str, Dict[str, str]]] = {}
    for (nf, size), vals in sorted(cases.items()):
        n = len(vals.get("ndr_pps", []))
        if n < min_runs:
            raise ConfigError(
                f"{nf} {size}: only {n} usable run(s) (need {min_runs}); run more healthy 'dpgate gate' runs or lower --min-runs",
                path="rebaseline",
            )
        row = derive_case(vals, min_margin, gate_margin)
        if keys:
            row = {k: v for k, v in row.items() if k in keys}
        if row:
            by_nf.setdefault(nf, {})[size] = row
    for nf, sizes in by_nf.items():
        lines.append(f"  {nf}:")
        for size, th in sizes.items():
            lines.append(f"    # {seen(cases[(nf, size)])}")
            body = ", ".join(f"{k}: {v}" for k, v in th.items())
            lines.append(f"    {size}: {{{body}}}")
    return "\n".join(lines) + "\n"


#: (metric of a run, threshold, True: a floor) the leave-one-out check compares
CHECKS = (
    ("ndr_pps", "ndr_min", True),
    ("pdr_pps", "pdr_min", True),
    ("cpp_at_load", "cpp_at_load_max", False),
)


#: the margins ``--leave-one-out`` also tries, to show how many misses each would leave
SWEEP = (0.03, 0.10, 0.15, 0.20, 0.30, 0.50)


def _misses(
    run_dirs: List[str], disturbance_max: float, min_margin: float, gate_margin: Optional[float]
) -> Tuple[int, List[str]]:
    """(values checked, one line per value that misses the rows derived from the other runs)."""
    checked, lines = 0, []
    for i, held in enumerate(run_dirs):
        others = collect(run_dirs[:i] + run_dirs[i + 1 :], disturbance_max)
        rows = {k: derive_case(v, min_margin, gate_margin) for k, v in others.items()}
        for (nf, size), vals in sorted(collect([held], disturbance_max).items()):
            row = rows.get((nf, size)) or {}
            for metric, key, floor in CHECKS:
                got = (vals.get(metric) or [None])[0]
                if got is None or key not in row:
                    continue
                speed = (vals.get("sut_core_speed") or [0.0])[0]
                if metric == "cpp_at_load" and "core_speed" in row and speed < 0.9 * float(row["core_speed"]):
                    continue  # a slow host phase: the gate calls it inconclusive
                limit = float(row[key].split()[0]) * (1e6 if floor else 1.0)
                checked += 1
                if (got < limit) if floor else (got > limit):
                    lines.append(
                        f"{nf} {size}: {held}: {metric} {got:.6g} {'<' if floor else '>'} {key} {limit:.6g} "
                        "from the other runs"
                    )
    return checked, lines


def leave_one_out(
    run_dirs: List[str], disturbance_max: float, min_margin: float, gate_margin: Optional[float] = None
) -> List[str]:
    """Would a healthy run have passed thresholds derived from the others? For every run and
    case: its NDR, PDR and cpp_at_load against the rows ``derive_case`` makes from the other
    runs (a cpp_at_load measured below 90 % of their ``core_speed`` is a slow host phase, which
    the gate calls inconclusive, not counted). One line per miss, the count: the false FAIL
    rate these rules give on this machine class before they gate anything, and the count each
    ``--min-margin`` of ``SWEEP`` would leave."""
    checked, lines = _misses(run_dirs, disturbance_max, min_margin, gate_margin)
    n = len(lines)
    lines.append(
        f"leave-one-out: {n} of {checked} healthy values would miss a threshold derived from the "
        f"other runs (up to {len(run_dirs) - 1}; --gate-margin {max(min_margin, gate_margin or 0):g})"
    )
    sweep = [f"{m:.0%}: {len(_misses(run_dirs, disturbance_max, min_margin, m)[1])}" for m in SWEEP]
    lines.append("misses by --gate-margin: " + ", ".join(sweep))
    return lines


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dpgate.config.rebaseline", description=__doc__.split("\n")[0]
    )
    ap.add_argument("runs", nargs="+", help="output directories of healthy 'dpgate gate' runs")
    ap.add_argument("--min-runs", type=int, default=5)
    ap.add_argument("--min-margin", type=float, default=0.03)
    ap.add_argument("--disturbance-max", type=float, default=DEFAULT_DISTURBANCE_MAX)
    ap.add_argument(
        "--gate-margin",
        type=float,
        default=None,
        help="least margin of floors and ceilings beyond the lowest/highest seen (default --min-margin); "
        "choose it from --leave-one-out",
    )
    ap.add_argument(
        "--leave-one-out",
        action="store_true",
        help="instead: check every run against the thresholds derived from the others (false FAIL rate)",
    )
    ap.add_argument(
        "--keys",
        default="",
        help="comma-separated thresholds to print, the others left out (e.g. ndr_min,pdr_min,cpp_max "
        "for a machine class's floors); default every one derived",
    )
    a = ap.parse_args(argv)
    keys = [k.strip() for k in a.keys.split(",") if k.strip()]
    try:
        unknown = sorted(set(keys) - set(DERIVED))
        if unknown:
            raise ConfigError(
                f"--keys: {', '.join(unknown)} not derived here; choose from {', '.join(DERIVED)}",
                path="rebaseline",
            )
        if a.leave_one_out:
            if len(a.runs) < 3:
                raise ConfigError("--leave-one-out needs at least 3 runs", path="rebaseline")
            print("\n".join(leave_one_out(a.runs, a.disturbance_max, a.min_margin, a.gate_margin)))
            return 0
        cases = collect(a.runs, a.disturbance_max)
        sys.stdout.write(render(cases, len(a.runs), a.min_runs, a.min_margin, a.gate_margin, keys))
    except ConfigError as err:
        print(f"dpgate rebaseline: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
