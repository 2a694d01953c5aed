"""Per-case thresholds from healthy runs' values: the rules of ``python -m
dpgate.config.rebaseline`` (its module doc says them), and the runs' values they read."""

from __future__ import annotations

import statistics
from typing import Dict, List, Optional

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
            if isinstance(rec.get("started"), (int, float)):
                vals.setdefault("started", []).append(float(rec["started"]))
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
