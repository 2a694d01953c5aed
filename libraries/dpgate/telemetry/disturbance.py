"""Turning per-trial figures into per-case signal: disturbance of a verdict, cpp_at_load.

A trial carries ``disturbance`` (largest foreign share of a TG/SUT core, see
:mod:`dpgate.telemetry.cpuacct`) and ``sut_cpu_cycles_per_packet`` (the SUT's own cycles per
forwarded frame). Here:

* :func:`verdict_trials` picks the trials a verdict rests on: those at the loads of the
  NDR/PDR lower and upper bounds, and the MRR trials;
* :func:`disturbance_of` is the largest disturbance among them, and :func:`inconclusive`
  says whether a gate that would FAIL must be *inconclusive* instead (skipped with the
  reason and the figure): a neighbour, not the SUT, may have caused the miss;
* :func:`cpp_at_load_rate` is the load for ``cpp_at_load``: the case's fixed ``cpp_load`` (the
  same in every run), else ``share`` (default 50 %) of the smaller of the generator ceiling
  and the NDR, so that neither limits it;
* :func:`cpp_at_load` is the median of the SUT's own cycles per packet over the trials at
  that load (SUT-reported cycles for SUTs that poll, whose CPU time is 100 % by design).

How its trials are measured (conditions, two groups around the search) is
:mod:`dpgate.telemetry.cppload`.

>>> class T:  # a trial as the search sees it
...     def __init__(self, load, d): self.intended_load_pps, self.disturbance, self.details = load, d, {}
>>> ts = [T(100.0, 0.02), T(200.0, 0.31), T(150.0, 0.04)]
>>> disturbance_of(verdict_trials(ts, bounds=[150.0, 200.0]))
0.31
>>> inconclusive(0.31, threshold=0.10)
'disturbed measurement: 31.0 % of a TG/SUT core was used by other work or lost to a slow host (> 10 %)'
"""

from __future__ import annotations

import math
import statistics
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from dpgate.exec.speedprobe import SLOW_SHARE as SPEED_SHARE
from dpgate.telemetry.cpp_scaled import memory_exponents, scaled_signal
from dpgate.telemetry.kernel_ref import kernel_signal
from dpgate.telemetry.placement import one_placement, xcore_signal
from dpgate.telemetry.placement import rests_on as placed_on

#: Default largest foreign share (0..1) of a TG/SUT core for a verdict to count.
DISTURBANCE_MAX = 0.10
#: Share of min(generator ceiling, NDR) at which cpp_at_load is measured.
CPP_LOAD_SHARE = 0.5
#: Trials (and their length, s) at that load; the median is the figure.
CPP_TRIALS = 5
CPP_TRIAL_S = 2.0
#: A cpp_at_load trial whose SUT core ran below this share of the fastest trial's speed is
#: left out (a slow phase of the host, see :mod:`dpgate.exec.awake`): the one share that
#: says what a slow host phase is (``dpgate.exec.speedprobe``).
SLOW_SHARE = SPEED_SHARE
#: cpp_at_load wants this many full-speed trials (at least; FAST_SHARE of the planned trials
#: when more are planned), measuring up to SLOW_EXTRA x the planned number to get them.
FAST_TRIALS = 3
FAST_SHARE = 0.6
SLOW_EXTRA = 2


def fast_wanted(trials: int) -> int:
    """How many full-speed trials cpp_at_load measures on for when ``trials`` are planned.

    >>> [fast_wanted(n) for n in (1, 3, 5, 9, 15)]
    [1, 3, 3, 6, 9]
    """
    n = max(1, int(trials))
    return min(n, max(FAST_TRIALS, math.ceil(FAST_SHARE * n)))


