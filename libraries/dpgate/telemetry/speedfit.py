"""How a SUT's cycles per packet follow its core's speed, fitted from recorded gate runs.

The gate takes ``cpp_at_load`` and the paired check's cycles to a reference core speed by
``x (speed / ref)^e`` (``cpp_speed_exponent``: per kind of SUT,
:data:`dpgate.telemetry.disturbance.CPP_SPEED_EXPONENT`, and per CPU where it was measured
apart, :data:`~dpgate.telemetry.disturbance.MODEL_EXPONENT`). On a new machine class the
exponent is a fit to that class's own runs: ``benchmarks/speed_exponent.py`` reads the runs the
gate recorded (``dpgate/trials.jsonl``), fits ``e`` per SUT and frame size (:func:`pooled_fit`)
and replays their paired verdicts with a candidate ``e`` (:func:`paired_rows`, then
:func:`dpgate.telemetry.paired.judge` with ``exponent=``).

The fit takes the trials at a fixed load that read their SUT core's speed (``cpp_at_load``'s
and both sides of the paired check's), grouped by run, test, side and load; within each group
log cycles per packet against log speed, the group's own means removed (a step between runs
or between the paired sides is not read as speed), least squares pooled over the groups.
Trials others disturbed beyond ``dmax`` (``details.cpu.disturbance``) or measured again
(``details.superseded``) are left out, as the gate leaves them out.

>>> rows = [{"test": "t", "intended_load_pps": 1e5, "sut_cpu_cycles_per_packet": 3000 * (30 / s) ** 0.7,
...          "details": {"sut_core_speed": s, "cpu": {"disturbance": 0.01}}} for s in (20.0, 30.0, 40.0)]
>>> fit = pooled_fit(fixed_load_points(rows).values())
>>> round(fit.exponent, 3), fit.points, fit.groups
(0.7, 3, 1)
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

#: Trials others took more than this share of a core in are left out (the gate's default
#: ``disturbance_max`` for a ``cpp_at_load`` trial).
DMAX = 0.10
#: Fewest trials a group needs to say anything about speed.
MIN_POINTS = 3

Row = Mapping[str, Any]


@dataclass(frozen=True)
class SpeedFit:
    """``cpp ~ speed^-exponent`` over ``points`` trials in ``groups`` groups; ``residual``:
    the sd of what the line leaves of log cycles (0.05: about 5 %); the speeds it spans."""

    exponent: float
    points: int
    groups: int
    residual: float
    speed_low: float
    speed_high: float


def cycles_of(row: Row) -> Tuple[str, Optional[float]]:
    """(field, value) of a trial's cycles per packet as the gate reads them: a polling SUT's
    busy cycles (``sut_cycles_per_packet``) where it reports them, else its threads' CPU time
    (``sut_cpu_cycles_per_packet``).

    >>> cycles_of({"sut_cycles_per_packet": 5000.0, "sut_cpu_cycles_per_packet": 9000.0})
    ('sut_cycles_per_packet', 5000.0)
    >>> cycles_of({"sut_cycles_per_packet": None, "sut_cpu_cycles_per_packet": 3100.0})
    ('sut_cpu_cycles_per_packet', 3100.0)
    """
    busy = row.get("sut_cycles_per_packet")
    if busy:
        return "sut_cycles_per_packet", float(busy)
    cpu = row.get("sut_cpu_cycles_per_packet")
    return "sut_cpu_cycles_per_packet", (float(cpu) if cpu else None)


def _details(row: Row) -> Mapping[str, Any]:
    return row.get("details") or {}


def kept(row: Row, dmax: float = DMAX) -> bool:
    """Whether a trial counts: not measured again, its foreign share known and within ``dmax``.

    >>> kept({"details": {"cpu": {"disturbance": 0.02}}}), kept({"details": {"cpu": {"disturbance": 0.3}}})
    (True, False)
    >>> kept({"details": {"superseded": "disturbed", "cpu": {"disturbance": 0.0}}}), kept({"details": {}})
    (False, False)
    """
    d = _details(row)
    foreign = (d.get("cpu") or {}).get("disturbance")
    return not d.get("superseded") and foreign is not None and foreign <= dmax


def fixed_load_points(
    rows: Iterable[Row], dmax: float = DMAX, run: str = ""
) -> Dict[Tuple[str, str, str, float], List[Tuple[float, float]]]:
    """(speed, cycles) of every kept trial that read its SUT core's speed, by (``run``, test,
    side, load); side is ``details.paired_side`` (the twin's trials: ``baseline``) or ``sut``.

    >>> pts = fixed_load_points([
    ...     {"test": "t", "intended_load_pps": 1e5, "sut_cpu_cycles_per_packet": 3000.0,
    ...      "details": {"sut_core_speed": 30.0, "cpu": {"disturbance": 0.0}, "paired_side": "baseline"}},
    ...     {"test": "t", "intended_load_pps": 9e5, "sut_cpu_cycles_per_packet": 2900.0,
    ...      "details": {"cpu": {"disturbance": 0.0}}}])  # a search trial: no speed read
    >>> pts
    {('', 't', 'baseline', 100000.0): [(30.0, 3000.0)]}
    """
    out: Dict[Tuple[str, str, str, float], List[Tuple[float, float]]] = {}
    for row in rows:
        d = _details(row)
        speed, (_, cycles) = d.get("sut_core_speed"), cycles_of(row)
        if not speed or not cycles or speed <= 0 or not kept(row, dmax):
            continue
        key = (
            run,
            str(row.get("test", "")),
            str(d.get("paired_side") or "sut"),
            float(row["intended_load_pps"]),
        )
        out.setdefault(key, []).append((float(speed), cycles))
    return out


def pooled_fit(
    groups: Iterable[Sequence[Tuple[float, float]]], min_points: int = MIN_POINTS
) -> Optional[SpeedFit]:
    """The exponent ``e`` of ``cycles ~ speed^-e`` by least squares within each group of
    (speed, cycles) points, pooled; None without two speeds in some group of ``min_points``.

    >>> a = [(s, 4000 * (30 / s) ** 0.5) for s in (20.0, 25.0, 35.0)]
    >>> b = [(s, 1.2 * c) for s, c in a]  # another run 20 % higher: not a speed effect
    >>> fit = pooled_fit([a, b])
    >>> round(fit.exponent, 3), fit.groups, fit.speed_low, fit.speed_high, round(fit.residual, 6)
    (0.5, 2, 20.0, 35.0, 0.0)
    >>> pooled_fit([[(30.0, 1.0)] * 3]) is None
    True
    """
    sxy = sxx = 0.0
    points, used, speeds, logs = 0, 0, [], []
    for group in groups:
        if len(group) < min_points:
            continue
        xs = [math.log(s) for s, _ in group]
        ys = [math.log(c) for _, c in group]
        mx, my = statistics.fmean(xs), statistics.fmean(ys)
        sxy += sum((x - mx) * (y - my) for x, y in zip(xs, ys))
        sxx += sum((x - mx) ** 2 for x in xs)
        logs.append([(x - mx, y - my) for x, y in zip(xs, ys)])
        points, used = points + len(group), used + 1
        speeds += [s for s, _ in group]
    if sxx <= 0.0:
        return None
    slope = sxy / sxx
    left = [y - slope * x for g in logs for x, y in g]
    dof = max(1, points - used - 1)
    residual = math.sqrt(sum(v * v for v in left) / dof)
    return SpeedFit(-slope, points, used, residual, min(speeds), max(speeds))


def paired_rows(rows: Iterable[Row], load: float) -> List[Tuple[Row, Row]]:
    """The paired check's (baseline, SUT) trials of one case as the gate measured them: from
    the twin's first trial on, the kept trials (not measured again) at ``load`` taken two by
    two in time order (A B B A: each pair is two trials in a row, one of each side; a second
    round starts on a pair's boundary). The ``cpp_at_load`` trials before it are not pairs.

    >>> def t(time, side=None, sup=False, load=1e5):
    ...     return {"time": time, "intended_load_pps": load,
    ...             "details": {**({"paired_side": side} if side else {}), **({"superseded": "x"} if sup else {})}}
    >>> rows = [t(0), t(1), t(2, "baseline", sup=True), t(3, "baseline"), t(4), t(5), t(6, "baseline"), t(7, load=9e5)]
    >>> [(b["time"], s["time"]) for b, s in paired_rows(rows, 1e5)]
    [(3, 4), (6, 5)]
    """
    rows = sorted(rows, key=lambda r: r.get("time") or 0.0)
    starts = [r["time"] for r in rows if _details(r).get("paired_side")]
    if not starts:
        return []
    seq = [
        r
        for r in rows
        if r["time"] >= starts[0]
        and not _details(r).get("superseded")
        and abs(float(r["intended_load_pps"]) - load) <= 1e-6 * max(1.0, load)
    ]
    out: List[Tuple[Row, Row]] = []
    for first, second in zip(seq[0::2], seq[1::2]):
        sides = [bool(_details(r).get("paired_side")) for r in (first, second)]
        if sides[0] == sides[1]:
            break  # not the A B B A the gate measured: stop rather than pair across sides
        out.append((first, second) if sides[0] else (second, first))
    return out
