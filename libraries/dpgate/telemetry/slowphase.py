"""How much of a miss a slow host phase can explain, and when a miss is more than that.

A case's ``disturbance`` is the larger of two things per trial (``dpgate.traffic.trialflow``):
others' CPU time on the TG/SUT cores (``disturbance_foreign``) and the share of a core a slow
host phase took (``1 - speed / full speed``, ``dpgate.exec.speedprobe``). Either above
``disturbance_max`` makes a failing verdict inconclusive (``dpgate.robot.gate_checks``). On
the half-speed Zen 3 host every case is in a slow phase (speed ratio 0.3-0.55 over whole
sessions), so before this a fixed floor or ceiling could not FAIL there at all: a SUT that
forwards a third of what it did read "inconclusive, measure again on a quieter machine".

A slow phase differs from a neighbour: it slows the core, it does not stall it (the guest's
steal stays 0; the probe reads the core's own iterations per CPU second), and a slower core
takes at most its speed's share of the throughput. Measured on the 2-core VMs, a kernel
SUT's cycles per packet follow the speed as ``speed^-0.5`` and a polling SUT's as
``speed^-0.25`` (``CPP_SPEED_EXPONENT``), so its throughput follows ``speed^0.5`` or less;
scaling a limit linearly by the speed ratio ``r`` is the most a slow phase can take. So when
others' time stayed within ``disturbance_max`` and the value misses even the limit moved by
``r`` (a floor times ``r``, a ceiling of cycles per packet divided by it), the slow phase does
not explain the miss and the verdict is FAIL.

Re-judged on the recorded cases of 2026-11-28/29 (187 records on the Zen 3 host, 302 healthy
floor and ``cpp_max`` values with others' time <= 10 % and a slow phase > 10 %): the closest
healthy value stood 1.36x clear of the moved limit (1 % of them within 1.48x); none crossed.

>>> tel = {"disturbance": 0.52, "disturbance_foreign": 0.03, "core_speed_min": 14.4}
>>> beyond_slow(tel, 80_000.0, 240_000.0, "rate", 0.10, "{:.0f} pps".format)
'more than the slow host phase explains: its cores ran at 48 % of full speed (14.4 M it/s; others took 3.0 % of a core), where the floor would be 115200 pps'
>>> beyond_slow(tel, 160_000.0, 240_000.0, "rate", 0.10) is None   # within what the speed explains
True
>>> beyond_slow({**tel, "disturbance_foreign": 0.31}, 8.0e4, 2.4e5, "rate", 0.10) is None  # a neighbour: no
True
>>> beyond_slow(tel, 40_000.0, 10_000.0, "cost", 0.10, "{:.0f}".format)
'more than the slow host phase explains: its cores ran at 48 % of full speed (14.4 M it/s; others took 3.0 % of a core), where the ceiling would be 20833'
"""

from __future__ import annotations

from typing import Callable, Optional

#: A speed ratio under this is not judged: the host gave the case next to nothing.
MIN_RATIO = 0.1


def slow_ratio(telemetry: dict, dmax: Optional[float]) -> Optional[float]:
    """The speed ratio ``r`` of the slowest phase a case's verdict trials saw, when others' CPU
    time stayed within ``dmax`` and a slow phase is what made ``disturbance`` exceed it; None
    otherwise (clean, a neighbour, or not measured).

    >>> slow_ratio({"disturbance": 0.5, "disturbance_foreign": 0.02}, 0.1)
    0.5
    >>> [slow_ratio(t, 0.1) for t in ({"disturbance": 0.05, "disturbance_foreign": 0.05},
    ...     {"disturbance": 0.5, "disturbance_foreign": 0.5}, {"disturbance": 0.5})]
    [None, None, None]
    """
    d, foreign = telemetry.get("disturbance"), telemetry.get("disturbance_foreign")
    if not isinstance(d, (int, float)) or not isinstance(foreign, (int, float)) or dmax is None:
        return None
    if foreign > dmax or d <= dmax or d <= foreign:
        return None
    r = 1.0 - d  # d = the largest slow share: max over trials of max(foreign, slow) > max foreign
    return round(r, 4) if r >= MIN_RATIO else None


def beyond_slow(
    telemetry: dict,
    value: float,
    limit: float,
    kind: str,
    dmax: Optional[float],
    fmt: Callable[[float], str] = "{:g}".format,
) -> Optional[str]:
    """Why a miss of ``limit`` stands though the case was slowed (see the module doc), or None
    when the slow phase may explain it. ``kind``: ``rate`` (a floor: the most a slow phase
    takes is ``limit x r``) or ``cost`` (a ceiling on cycles per packet: ``limit / r``)."""
    if kind not in ("rate", "cost"):
        raise ValueError(f"kind must be 'rate' or 'cost', got {kind!r}")
    r = slow_ratio(telemetry, dmax)
    if r is None:
        return None
    moved = limit * r if kind == "rate" else limit / r
    if (value >= moved) if kind == "rate" else (value <= moved):
        return None
    speed = telemetry.get("core_speed_min")
    at = f"{speed:g} M it/s; " if isinstance(speed, (int, float)) else ""
    word = "floor" if kind == "rate" else "ceiling"
    return (
        f"more than the slow host phase explains: its cores ran at {r * 100:.0f} % of full speed "
        f"({at}others took {telemetry['disturbance_foreign'] * 100:.1f} % of a core), "
        f"where the {word} would be {fmt(moved)}"
    )
