"""``python -m dpgate.config.rebaseline --leave-one-out``: would a healthy run have passed the
thresholds derived from the other runs? The false FAIL rate the re-baselining rules give on a
machine class before they gate anything."""

from __future__ import annotations

from typing import List, Optional, Tuple

from dpgate.config.derive import collect, derive_case

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
