"""The kernel's work on the same frames, on the same core, in the same trial: a speed reference.

A polling SUT on this testbed (testpmd and OVS-DPDK on net_af_packet ports, OVS on AF_XDP
ports) shares its core with the kernel work its frames cause there: its ports' NAPI
threads and ``ksoftirqd`` (``sut_kernel_s`` of :mod:`dpgate.telemetry.cpuacct`, about 0.85 to
0.9 of the SUT's own busy cycles per frame here). Both slow down together when the host
does: over 30 one-second trials of three bring-ups each at 60 kpps (Xeon VM, 2026-12-01,
``benchmarks/cpp_at_load.py``) their logs correlated +0.90 (testpmd-io), +0.93 (testpmd-mac),
+0.95 (OVS-DPDK), +0.97 (OVS AF_XDP); a trial's scatter fell from 6.5-11 % (busy cycles) to
2.7-4.6 % (busy cycles per kernel cycle), and the runs' medians spread 2.2-3.2 % where the busy
cycles spread 2.7, 6.7, 19.9 and 39.1 %. The probe read between trials
(:mod:`dpgate.exec.speedprobe`) sees the core for 5 ms; this reference is read over the trial
itself, by the frames the SUT forwarded.

What it cannot see: a change that moves the SUT's own work and the kernel's alike (smaller
batches, say, cost both more per frame) reads smaller against it, and a change of the kernel's
part alone reads as the SUT's work falling. So the paired check judges by it *and* by the busy
cycles as before (``dpgate.telemetry.paired``), and it is a reference only where the kernel
does a real share of the work (:data:`KERNEL_SHARE_MIN`).

>>> class T:
...     def __init__(self, busy, own_s, kernel_s):
...         self.sut_cycles_per_packet, self.sut_cpu_cycles_per_packet = busy, 28000.0
...         self.details = {"cpu": {"sut_own_s": own_s, "sut_kernel_s": kernel_s}}
>>> kernel_cpp(T(2400.0, 1.0, 0.08))
2240.0
>>> round(per_kernel(T(2400.0, 1.0, 0.08)), 3), per_kernel(T(2400.0, 1.0, 0.001))  # 28 cycles: no reference
(1.071, None)
>>> cpp_per_kernel([T(2400.0, 1.0, 0.08), T(2600.0, 1.0, 0.09), T(2500.0, 1.0, 0.08)])
1.071

The ratio still follows the core's speed a little (a slower core raises the SUT's busy cycles a
little more than the kernel's), so the case also records it with every trial taken to the
reference speed (:func:`cpp_per_kernel_scaled`), which the history check compares.
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable, Optional

from dpgate.telemetry.cpp_scaled import CPP_REF_SPEED, to_ref

#: The kernel's cycles per frame must be at least this share of the SUT's busy cycles per frame
#: to be its reference (0.85-0.9 for the four polling SUTs here).
KERNEL_SHARE_MIN = 0.2
#: The SUT's busy-cycle report per frame (a polling SUT's figure).
BUSY_FIELD = "sut_cycles_per_packet"
#: How the ratio follows the SUT core's speed (ratio ~ speed^-e): fitted over the trials of the
#: quiet gk56-gk66 runs (Xeon VM, 2026-12-01; log ratio on log awake-loop speed, each run's mean
#: taken out): OVS AF_XDP 0.074 (3,387 trials), OVS-DPDK 0.054, testpmd-mac 0.037, testpmd-io
#: 0.034; the largest is taken. Between runs it reads about as much or more (the quiet gate runs
#: of gk56-gk67: 0.09-0.12 for OVS AF_XDP, OVS-DPDK and testpmd-io, about 0 for testpmd-mac):
#: with every trial scaled by it, gk64-gk67's quiet gate runs spread 4.7 % (OVS AF_XDP, 5 runs;
#: as measured 8.6 %), 3.8 % (testpmd-io, 3; 7.3 %), 4.3 % (testpmd-mac, 5; 4.3 %), and 7.0 %
#: (OVS-DPDK, 5; 4.9 %: its one fast-core run read as high as its slow ones as measured).
SPEED_EXPONENT = 0.074


def kernel_cpp(trial: Any) -> Optional[float]:
    """The kernel threads' cycles per frame on the SUT core in ``trial``: its SUT's CPU cycles
    per frame (``sut_cpu_cycles_per_packet``) x the kernel threads' share of that CPU time;
    None when the trial did not account it."""
    cpu = (getattr(trial, "details", None) or {}).get("cpu") or {}
    own, kernel = cpu.get("sut_own_s"), cpu.get("sut_kernel_s")
    total = getattr(trial, "sut_cpu_cycles_per_packet", None)
    if not all(isinstance(v, (int, float)) and v > 0 for v in (own, kernel, total)):
        return None
    return round(float(total) * float(kernel) / float(own), 1)  # type: ignore[arg-type]


def per_kernel(trial: Any, field: str = BUSY_FIELD) -> Optional[float]:
    """``field`` (the SUT's busy cycles per frame) per kernel cycle per frame in one trial;
    None without both, or where the kernel's part is under :data:`KERNEL_SHARE_MIN` of it."""
    busy, kern = getattr(trial, field, None), kernel_cpp(trial)
    if not busy or not kern or kern < KERNEL_SHARE_MIN * float(busy):
        return None
    return float(busy) / kern


def cpp_per_kernel(trials: Iterable, field: str = BUSY_FIELD) -> Optional[float]:
    """Median of :func:`per_kernel` over ``trials`` (superseded ones left out), to 0.001: the
    case's ``cpp_at_load_per_kernel``; None when fewer than half the trials have one."""
    live = [t for t in trials if not (getattr(t, "details", None) or {}).get("superseded")]
    vals = [v for v in (per_kernel(t, field) for t in live) if v]
    if not vals or 2 * len(vals) < len(live):
        return None
    return round(statistics.median(vals), 3)


def cpp_per_kernel_scaled(
    trials: Iterable, exponent: float = SPEED_EXPONENT, ref: float = CPP_REF_SPEED, field: str = BUSY_FIELD
) -> Optional[float]:
    """Median over ``trials`` (superseded ones left out) of :func:`per_kernel` x (the trial's SUT
    core speed / ``ref``)^``exponent``, to 0.001: the case's ``cpp_at_load_per_kernel_scaled``,
    the ratio with the core's speed taken out; None when fewer than half the trials have both.

    >>> class T:
    ...     def __init__(self, k, speed): self.sut_cycles_per_packet, self.sut_cpu_cycles_per_packet, self.details = 2400.0, 28000.0, {"cpu": {"sut_own_s": 1.0, "sut_kernel_s": k}, "sut_core_speed": speed}
    >>> cpp_per_kernel([T(0.08, 20.0)]), cpp_per_kernel_scaled([T(0.08, 20.0)]), cpp_per_kernel_scaled([T(0.08, 30.0)])
    (1.071, 1.04, 1.071)
    >>> cpp_per_kernel_scaled([T(0.08, None), T(0.08, None), T(0.08, 30.0)]) is None
    True
    """
    live = [t for t in trials if not (getattr(t, "details", None) or {}).get("superseded")]
    vals = []
    for t in live:
        ratio, speed = per_kernel(t, field), (getattr(t, "details", None) or {}).get("sut_core_speed")
        if ratio and isinstance(speed, (int, float)) and speed > 0:
            vals.append(to_ref(ratio, speed, exponent, ref))
    if not vals or 2 * len(vals) < len(live):
        return None
    return round(statistics.median(vals), 3)


def referenced(trials: Iterable, field: str = BUSY_FIELD) -> Optional[float]:
    """The kernel cycles per frame every trial is scaled to (the median over ``trials``) when
    each of them has a reference (:func:`per_kernel`), else None.

    >>> class T:
    ...     def __init__(self, k): self.sut_cycles_per_packet, self.sut_cpu_cycles_per_packet, self.details = 2400.0, 28000.0, {"cpu": {"sut_own_s": 1.0, "sut_kernel_s": k}}
    >>> referenced([T(0.08), T(0.09)]), referenced([T(0.08), T(0.0)])
    (2380.0, None)
    """
    ts = list(trials)
    if not ts or any(per_kernel(t, field) is None for t in ts):
        return None
    return round(statistics.median(float(kernel_cpp(t) or 0.0) for t in ts), 1)


def at_reference(trial: Any, ref: float, field: str = BUSY_FIELD) -> Optional[float]:
    """``field`` of ``trial`` scaled to the kernel cost ``ref`` (its value x ref / its own
    kernel cycles per frame), to 0.1 cycle.

    >>> class T:
    ...     def __init__(self, k): self.sut_cycles_per_packet, self.sut_cpu_cycles_per_packet, self.details = 2400.0, 28000.0, {"cpu": {"sut_own_s": 1.0, "sut_kernel_s": k}}
    >>> at_reference(T(0.09), 2240.0)  # the kernel's 2520 cycles/frame: the core ran slow
    2133.3
    """
    ratio = per_kernel(trial, field)
    return None if ratio is None else round(ratio * float(ref), 1)


def kernel_signal(trials: Iterable) -> dict:
    """The case's figures of this reference over its ``cpp_at_load`` trials (superseded ones
    left out): ``cpp_at_load_per_kernel`` (:func:`cpp_per_kernel`), ``cpp_at_load_kernel``
    (the kernel's cycles per frame, median over the trials that have a reference: what the
    ratio is taken against, for a reader to see it move; across runs it scatters as the busy
    cycles do, 1,855-3,140 over OVS AF_XDP's quiet runs here), and where the trials were timed
    ``cpp_at_load_per_kernel_scaled`` (:func:`cpp_per_kernel_scaled`) with
    ``cpp_kernel_speed_exponent``; empty when the trials have no reference.

    >>> class T:
    ...     def __init__(self, k, speed=None): self.sut_cycles_per_packet, self.sut_cpu_cycles_per_packet, self.details = 2400.0, 28000.0, {"cpu": {"sut_own_s": 1.0, "sut_kernel_s": k}, "sut_core_speed": speed}
    >>> kernel_signal([T(0.08), T(0.09), T(0.10)]), kernel_signal([T(0.0)])
    ({'cpp_at_load_per_kernel': 0.952, 'cpp_at_load_kernel': 2520.0}, {})
    >>> kernel_signal([T(0.08, 30.0), T(0.09, 25.0), T(0.10, 30.0)])["cpp_at_load_per_kernel_scaled"]
    0.94
    """
    live = [t for t in trials if not (getattr(t, "details", None) or {}).get("superseded")]
    ratio = cpp_per_kernel(live)
    if ratio is None:
        return {}
    kern = [float(kernel_cpp(t) or 0.0) for t in live if per_kernel(t) is not None]
    out = {"cpp_at_load_per_kernel": ratio, "cpp_at_load_kernel": round(statistics.median(kern), 1)}
    scaled = cpp_per_kernel_scaled(live)
    if scaled is not None:
        out.update(cpp_at_load_per_kernel_scaled=scaled, cpp_kernel_speed_exponent=SPEED_EXPONENT)
    return out
