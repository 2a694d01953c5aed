"""``cpp_at_load_scaled``: a SUT's cycles per packet with the host's speed taken out.

A kernel SUT's cycles per packet are its CPU time x the core's nominal Hz, so a slow phase of
a shared host (the awake loop's iterations per CPU second, ``sut_core_speed``, 15-22 M it/s
against ~30 at full speed) raises them with no change to the SUT, and the phases change from
one 2 s trial to the next. ``cpp_at_load`` keeps the median of the trials at full speed; when
few or none ran at full speed it rests on a handful of trials, or on slow ones. This figure
uses every trial instead: each trial's value is scaled to the reference speed
:data:`CPP_REF_SPEED` by ``cpp ~ speed^-e`` (``value x (its speed / reference)^e``, the SUT's
exponent), and the median over the trials is the run's figure. Runs measured at different
speeds are then comparable without picking history runs at this run's speed.

Measured on the 2-core VM (2026-11-26, ``e`` = 0.5; quiet runs, median of all trials scaled,
against the median of the full-speed trials): linux-ip4 six gate runs 5.6 % apart against
17.3 %, linux-bridge 6.5 % against 18.9 % (set gs13, the host slow half the time); 8-trial
runs every 86 s for 40 minutes of a slow phase (trials at 8-31 M it/s): run sd 2.8 % for
bridge and ip4 (19 runs each) against 5.7 and 7.4 % unscaled, +10 % injected cost reading
+10.9 to +17.0 % (bridge) and +6.3 to +15.4 % (ip4).

Polling SUTs (since 2026-11-27): their own busy-cycle report per packet
(``sut_cycles_per_packet``), ``e`` = 0.25 (their fit since their ports' NAPI is deferred).
On their slow hosts "full speed" was the fastest few trials of a run, so their
``cpp_at_load`` rested on 3-5 trials of 17-26. Re-read from the recorded trials of four
``benchmarks/gate_signal.py`` sets, quiet healthy runs, spread (max/min - 1) of the full-speed
median against this figure: testpmd-mac 37.3 -> 11.2 % (gs22, 7 runs) and 18.6 -> 14.4 %
(gs18, 5), OVS-DPDK 15.1 -> 7.9 % (gs18, 5), testpmd-io 16.7 -> 15.1 % (gs17, 5); the +10 %
injected runs read +11.1, +9.1, -0.9 % (gs22) where the full-speed median read +25.5,
+30.3, +1.2 %: about half the error.

>>> class T:
...     def __init__(self, cpp, speed): self.sut_cpu_cycles_per_packet, self.details = cpp, {"sut_core_speed": speed}
>>> cpp_at_ref_speed([T(3000.0, 30.0), T(5600.0, 15.0), T(4700.0, 22.0)], 0.5)
3959.8
>>> cpp_at_ref_speed([T(4000.0, None)], 0.5) is None
True
"""

from __future__ import annotations

import statistics
from typing import Iterable, Optional

#: The SUT core speed (awake loop, M iterations per CPU second) every trial is scaled to: the
#: full speed of the 2-core VM class. Records carry it (``cpp_scaled_speed``) and the history
#: check compares only figures scaled to the same speed.
CPP_REF_SPEED = 30.0


def to_ref(value: float, speed: float, exponent: float, ref: float = CPP_REF_SPEED) -> float:
    """One trial's cycles per packet ``value``, measured at core ``speed``, at the reference
    speed ``ref`` by ``cpp ~ speed^-exponent``.

    >>> round(to_ref(4200.0, 15.0, 0.5), 1)
    2969.8
    """
    return float(value) * (float(speed) / ref) ** exponent


def cpp_at_ref_speed(
    trials: Iterable, exponent: float, ref: float = CPP_REF_SPEED, field: str = "sut_cpu_cycles_per_packet"
) -> Optional[float]:
    """Median over ``trials`` (not superseded ones) of ``field`` x (the trial's SUT core
    speed / ``ref``)^``exponent``, to 0.1 cycle; None when no trial has both."""
    vals = []
    for t in trials:
        details = getattr(t, "details", None) or {}
        value, speed = getattr(t, field, None), details.get("sut_core_speed")
        if details.get("superseded") or not value or not speed or speed <= 0:
            continue
        vals.append(to_ref(value, speed, exponent, ref))
    return round(statistics.median(vals), 1) if vals else None


def scaled_at(telemetry: dict, ref: Optional[float]) -> Optional[float]:
    """A case's ``cpp_at_load_scaled`` moved to the reference speed ``ref`` (the speed a
    ``cpp_at_load_max`` ceiling holds for: the thresholds' ``core_speed``) by the exponent it
    was scaled with; None when the case has no scaled figure (polling SUTs) or ``ref`` is unknown.

    >>> scaled_at({"cpp_at_load_scaled": 3217.5, "cpp_scaled_speed": 30.0, "cpp_speed_exponent": 0.5}, 30.0)
    3217.5
    >>> round(scaled_at({"cpp_at_load_scaled": 3000.0, "cpp_scaled_speed": 30.0, "cpp_speed_exponent": 0.5}, 27.0))
    3162
    >>> scaled_at({"cpp_at_load": 4040.0}, 30.0) is None
    True
    """
    value, speed = telemetry.get("cpp_at_load_scaled"), telemetry.get("cpp_scaled_speed")
    exponent = telemetry.get("cpp_speed_exponent", 0.5)
    if not all(isinstance(x, (int, float)) and x > 0 for x in (value, speed, ref)):
        return None
    # value = cpp x (speed_t / speed)^e for every trial; at ref instead: x (speed / ref)^e
    return float(value) * (float(speed) / float(ref)) ** float(exponent)  # type: ignore[arg-type]
