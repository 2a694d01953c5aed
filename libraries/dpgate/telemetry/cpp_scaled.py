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
from typing import Dict, Iterable, Optional, Tuple

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
    trials: Iterable,
    exponent: float,
    ref: float = CPP_REF_SPEED,
    field: str = "sut_cpu_cycles_per_packet",
    memory_exponent: float = 0.0,
) -> Optional[float]:
    """Median over ``trials`` (not superseded ones) of ``field`` x (the trial's SUT core
    speed / ``ref``)^``exponent``, to 0.1 cycle; None when no trial has both. With a
    ``memory_exponent`` also x (:data:`CPP_REF_MEMORY_NS` / the trial's ``sut_memory_ns``)^that,
    over the trials that have a memory reading."""
    vals = []
    for t in trials:
        details = getattr(t, "details", None) or {}
        value, speed = getattr(t, field, None), details.get("sut_core_speed")
        if details.get("superseded") or not value or not speed or speed <= 0:
            continue
        if memory_exponent:
            mem = details.get("sut_memory_ns")
            if not mem or mem <= 0:
                continue
            value *= (CPP_REF_MEMORY_NS / mem) ** memory_exponent
        vals.append(to_ref(value, speed, exponent, ref))
    return round(statistics.median(vals), 1) if vals else None


#: The memory probe's reading (``dpgate.exec.memprobe``, ns per gathered element) every trial is
#: scaled to with a memory exponent: about the Xeon VM's median (13-17 ns on 2026-12-01).
CPP_REF_MEMORY_NS = 15.0
#: ``cpp ~ speed^-e x memory_ns^m``: (e, m) per SUT kind and CPU model where both were measured.
#: The Intel Xeon VM's kernel SUTs (2026-12-01, 16 bring-ups each of linux-ip4, -bridge,
#: -xconnect, 6 x 2 s trials at 72 kpps, two sets): fitted on the bring-ups' medians e 0.24-0.65,
#: m 0.42-0.55; with (0.3, 0.5) the bring-ups spread 8.2-14.3 % where speed^1 alone (the model's
#: exponent without memory) left 14.0-41.1 %; over gk72's quiet gate runs (a calmer hour) 4.1-7.9 %
#: against 7.1-7.8 % (docs/embedded.md).
MEMORY_EXPONENTS: Dict[Tuple[str, str], Tuple[float, float]] = {
    ("kernel", "Intel(R) Xeon(R) Processor"): (0.3, 0.5)
}


def memory_exponents(polling: bool, model: Optional[str]) -> Optional[Tuple[float, float]]:
    """(speed exponent, memory exponent) for this SUT kind on CPU ``model``; None: not measured.

    >>> memory_exponents(False, "Intel(R) Xeon(R) Processor"), memory_exponents(True, "Intel(R) Xeon(R) Processor")
    ((0.3, 0.5), None)
    """
    return MEMORY_EXPONENTS.get(("polling" if polling else "kernel", model or ""))


def scaled_signal(
    trials: Iterable, exponent: float, pair: Optional[Tuple[float, float]], field: str
) -> Dict[str, float]:
    """``cpp_at_load_scaled`` and ``cpp_scaled_speed``: every trial scaled by the speed
    ``exponent``; or, when the SUT kind has a measured ``pair`` (speed and memory exponents)
    and at least half the trials a memory reading, scaled by both (those trials), recorded
    with ``cpp_memory_exponent``, ``cpp_memory_speed_exponent`` and ``cpp_scaled_memory_ns``:
    the history compares only figures scaled alike (``dpgate.regression.cycles``).

    >>> class T:
    ...     def __init__(self, cpp, speed, mem=None):
    ...         self.sut_cpu_cycles_per_packet = cpp
    ...         self.details = {"sut_core_speed": speed, **({"sut_memory_ns": mem} if mem else {})}
    >>> f = "sut_cpu_cycles_per_packet"
    >>> scaled_signal([T(4000.0, 30.0, 15.0), T(4400.0, 30.0, 18.15)], 1.0, (0.3, 0.5), f)["cpp_at_load_scaled"]
    4000.0
    >>> scaled_signal([T(4000.0, 30.0), T(4400.0, 30.0, 18.15)], 1.0, (0.3, 0.5), f)
    {'cpp_at_load_scaled': 4000.0, 'cpp_scaled_speed': 30.0, 'cpp_memory_exponent': 0.5, 'cpp_memory_speed_exponent': 0.3, 'cpp_scaled_memory_ns': 15.0}
    >>> scaled_signal([T(4000.0, 30.0), T(4400.0, 30.0)], 1.0, (0.3, 0.5), f)
    {'cpp_at_load_scaled': 4200.0, 'cpp_scaled_speed': 30.0}
    """
    trials = list(trials)
    live = [t for t in trials if not (getattr(t, "details", None) or {}).get("superseded")]
    read = [t for t in live if (t.details or {}).get("sut_memory_ns")]
    if pair and live and 2 * len(read) >= len(live):
        value = cpp_at_ref_speed(read, pair[0], field=field, memory_exponent=pair[1])
        if value is not None:
            return {
                "cpp_at_load_scaled": value,
                "cpp_scaled_speed": CPP_REF_SPEED,
                "cpp_memory_exponent": pair[1],
                "cpp_memory_speed_exponent": pair[0],
                "cpp_scaled_memory_ns": CPP_REF_MEMORY_NS,
            }
    value = cpp_at_ref_speed(trials, exponent, field=field)
    return {} if value is None else {"cpp_at_load_scaled": value, "cpp_scaled_speed": CPP_REF_SPEED}


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
    exponent = telemetry.get("cpp_memory_speed_exponent", telemetry.get("cpp_speed_exponent", 0.5))
    if not all(isinstance(x, (int, float)) and x > 0 for x in (value, speed, ref)):
        return None
    # value = cpp x (speed_t / speed)^e for every trial; at ref instead: x (speed / ref)^e
    return float(value) * (float(speed) / float(ref)) ** float(exponent)  # type: ignore[arg-type]