#: cpp_at_load ~ (SUT core speed)^-e: the exponent ``e`` per kind of SUT, fitted on the 2-core
#: VM (log cycles per packet against log speed, 65-151 trials per SUT and set, five sets at
#: 13-33 M it/s): kernel SUTs 0.44-0.60 (CPU time x Hz), testpmd's busy cycles 0.07-0.15
#: unmoderated; moderated (since 2026-11-26), quiet gate runs' trials at 15-33 M it/s:
#: testpmd io 0.23, mac 0.25, OVS-DPDK 0.23 (20-26 trials each, residual 8-11 %).
#: The history check holds a run against runs at about its own speed, scaled by it
#: (``dpgate.regression.speed``).
CPP_SPEED_EXPONENT = {"kernel": 0.5, "polling": 0.25}
#: The exponent on a CPU model (as /proc/cpuinfo names it: ``dpgate.exec.hostcpu``) where it
#: was measured apart from the class's. The Intel Xeon VM of 2026-11-30 (probe 19-37 M it/s):
#: kernel SUTs' trials within a run fitted 0.98-1.26 (linux-xconnect, -bridge, -ip4; two sets of
#: 5 runs x 8 x 2 s trials, ``benchmarks/cpp_at_load.py --jsonl``), and scaled by 1.0 their
#: runs' figures spread 3.7-7.6 % where 0.5 left 3.9-15.7 %, though over three quiet gate runs
#: each (gk38) 4.0-17.5 % against 6.7-11.5 % (a run whose speed reading was high all through);
#: over the day's nine sets 7.4 % mean against 9.6 (docs/embedded.md). Its polling SUTs fitted
#: 0.05-0.39, the class's 0.25. The Zen 4 VM (``AMD EPYC``, 2026-12-04,
#: ``benchmarks/speed_exponent.py`` over 236 recorded cases) fitted kernel SUTs 0.44-0.65 and
#: polling SUTs 0.18-0.24: its class's exponents, no row.
MODEL_EXPONENT: Dict[Tuple[str, str], float] = {("kernel", "Intel(R) Xeon(R) Processor"): 1.0}


def speed_exponent(polling: bool, model: Optional[str] = None) -> float:
    """How a SUT kind's cycles per packet follow its core's speed on CPU ``model``.

    >>> speed_exponent(False), speed_exponent(True), speed_exponent(False, "Intel(R) Xeon(R) Processor")
    (0.5, 0.25, 1.0)
    """
    kind = "polling" if polling else "kernel"
    return MODEL_EXPONENT.get((kind, model or ""), CPP_SPEED_EXPONENT[kind])


def verdict_trials(trials: Iterable, bounds: Sequence[Optional[float]], mrr: Iterable = ()) -> List:
    """Trials whose load is one of ``bounds`` (relative tolerance 1e-6), plus ``mrr`` trials;
    superseded attempts (measured again because disturbed) are not used by any verdict."""
    want = [b for b in bounds if b]
    out = []
    for t in trials:
        if (getattr(t, "details", None) or {}).get("superseded"):
            continue
        load = float(t.intended_load_pps)
        if any(abs(load - b) <= 1e-6 * max(1.0, b) for b in want):
            out.append(t)
    return out + [t for t in mrr if not (getattr(t, "details", None) or {}).get("superseded")]


def foreign_of(trials: Iterable) -> Optional[float]:
    """Largest share of a core others' CPU time took (``details.cpu.disturbance``, no slow
    host phase) among trials that measured it; None when none did."""
    vals = [((getattr(t, "details", None) or {}).get("cpu") or {}).get("disturbance") for t in trials]
    known = [v for v in vals if v is not None]
    return max(known) if known else None


