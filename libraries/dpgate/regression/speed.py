"""``cpp_at_load`` history at the current run's core speed: compare like with like.

A slow phase of the host raises cycles per packet without any change to the SUT, and a
shared CI VM can stay slow for hours (the speed probe read 13-20 M it/s per core against
~30 for whole sessions). Held against a history measured at full speed, such a run can only
be inconclusive; held against runs measured at about its own speed, it can be judged. So the
check uses the history runs whose SUT core ran within :data:`BAND` of this run's speed
(``sut_core_speed``, M it/s), each scaled to this run's speed by ``cpp ~ speed^-e``:
``value x (their speed / this speed)^e`` with the SUT's exponent ``e``
(``cpp_speed_exponent``, recorded by the gate: ``dpgate.telemetry.disturbance``).

The exponents were fitted on this machine class (log cycles per packet against log speed,
65-151 cpp_at_load trials per SUT and set over five sets at 13-33 M it/s): kernel SUTs 0.44
to 0.60 (their cycles follow the core's speed in part), testpmd's own busy cycles 0.07 to
0.15. Within the band an exponent off by 0.1 moves a value by at most 1.8 %.

>>> hist = [{"cpp_at_load": 5000.0, "sut_core_speed": 16.0}, {"cpp_at_load": 4000.0, "sut_core_speed": 30.0},
...         {"cpp_at_load": 5200.0, "sut_core_speed": 18.0}, {"cpp_at_load": 5100.0}]
>>> [(s, round(v)) for s, v in at_speed(hist, 17.0, 0.5)]
[(16.0, 4851), (18.0, 5351)]
>>> at_speed(hist, 17.0, None), at_speed(hist, None, 0.5), at_speed(hist, 24.0, 0.5)
([], [], [])
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from dpgate.regression.history import RunValue, run_value

#: History runs count when their SUT core ran at 1/BAND .. BAND x this run's speed.
BAND = 1.2


def _speed(entry: Dict) -> Optional[float]:
    s = (entry.get("metrics") or entry).get("sut_core_speed")
    return float(s) if isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0 else None


def at_speed(
    history: Sequence[Dict], speed: Optional[float], exponent: Optional[float], band: float = BAND
) -> List[Tuple[float, RunValue]]:
    """(their speed, their ``cpp_at_load`` scaled to ``speed``, samples kept) of the history
    runs measured within ``band`` of ``speed``; empty when this run's speed or exponent is
    unknown."""
    if not isinstance(speed, (int, float)) or not isinstance(exponent, (int, float)):
        return []
    out: List[Tuple[float, RunValue]] = []
    for h in in_band(history, speed, exponent, band):
        s, v = _speed(h), run_value(h, "cpp_at_load")
        assert s is not None and v is not None  # in_band keeps only entries with both
        f = (s / speed) ** exponent
        out.append((s, [x * f for x in v] if isinstance(v, list) else v * f))
    return out


def in_band(
    history: Sequence[Dict], speed: Optional[float], exponent: Optional[float], band: float = BAND
) -> List[Dict]:
    """The history entries :func:`at_speed` takes (their time span sets the allowance's floor)."""
    if not isinstance(speed, (int, float)) or speed <= 0 or not isinstance(exponent, (int, float)):
        return []
    return [
        h
        for h in history
        if (s := _speed(h)) is not None
        and run_value(h, "cpp_at_load") is not None
        and 1 / band <= s / speed <= band
    ]
