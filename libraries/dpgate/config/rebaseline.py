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
import sys
from typing import Dict, List, Optional

from dpgate.config.derive import DEFAULT_DISTURBANCE_MAX, DERIVED, collect, derive_case
from dpgate.config.leave_one_out import leave_one_out
from dpgate.model.errors import ConfigError
from dpgate.regression.classify import HISTORY_SPAN_H

__all__ = ["DEFAULT_DISTURBANCE_MAX", "DERIVED", "collect", "derive_case", "leave_one_out", "main", "render"]

SEEN = (
    ("ndr_pps", "NDR", 1e6, "{:.3f}-{:.3f} Mpps"),
    ("mrr_pps", "MRR", 1e6, "{:.3f}-{:.3f} Mpps"),
    ("cpp_at_load", "cpp_at_load", 1.0, "{:.0f}-{:.0f}"),
    ("cpp_at_load_scaled", "scaled", 1.0, "{:.0f}-{:.0f}"),
    ("cpp_at_load_per_kernel", "per kernel", 1.0, "{:.3f}-{:.3f}"),
    ("cpp_at_load_per_kernel_scaled", "per kernel scaled", 1.0, "{:.3f}-{:.3f}"),
)


def span_h(vals: Dict[str, List[float]]) -> Optional[float]:
    """Hours between the first and the last run's start (None: fewer than two runs say when).

    >>> span_h({"started": [1000.0, 4600.0, 2800.0]}), span_h({"started": [1000.0]})
    (1.0, None)
    """
    t = vals.get("started") or []
    return (max(t) - min(t)) / 3600 if len(t) >= 2 else None


def seen(vals: Dict[str, List[float]]) -> str:
    """The ranges a row was derived from, for its comment (a reviewer sees the spread), and the
    hours the runs span.

    >>> seen({"ndr_pps": [4.9e5, 5.2e5], "cpp_at_load": [3010.0, 3105.0, 0.0]})
    'n=2: NDR 0.490-0.520 Mpps (+6.1 %), cpp_at_load 3010-3105 (+3.2 %)'
    >>> seen({"ndr_pps": [4.9e5, 5.2e5], "started": [0.0, 5400.0]})
    'n=2 over 1.5 h: NDR 0.490-0.520 Mpps (+6.1 %)'
    """
    parts = []
    for key, label, unit, fmt in SEEN:
        v = [x / unit for x in vals.get(key, []) if x and x > 0]
        if v:
            parts.append(f"{label} {fmt.format(min(v), max(v))} (+{(max(v) / min(v) - 1) * 100:.1f} %)")
    span = span_h(vals)
    over = f" over {span:.1f} h" if span is not None else ""
    return f"n={len(vals.get('ndr_pps', []))}{over}: " + ", ".join(parts)


def young(cases, keys: Optional[List[str]] = None) -> Optional[str]:
    """A warning when the noise rows come from runs spanning less than the regression check's
    verdict span (:data:`~dpgate.regression.classify.HISTORY_SPAN_H`): the declared noise is the
    allowance of every history younger than that, so runs from one hour understate a host's drift
    over a day (gk99, 2026-12-04: twelve runs within 0.9 h allowed 7.8 %, a healthy run an hour
    later read +8.9 %). None when the rows have no noise or every case's runs span a day.

    >>> young({("linux-ip4", "64B"): {"ndr_pps": [1.0] * 5, "started": [0.0, 3240.0]}})[:58]
    'the runs span 0.9 h (linux-ip4 64B), under the 24 h a youn'
    >>> young({("linux-ip4", "64B"): {"ndr_pps": [1.0] * 5, "started": [0.0, 90000.0]}}) is None
    True
    """
    if keys and not any(k.endswith("noise") for k in keys):
        return None
    spans = [(s, f"{nf} {size}") for (nf, size), v in cases.items() if (s := span_h(v)) is not None]
    if not spans or min(spans)[0] >= HISTORY_SPAN_H:
        return None
    span, case = min(spans)
    return (
        f"the runs span {span:.1f} h ({case}), under the {HISTORY_SPAN_H:g} h a young history is held "
        "to the noise rows for: they understate a host's drift over a day; spread the runs over a day "
        "(e.g. one every 2-3 h) before the noise rows gate"
    )


def render(
    cases,
    runs: int,
    min_runs: int,
    min_margin: float,
    gate_margin: Optional[float] = None,
    keys: Optional[List[str]] = None,
    warning: Optional[str] = None,
) -> str:
    """The rows as YAML; ``keys``: only those thresholds (e.g. a machine class's file that
    takes its floors from these runs and the rest from the base file); ``warning``: :func:`young`'s line, as a
    comment."""
    lines = [
        f"# Derived by 'python -m dpgate.config.rebaseline' from {runs} runs (healthy measurements only):",
        "# floors = lowest seen / (1 + spread), cpp_at_load_max = highest seen x (1 + spread),",
        f"# noise = spread x 1.1; spread = max/min - 1 over the runs, at least {min_margin:.0%};",
        f"# floors and ceilings at least {max(min_margin, gate_margin or 0):.0%} from the lowest/highest seen.",
    ]
    if keys:
        lines.append(f"# Only {', '.join(keys)}: the rest comes from the file these rows are laid over.")
    if warning:
        lines.append(f"# Warning: {warning}.")
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
        warning = young(cases, keys)
        sys.stdout.write(render(cases, len(a.runs), a.min_runs, a.min_margin, a.gate_margin, keys, warning))
        if warning:
            print(f"dpgate rebaseline: warning: {warning}", file=sys.stderr)
    except ConfigError as err:
        print(f"dpgate rebaseline: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