def guest_foreign_of(trials: Iterable) -> Tuple[Optional[float], Optional[float]]:
    """(largest share of a core others' CPU time took inside the VM, largest share the VM
    lost to steal) among trials that measured them; (None, None) when none did.

    Steal is the hypervisor running someone else on our virtual CPU: the guest charges it
    to no task, so a kernel SUT's CPU time per packet leaves it out (a polling SUT's busy
    cycles are TSC time and take it in). On this VM a kernel SUT's per-trial cpp_at_load at
    10-20 % steal stayed within 3 % of the same run's other trials (gs14-gs17: linux-ip4
    +0.7 %, linux-xconnect -3.2 %, 21 trials).

    >>> class T:
    ...     def __init__(self, fs, st): self.details = {"cpu": {"foreign_share": fs, "steal_share": st}}
    >>> guest_foreign_of([T({"0": 0.17, "1": 0.02}, {"0": 0.16, "1": 0.0}), T({"0": 0.03}, {})])
    (0.03, 0.16)
    """
    guest: List[float] = []
    steal: List[float] = []
    for t in trials:
        cpu = (getattr(t, "details", None) or {}).get("cpu") or {}
        fs, st = cpu.get("foreign_share") or {}, cpu.get("steal_share") or {}
        if fs:
            guest.append(max(max(0.0, v - st.get(c, 0.0)) for c, v in fs.items()))
            steal.append(max(st.values(), default=0.0))
    if not guest:
        return None, None
    return round(max(guest), 4), round(max(steal), 4)


def disturbance_of(trials: Iterable) -> Optional[float]:
    """Largest ``disturbance`` among trials that measured it; None when none did."""
    vals = [t.disturbance for t in trials if getattr(t, "disturbance", None) is not None]
    return max(vals) if vals else None


def disturbance_for(telemetry: dict, metric: str) -> Optional[float]:
    """The disturbance a verdict on ``metric`` rests on: for ``cpp_at_load`` its own trials'
    (others' CPU time only: their speed is the awake loop's to judge, :func:`slow_core_reason`),
    for any other metric the case's.

    >>> tel = {"disturbance": 0.5, "cpp_at_load_disturbance": 0.02}
    >>> disturbance_for(tel, "cpp_at_load"), disturbance_for(tel, "mrr_pps"), disturbance_for({"disturbance": 0.5}, "cpp_at_load")
    (0.02, 0.5, 0.5)
    """
    if metric.startswith("cpp_at_load") and "cpp_at_load_disturbance" in telemetry:
        return telemetry["cpp_at_load_disturbance"]
    return telemetry.get("disturbance")


def inconclusive(disturbance: Optional[float], threshold: Optional[float] = DISTURBANCE_MAX) -> Optional[str]:
    """The reason a failing verdict is inconclusive, or None when the measurement was clean."""
    if disturbance is None or threshold is None or disturbance <= threshold:
        return None
    return f"disturbed measurement: {disturbance * 100:.1f} % of a TG/SUT core was used by other work or lost to a slow host (> {threshold * 100:.0f} %)"


def cpp_at_load_rate(
    generator_max_pps: Optional[float],
    ndr_pps: Optional[float],
    share: float = CPP_LOAD_SHARE,
    fixed: Optional[float] = None,
) -> Optional[float]:
    """The load for cpp_at_load: ``fixed`` (the case's ``cpp_load``, the same in every run)
    when it is below both the generator ceiling and the NDR, else ``share`` of the smaller.

    >>> cpp_at_load_rate(600_000, 190_000)
    95000.0
    >>> cpp_at_load_rate(600_000, 190_000, fixed=80_000)
    80000.0
    >>> cpp_at_load_rate(600_000, 70_000, fixed=80_000)  # NDR fell below it: a lossless load instead
    35000.0
    >>> cpp_at_load_rate(None, 0) is None
    True
    """
    cands = [v for v in (generator_max_pps, ndr_pps) if v and v > 0]
    if not cands:
        return None
    if fixed and 0 < fixed <= min(cands):
        return float(fixed)
    return share * min(cands)


