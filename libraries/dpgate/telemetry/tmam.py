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
from typing import Dict, Mapping

from . import TelemetryError

#: Pipeline issue slots per cycle by microarchitecture (TMAM level 1).
SLOTS_PER_CYCLE = {"haswell": 4, "broadwell": 4, "skylake": 4, "cascadelake": 4, "icelake": 5,
                   "sapphirerapids": 6}


@dataclass(frozen=True)
class Tmam:
    retiring: float
    bad_speculation: float
    frontend_bound: float
    backend_bound: float

    def as_dict(self) -> Dict[str, float]:
        return {"tmam_retiring": self.retiring, "tmam_bad_speculation": self.bad_speculation,
                "tmam_frontend_bound": self.frontend_bound, "tmam_backend_bound": self.backend_bound}

    @property
    def total(self) -> float:
        return self.retiring + self.bad_speculation + self.frontend_bound + self.backend_bound


def tmam_from_events(events: Mapping[str, float], slots_per_cycle: int = 4) -> Tmam:
    clk = events.get("CPU_CLK_UNHALTED.THREAD_ANY", events.get("CPU_CLK_UNHALTED.THREAD"))
    need = ["UOPS_RETIRED.RETIRE_SLOTS", "UOPS_ISSUED.ANY", "INT_MISC.RECOVERY_CYCLES",
            "IDQ_UOPS_NOT_DELIVERED.CORE"]
    missing = [e for e in need if e not in events] + ([] if clk is not None else ["CPU_CLK_UNHALTED.THREAD(_ANY)"])
    if missing:
        raise TelemetryError(f"TMAM level 1 needs events {', '.join(missing)}")
    slots = slots_per_cycle * float(clk)
    if slots <= 0:
        raise TelemetryError("TMAM level 1: zero unhalted cycles counted")
    ret = events["UOPS_RETIRED.RETIRE_SLOTS"] / slots
    bad = (events["UOPS_ISSUED.ANY"] - events["UOPS_RETIRED.RETIRE_SLOTS"]
           + slots_per_cycle * events["INT_MISC.RECOVERY_CYCLES"]) / slots
    fe = events["IDQ_UOPS_NOT_DELIVERED.CORE"] / slots
    return Tmam(ret, bad, fe, 1.0 - ret - bad - fe)


def tmam_from_topdown_metrics(metrics: Mapping[str, float]) -> Tmam:
    """From perf's ``--topdown``/``-M TopdownL1`` metric values (percent or ratio)."""
    keys = {"retiring": None, "bad speculation": None, "frontend bound": None, "backend bound": None}
    for name, value in metrics.items():
        k = name.lower().replace("_", " ").replace("tma ", "").replace("topdown-", "").strip()
        k = {"fe bound": "frontend bound", "be bound": "backend bound", "bad spec": "bad speculation"}.get(k, k)
        if k in keys:
            keys[k] = float(value) / (100.0 if float(value) > 1.0 else 1.0)
    missing = [k for k, v in keys.items() if v is None]
    if missing:
        raise TelemetryError(f"topdown output lacks {', '.join(missing)}")
    return Tmam(keys["retiring"], keys["bad speculation"], keys["frontend bound"], keys["backend bound"])


def plot_tmam_bars(records: Mapping[str, Tmam], path: str) -> str:
    """Stacked TMAM level-1 bars, one per test, to a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(records)
    parts = [("Retiring", "retiring"), ("Bad Speculation", "bad_speculation"),
             ("Frontend Bound", "frontend_bound"), ("Backend Bound", "backend_bound")]
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
