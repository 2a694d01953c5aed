"""TMAM level 1 (Top-down Microarchitecture Analysis), seed 000 section 5 equations.

With ``slots = W x CPU_CLK_UNHALTED.THREAD_ANY`` (issue width W: 4 on Skylake..Cascade
Lake; pass ``slots_per_cycle`` for other microarchitectures; per-thread
CPU_CLK_UNHALTED.THREAD when THREAD_ANY is absent, e.g. HT off)::

    Retiring        = UOPS_RETIRED.RETIRE_SLOTS / slots
    Bad Speculation = (UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + W x INT_MISC.RECOVERY_CYCLES) / slots
    Frontend Bound  = IDQ_UOPS_NOT_DELIVERED.CORE / slots
    Backend Bound   = 1 - (Retiring + Bad Speculation + Frontend Bound)

>>> t = tmam_from_events({"CPU_CLK_UNHALTED.THREAD_ANY": 1000, "UOPS_RETIRED.RETIRE_SLOTS": 2000,
...                       "UOPS_ISSUED.ANY": 2200, "INT_MISC.RECOVERY_CYCLES": 25,
...                       "IDQ_UOPS_NOT_DELIVERED.CORE": 600})
>>> t.retiring, t.bad_speculation, t.frontend_bound, round(t.backend_bound, 3)
(0.5, 0.075, 0.15, 0.275)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional

from . import TMAM_KEYS, TelemetryError  # noqa: F401  (TMAM_KEYS: importable here too)

#: Pipeline issue slots per cycle by microarchitecture (TMAM level 1).
SLOTS_PER_CYCLE = {
    "haswell": 4,
    "broadwell": 4,
    "skylake": 4,
    "cascadelake": 4,
    "icelake": 5,
    "sapphirerapids": 6,
}


@dataclass(frozen=True)
class Tmam:
    retiring: float
    bad_speculation: float
    frontend_bound: float
    backend_bound: float

    def as_dict(self) -> Dict[str, float]:
        return {
            "tmam_retiring": self.retiring,
            "tmam_bad_speculation": self.bad_speculation,
            "tmam_frontend_bound": self.frontend_bound,
            "tmam_backend_bound": self.backend_bound,
        }

    @property
    def total(self) -> float:
        return self.retiring + self.bad_speculation + self.frontend_bound + self.backend_bound


#: Level-1 node names as toplev and perf print them, mapped to Tmam fields.
_L1 = {
    "retiring": "retiring",
    "bad_speculation": "bad_speculation",
    "badspeculation": "bad_speculation",
    "bad_spec": "bad_speculation",
    "frontend_bound": "frontend_bound",
    "fe_bound": "frontend_bound",
    "backend_bound": "backend_bound",
    "be_bound": "backend_bound",
}
#: How far the four level-1 values may add up away from 100 % (printing rounds each to 0.1-0.01).
SUM_TOLERANCE = 0.01
#: How far one level-1 value may lie outside 0..100 % (rounding of a value printed as 0.0 or 100.0).
RANGE_TOLERANCE = 0.001


def l1_name(name: str) -> Optional[str]:
    """Tmam field of a level-1 node name, or None: ``%  tma_retiring``, ``Frontend_Bound``,
    ``bad speculation`` (legacy perf --topdown), ``topdown-fe-bound``.

    >>> l1_name("%  tma_bad_speculation"), l1_name("Backend_Bound"), l1_name("tma_memory_bound")
    ('bad_speculation', 'backend_bound', None)
    """
    k = name.strip().lstrip("%").strip().lower().replace(" ", "_").replace("-", "_")
    for prefix in ("tma_", "topdown_"):
        k = k.removeprefix(prefix)
    return _L1.get(k)


def tmam_checked(values: Mapping[str, float], source: str, percent: Optional[bool] = None) -> Tmam:
    """A Tmam from the four level-1 values; percent or ratio decided by ``percent`` or by the
    sum (about 100 or about 1). Values that do not add up to 100 % +- rounding are an error."""
    missing = [
        f for f in ("retiring", "bad_speculation", "frontend_bound", "backend_bound") if f not in values
    ]
    if missing:
        raise TelemetryError(f"{source} lacks TMAM level-1 {', '.join(missing)}")
    total = sum(values.values())
    if percent is None:
        percent = total > 10.0
    scale = 100.0 if percent else 1.0
    t = Tmam(**{k: float(v) / scale for k, v in values.items()})
    bad = {k: v for k, v in values.items() if not -RANGE_TOLERANCE <= float(v) / scale <= 1 + RANGE_TOLERANCE}
    if bad:
        shown = ", ".join(f"{k} {v:g}{' %' if percent else ''}" for k, v in bad.items())
        raise TelemetryError(
            f"{source}: TMAM level-1 value outside 0..100 %: {shown} (not a fraction of "
            "pipeline slots: wrong units or a broken counter)"
        )
    if abs(t.total - 1.0) > SUM_TOLERANCE:
        shown = ", ".join(f"{k} {v:g}" for k, v in values.items())
        raise TelemetryError(
            f"{source}: TMAM level-1 values add up to {t.total * 100:.1f} %, not 100 % ({shown}): truncated or mixed output?"
        )
    return t


def tmam_from_events(events: Mapping[str, float], slots_per_cycle: int = 4) -> Tmam:
    ev = {k.upper(): float(v) for k, v in events.items()}
    clk = ev.get("CPU_CLK_UNHALTED.THREAD_ANY", ev.get("CPU_CLK_UNHALTED.THREAD"))
    need = [
        "UOPS_RETIRED.RETIRE_SLOTS",
        "UOPS_ISSUED.ANY",
        "INT_MISC.RECOVERY_CYCLES",
        "IDQ_UOPS_NOT_DELIVERED.CORE",
    ]
    missing = [e for e in need if e not in ev] + (
        [] if clk is not None else ["CPU_CLK_UNHALTED.THREAD(_ANY)"]
    )
    if missing or clk is None:
        raise TelemetryError(f"TMAM level 1 needs events {', '.join(missing)}")
    slots = slots_per_cycle * float(clk)
    if slots <= 0:
        raise TelemetryError("TMAM level 1: zero unhalted cycles counted")
    ret = ev["UOPS_RETIRED.RETIRE_SLOTS"] / slots
    bad = (
        ev["UOPS_ISSUED.ANY"]
        - ev["UOPS_RETIRED.RETIRE_SLOTS"]
        + slots_per_cycle * ev["INT_MISC.RECOVERY_CYCLES"]
    ) / slots
    fe = ev["IDQ_UOPS_NOT_DELIVERED.CORE"] / slots
    return Tmam(ret, bad, fe, 1.0 - ret - bad - fe)


def tmam_from_topdown_metrics(metrics: Mapping[str, float]) -> Tmam:
    """From level-1 metric values keyed by name (percent or ratio, decided by their sum)."""
    vals: Dict[str, float] = {}
    for name, value in metrics.items():
        k = l1_name(name)
        if k is not None:
            vals[k] = float(value)
    return tmam_checked(vals, "topdown output")


def tmam_from_perf_metrics(metrics: Mapping[str, float]) -> Tmam:
    """From ``perf stat -x, -M TopdownL1`` / ``--topdown`` metric columns (PerfStat.metrics).

    Units are ``%  tma_retiring`` (perf 5.16 and later: percent), ``retiring`` / ``frontend
    bound`` (legacy --topdown: percent) or ``Retiring`` (older metric JSON: ratio).
    """
    vals: Dict[str, float] = {}
    percent = None
    for unit, value in metrics.items():
        k = l1_name(unit)
        if k is None:
            continue
        vals[k] = float(value)
        if "%" in unit or " " in unit.strip():
            percent = True
    return tmam_checked(vals, "perf stat topdown metrics", percent)


def parse_toplev_csv(text: str) -> Tmam:
    """TMAM level 1 from toplev ``-l1 -x,`` output (pmu-tools tl_output.py OutputCSV).

    Header ``[Timestamp,][CPUs,]Area,Value,Unit,Description,Sample,Stddev,Multiplex,
    Bottleneck,Idle``; the ``Area`` column holds the node name (``Frontend_Bound``) and
    ``Value`` is percent of slots (``Unit`` ``% Slots``, ``<`` appended when below
    threshold). Rows of several CPUs/cores or intervals are averaged; ``SUMMARY`` rows win
    over interval rows. ``#`` lines (toplev's version line) and other output are ignored.
    """
    import csv
    import io

    if not text or not text.strip():
        raise TelemetryError("toplev output is empty")
    rows = [r for r in csv.reader(io.StringIO(text)) if r and not r[0].startswith("#")]
    head_at = next((i for i, r in enumerate(rows) if "Area" in r and "Value" in r), None)
    if head_at is None:
        raise TelemetryError(
            "toplev CSV has no header row with 'Area' and 'Value' columns (run toplev with -x, and without --no-csv-header)"
        )
    head = [c.strip() for c in rows[head_at]]
    a, v = head.index("Area"), head.index("Value")
    t = head.index("Timestamp") if "Timestamp" in head else None
    acc: Dict[str, List[float]] = {}
    summary: Dict[str, List[float]] = {}
    for r in rows[head_at + 1 :]:
        if len(r) <= max(a, v):
            if any(l1_name(c) for c in r):
                raise TelemetryError(
                    f"toplev CSV row {','.join(r)!r} is shorter than its header (truncated?)"
                )
            continue
        k = l1_name(r[a])
        if k is None:
            continue
        try:
            val = float(r[v])
        except ValueError:
            raise TelemetryError(f"toplev CSV: {r[a]} value {r[v]!r} is not a number") from None
        if not -100 * RANGE_TOLERANCE <= val <= 100 * (1 + RANGE_TOLERANCE):
            raise TelemetryError(
                f"toplev CSV row {','.join(r)!r}: {r[a]} {val:g} % of slots is outside 0..100 %"
            )
        target = summary if t is not None and r[t].strip() == "SUMMARY" else acc
        target.setdefault(k, []).append(val)
    use = summary or acc
    if not use:
        raise TelemetryError(
            "toplev CSV has no level-1 rows (Frontend_Bound, Bad_Speculation, Backend_Bound, Retiring): run toplev -l1 -v"
        )
    return tmam_checked({k: sum(x) / len(x) for k, x in use.items()}, "toplev CSV", percent=True)


def plot_tmam_bars(records: Mapping[str, Tmam], path: str) -> str:
    """Stacked TMAM level-1 bars, one per test, to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(records)
    parts = [
        ("Retiring", "retiring"),
        ("Bad Speculation", "bad_speculation"),
        ("Frontend Bound", "frontend_bound"),
        ("Backend Bound", "backend_bound"),
    ]
    fig, ax = plt.subplots(figsize=(max(4, 1.2 * len(names)), 4))
    bottom = [0.0] * len(names)
    for label, attr in parts:
        vals = [getattr(records[n], attr) * 100 for n in names]
        ax.bar(names, vals, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("% of pipeline slots")
    ax.set_ylim(0, 100)
    ax.legend(fontsize=8)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