def full_speed(trials: Sequence, share: float = SLOW_SHARE, ref: Optional[float] = None) -> List:
    """``trials`` without those of a slow phase of the SUT core: marked ``slow_core`` when
    measured, or whose ``sut_core_speed`` (the awake loop's iterations per CPU second,
    :mod:`dpgate.exec.awake`) is below ``share`` of the fastest one's (or of ``ref``, the
    fastest seen before). Trials that were not timed are all kept.

    >>> class T:
    ...     def __init__(self, s): self.details = {"sut_core_speed": s} if s else {}
    >>> [t.details.get("sut_core_speed") for t in full_speed([T(30.0), T(19.2), T(28.0), T(None)])]
    [30.0, 28.0, None]
    >>> [t.details.get("sut_core_speed") for t in full_speed([T(26.8), T(21.0)], ref=30.9)]
    []
    """
    trials = [t for t in trials if not (t.details or {}).get("slow_core")]
    timed = [t.details["sut_core_speed"] for t in trials if (t.details or {}).get("sut_core_speed")]
    if not timed:
        return list(trials)
    floor = share * max(max(timed), ref or 0.0)
    return [t for t in trials if (t.details or {}).get("sut_core_speed", floor) >= floor]


def cpp_at_load(trials: Iterable, polling: bool = False) -> Optional[float]:
    """Median SUT cycles per packet over ``trials`` (not superseded ones, not those of a slow
    phase of the SUT core: :func:`full_speed`; of those, the ones with the TG and SUT cores
    near when there are enough, else the far ones: ``dpgate.telemetry.placement.one_placement``).

    A polling SUT (testpmd, OVS PMD threads) uses its whole core whatever the load, so its
    CPU time says nothing per packet: its own busy-cycle report is used instead (testpmd's
    ``--record-core-cycles``, OVS's processing cycles), None when it reports none.

    >>> class T:
    ...     def __init__(self, own, rep=None): self.sut_cpu_cycles_per_packet, self.sut_cycles_per_packet, self.details = own, rep, {}
    >>> cpp_at_load([T(3700.0), T(3800.0), T(3650.0)])
    3700.0
    >>> for t, rtt in zip(ts := [T(2560.0), T(3050.0), T(2580.0), T(3040.0), T(3060.0)], (180, 460, 175, 470, 455)):
    ...     t.details["xcore_rtt_ns"] = rtt
    >>> cpp_at_load(ts)  # the two near trials, not the median of all five (3040)
    2570.0
    """
    use = [t for t in trials if not (getattr(t, "details", None) or {}).get("superseded")]
    # none at full speed: the slow ones, flagged by sut_core_speed (the gates hold such a
    # verdict inconclusive, see slow_core_reason)
    field = "sut_cycles_per_packet" if polling else "sut_cpu_cycles_per_packet"
    vals = [getattr(t, field) for t in one_placement(full_speed(use) or use) if getattr(t, field)]
    return float(statistics.median(vals)) if vals else None


def slow_core_reason(
    telemetry: dict, share: float = SLOW_SHARE, value: Optional[float] = None, limit: Optional[float] = None
) -> Optional[str]:
    """Why a failing cpp_at_load verdict is inconclusive: its trials ran on a SUT core slower
    than ``share`` of the full speed they were held against, or (given the failing ``value``
    and its ``limit``) slower by enough to explain the excess: the same work on a core at
    91 % speed takes ~10 % more cycles, so ``value`` scaled to full speed is within
    ``limit``. None when neither holds.

    >>> slow_core_reason({"sut_core_speed": 16.4, "sut_core_speed_ref": 30.5})
    'the SUT core ran at 16.4 M it/s, 54 % of its full speed 30.5 (a slow phase of the host)'
    >>> slow_core_reason({"sut_core_speed": 29.0, "sut_core_speed_ref": 30.5}) is None
    True
    >>> slow_core_reason({"sut_core_speed": 27.4, "sut_core_speed_ref": 30.0}, value=6715.0, limit=6500.0)
    'the SUT core ran at 27.4 M it/s, 91 % of its full speed 30.0: at full speed about 6133, within 6500'
    >>> slow_core_reason({"sut_core_speed": 27.4, "sut_core_speed_ref": 30.0}, value=7500.0, limit=6500.0) is None
    True
    """
    cur, ref = telemetry.get("sut_core_speed"), telemetry.get("sut_core_speed_ref")
    if not isinstance(cur, (int, float)) or not isinstance(ref, (int, float)) or cur >= ref:
        return None
    if cur < share * ref:
        return f"the SUT core ran at {cur:.1f} M it/s, {cur / ref * 100:.0f} % of its full speed {ref:.1f} (a slow phase of the host)"
    if value is not None and limit is not None and value * cur / ref <= limit:
        return (
            f"the SUT core ran at {cur:.1f} M it/s, {cur / ref * 100:.0f} % of its full speed {ref:.1f}: "
            f"at full speed about {value * cur / ref:.0f}, within {limit:.0f}"
        )
    return None


def load_missed(trials: Iterable) -> Optional[float]:
    """Median share of their intended frames the trials did not deliver (the generator held
    back by a full SUT ring, or the SUT dropping): 0 when the fixed load was carried.
    On the half-speed host 64B linux-ip4's trials at its 167.5 kpps missed 2-25 % of it
    (the SUT core saturated: its threads waited for the core ~55 % of each trial).

    >>> class T:
    ...     def __init__(self, r): self.loss_ratio = r
    >>> load_missed([T(0.0), T(0.21), T(0.18)]), load_missed([T(0.0)]), load_missed([])
    (0.18, 0.0, None)
    """
    vals = [float(t.loss_ratio) for t in trials if getattr(t, "loss_ratio", None) is not None]
    return round(statistics.median(vals), 4) if vals else None


def _speeds(trials: Iterable) -> List[float]:
    return [t.details["sut_core_speed"] for t in trials if (t.details or {}).get("sut_core_speed")]


def case_signal(
    search_trials: Iterable,
    bounds: Sequence[Optional[float]],
    mrr_trials: Iterable = (),
    cpp_trials: Iterable = (),
    cpp: Optional[float] = None,
    cpp_load: Optional[float] = None,
    speed_ref: Optional[float] = None,
    polling: bool = False,
    model: Optional[str] = None,
) -> dict:
    """The case's metrics from this module: ``disturbance`` (largest foreign share among the
    trials its verdicts use, a slow host phase included; ``disturbance_foreign``: others' CPU
    time alone, what keeps a run out of the history), ``core_speed_min`` (the slowest TG or
    SUT core the probe read around those trials, M it/s: ``dpgate.exec.speedprobe``),
    ``cpp_at_load`` and ``cpp_at_load_pps`` (absent when unmeasured),
    ``sut_core_speed`` (median speed of the SUT core in the trials cpp_at_load rests on) and
    ``sut_core_speed_ref`` (``speed_ref``: the full speed those trials were held against) and
    ``cpp_at_load_disturbance`` (others' CPU time in those trials, in all of them when
    ``cpp_at_load_scaled`` is recorded: :func:`disturbance_for`; a kernel SUT's without VM
    steal, recorded apart as ``cpp_at_load_steal``: :func:`guest_foreign_of`),
    ``cpp_speed_exponent`` (how cpp_at_load follows that speed on the host's CPU ``model``:
    :func:`speed_exponent`);
    ``cpp_at_load_loss`` (median share of the fixed load those trials did not carry: above 0 the
    SUT core was saturated there, and cpp_at_load is its Hz / throughput: :func:`load_missed`);
    ``cpp_at_load_scaled`` and ``cpp_scaled_speed`` (every trial scaled to that reference
    speed by the SUT kind's exponent, where measured also to a reference reading of the memory
    probe, with ``cpp_memory_exponent`` and two more keys: :func:`~dpgate.telemetry.cpp_scaled.scaled_signal`;
    a polling SUT's from its own busy-cycle report); ``cpp_at_load_placement`` and ``cpp_scaled_placement``
    (near/far/mixed: where the host had the TG and SUT cores in the trials each rests on);
    ``cpp_at_load_per_kernel`` (a polling SUT's busy cycles per cycle of the kernel's work on the
    same frames on its core, median over every live trial, and ``cpp_at_load_kernel``, the kernel's
    cycles per frame there: :mod:`dpgate.telemetry.kernel_ref`).

    >>> class T:
    ...     def __init__(self, load, d): self.intended_load_pps, self.disturbance, self.details = load, d, {}
    >>> case_signal([T(1.0, 0.5), T(2.0, 0.01)], [2.0], cpp_trials=[T(0.5, 0.03)], cpp=3700.0, cpp_load=0.5)
    {'disturbance': 0.03, 'cpp_at_load': 3700.0, 'cpp_at_load_pps': 0.5}
    """
    used = verdict_trials(search_trials, bounds, list(mrr_trials) + list(cpp_trials))
    out: dict = {}
    d = disturbance_of(used)
    if d is not None:
        out["disturbance"] = round(d, 4)
    foreign = foreign_of(used)
    if foreign is not None:  # others' CPU time alone, without slow host phases
        out["disturbance_foreign"] = round(foreign, 4)
    probed = [
        min(c.values()) for c in ((getattr(t, "details", None) or {}).get("core_speeds") for t in used) if c
    ]
    if probed:
        out["core_speed_min"] = round(min(probed), 2)
    if cpp is not None:
        out["cpp_at_load"] = round(cpp, 1)
        out["cpp_at_load_pps"] = round(float(cpp_load or 0), 1)
        live = [t for t in cpp_trials if not (t.details or {}).get("superseded")]
        timed = full_speed(live) or live
        rests_on = one_placement(timed)  # near trials when enough, else far ones (placement.py)
        field = "sut_cycles_per_packet" if polling else "sut_cpu_cycles_per_packet"
        exponent = speed_exponent(polling, model)
        scaled_on = one_placement(live)  # by speed, or by speed and memory (cpp_scaled.py)
        scaling = scaled_signal(scaled_on, exponent, memory_exponents(polling, model), field)
        scaled = scaling.get("cpp_at_load_scaled")
        # the scaled figure rests on every live trial (near ones first): the disturbance of
        # all of them is what its verdicts are judged on
        basis = live if scaled is not None else rests_on
        foreign = foreign_of(basis)
        if not polling:  # CPU time: VM steal is not in it (guest_foreign_of)
            guest, stolen = guest_foreign_of(basis)
            if guest is not None:
                foreign = guest
                out["cpp_at_load_steal"] = stolen
        if foreign is not None:
            out["cpp_at_load_disturbance"] = round(foreign, 4)
        missed = load_missed(rests_on)
        if missed is not None:
            out["cpp_at_load_loss"] = missed
        speed = _speeds(rests_on)  # the trials cpp_at_load rests on
        if speed:  # how fast the SUT core ran for them (M it/s)
            out["sut_core_speed"] = round(statistics.median(speed), 2)
            if speed_ref:
                out["sut_core_speed_ref"] = round(float(speed_ref), 2)
            out["cpp_speed_exponent"] = exponent
        if polling:  # busy cycles per kernel cycle on the same frames, and the kernel's (kernel_ref.py)
            out.update(kernel_signal(live))
        if scaled is not None:  # every trial, scaled to the reference speed (cpp_scaled.py)
            out.update(scaling)
            if placed_on(scaled_on):  # its own trials' placement, not cpp_at_load's (placement.py)
                out["cpp_scaled_placement"] = placed_on(scaled_on)
    if cpp is not None and placed_on(rests_on):
        out["cpp_at_load_placement"] = placed_on(rests_on)
    out.update(xcore_signal(timed, field) if cpp is not None else xcore_signal(used))
    return out
