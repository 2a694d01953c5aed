"""Which placement of the TG and SUT cores a cycles-per-frame figure rests on.

The host moves the two vCPUs between "near" and "far" (:mod:`dpgate.exec.xcore`), within a
case as often as every few trials (2026-11-28: 64B linux-bridge's trials read 173-181 ns,
then 414-467 ns for four trials, then 172-182 again), and a kernel SUT's cycles per frame
are 13-21 % higher far (a polling SUT's 1-6 %; beside one the probe reads with the SUT
stopped for a moment). A median over trials of both placements moves with their mix. So
``cpp_at_load`` rests on the near trials when there are :data:`NEAR_MIN` of them, else on
the far ones when there are as many (:func:`one_placement`); more trials are measured while
there are not :data:`NEAR_MIN` near ones (``dpgate.telemetry.cppload``), and
``cpp_at_load_placement`` says what it rests on: ``near``, ``far``, ``mixed`` (fewer than
:data:`NEAR_MIN` trials of either), absent when not read. A figure not resting on near trials
cannot FAIL a fixed gate (``dpgate.robot.gates``); in the history (``dpgate.regression``) a
far one is kept, marked far, and held only against earlier far runs (:func:`alike`); a mixed
one is not kept.
``cpp_at_load_scaled`` rests on trials of its own (every live one, near ones first, where
``cpp_at_load`` keeps the full-speed ones: on a host whose cores seldom reach full speed, its
one or two fastest), so it carries its own ``cpp_scaled_placement`` (:data:`SCALED_KEY`).
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable, List, Optional, Sequence, Tuple

from dpgate.exec.xcore import placement

#: Fewest near trials a figure rests on when the others were far.
NEAR_MIN = 2
#: The record keys naming the placement ``cpp_at_load`` and ``cpp_at_load_scaled`` rest on.
CPP_KEY, SCALED_KEY = "cpp_at_load_placement", "cpp_scaled_placement"


def rests_where(metrics: dict, key: str = CPP_KEY) -> Optional[str]:
    """The placement a record's (or history entry's) figure rests on: ``key``, else (a record
    from before the scaled figure had its own) ``cpp_at_load``'s.

    >>> rests_where({"cpp_at_load_placement": "mixed", "cpp_scaled_placement": "near"}, SCALED_KEY)
    'near'
    >>> rests_where({"metrics": {"cpp_at_load_placement": "far"}}, SCALED_KEY)
    'far'
    """
    m = metrics.get("metrics") or metrics
    return m.get(key) or m.get(CPP_KEY)


def placement_of(trial: Any) -> Optional[str]:
    """``near``/``far`` of one trial, ``changed`` when the host moved the cores during it (the
    reads before and after it disagree: ``dpgate.exec.xcore.TrialPlacement``); None: not read.

    >>> class T:
    ...     def __init__(self, **d): self.details = d
    >>> placement_of(T(xcore_rtt_ns=96.0)), placement_of(T(xcore_rtt_ns=96.0, xcore_placement="changed"))
    ('near', 'changed')
    """
    details = getattr(trial, "details", None) or {}
    return details.get("xcore_placement") or placement(details.get("xcore_rtt_ns"))


def one_placement(trials: Sequence) -> List:
    """The trials of one placement: the near ones when there are :data:`NEAR_MIN` of them (or
    every trial is near or unread), else the far ones when there are :data:`NEAR_MIN` of those,
    else all. On the Zen 4 VM (gk98, linux-xconnect) 3 of 12 quiet runs had one near trial among
    far ones: near 2,330-2,346 cycles, far 2,763-2,797; over all their trials the figure was the
    far one yet marked mixed, and kept nowhere. Resting on the far trials, it is a far figure,
    held against far runs (:func:`alike`).

    >>> class T:
    ...     def __init__(self, rtt): self.details = {"xcore_rtt_ns": rtt}
    >>> rtts = lambda ts: [t.details["xcore_rtt_ns"] for t in ts]
    >>> rtts(one_placement([T(180.0), T(460.0), T(175.0)])), rtts(one_placement([T(180.0), T(460.0)]))
    ([180.0, 175.0], [180.0, 460.0])
    >>> rtts(one_placement([T(180.0)])), rtts(one_placement([T(None), T(470.0)]))
    ([180.0], [None, 470.0])
    >>> rtts(one_placement([T(180.0), T(460.0), T(470.0), T(455.0)]))
    [460.0, 470.0, 455.0]
    """
    trials = list(trials)
    near = [t for t in trials if placement_of(t) == "near"]
    if len(near) >= NEAR_MIN or len(near) == len(trials):
        return near
    far = [t for t in trials if placement_of(t) == "far"]
    return far if len(far) >= NEAR_MIN else trials


def rests_on(trials: Iterable) -> Optional[str]:
    """``near``/``far``/``mixed`` of ``trials`` as a whole; None when none was read.

    >>> class T:
    ...     def __init__(self, rtt): self.details = {"xcore_rtt_ns": rtt}
    >>> rests_on([T(180.0), T(175.0)]), rests_on([T(470.0)]), rests_on([T(180.0), T(470.0)]), rests_on([T(None)])
    ('near', 'far', 'mixed', None)
    """
    seen = {p for p in (placement_of(t) for t in trials) if p}
    return None if not seen else seen.pop() if len(seen) == 1 and "changed" not in seen else "mixed"


def xcore_signal(trials: Iterable, field: Optional[str] = None) -> dict:
    """``xcore_rtt_ns``: median TG-SUT core round trip (``dpgate.exec.xcore``) after
    ``trials`` (the cpp_at_load trials when measured) and ``placement`` (near/far); given the
    cycles-per-packet ``field``, ``cpp_at_load_near``/``_far``: its median over the trials of
    each placement (the kernel SUTs' cycles per frame differ 13-21 % between the two).

    >>> class T:
    ...     def __init__(self, rtt, cpp=None): self.details, self.cpp = {"xcore_rtt_ns": rtt}, cpp
    >>> xcore_signal([T(195.0, 2550.0), T(480.0, 3040.0), T(470.0, 3050.0)], "cpp")
    {'xcore_rtt_ns': 470.0, 'placement': 'far', 'cpp_at_load_near': 2550.0, 'cpp_at_load_far': 3045.0}
    >>> xcore_signal([T(None)])
    {}
    """
    trials = list(trials)
    got = [r for r in ((getattr(t, "details", None) or {}).get("xcore_rtt_ns") for t in trials) if r]
    if not got:
        return {}
    rtt = round(float(statistics.median(got)), 1)
    out: dict = {"xcore_rtt_ns": rtt, "placement": placement(rtt)}
    for where in ("near", "far"):
        vals = [
            getattr(t, field)
            for t in trials
            if field and getattr(t, field, None) and placement_of(t) == where
        ]
        if vals:
            out[f"cpp_at_load_{where}"] = round(float(statistics.median(vals)), 1)
    return out


def far_reason(metrics: dict, key: str = CPP_KEY) -> Optional[str]:
    """Why a cpp_at_load rise is inconclusive: its trials ran with the TG and SUT cores far
    apart (``cpp_at_load_placement`` far, or mixed: fewer than :data:`NEAR_MIN` near); None
    when it rests on near trials or the placement was not read. ``key``: which figure's
    placement (:data:`SCALED_KEY`: the scaled one's).

    >>> far_reason({"cpp_at_load_placement": "far", "xcore_rtt_ns": 471.2})
    'its trials ran with the TG and SUT cores far apart (round trip 471 ns), where a SUT spends more cycles per frame (kernel SUTs 13-21 %, polling ones 1-6 %): measure again'
    >>> far_reason({"cpp_at_load_placement": "mixed", "xcore_rtt_ns": 99.0})[:110]
    'fewer than 2 of its trials ran with the TG and SUT cores near throughout (the host moved them during or betwee'
    >>> far_reason({"cpp_at_load_placement": "near"}), far_reason({})
    (None, None)
    """
    where = rests_where(metrics, key)
    if where not in ("far", "mixed"):
        return None
    rtt = metrics.get("xcore_rtt_ns")
    trip = f"round trip {rtt:.0f} ns" if isinstance(rtt, (int, float)) else ""
    how = (
        f"its trials ran with the TG and SUT cores far apart{f' ({trip})' if trip else ''}"
        if where == "far"
        else f"fewer than {NEAR_MIN} of its trials ran with the TG and SUT cores near throughout (the host "
        f"moved them during or between trials{f'; median {trip}' if trip else ''})"
    )
    return f"{how}, where a SUT spends more cycles per frame (kernel SUTs 13-21 %, polling ones 1-6 %): measure again"


#: Fewest earlier far runs a far run's cpp_at_load is held against (fewer: inconclusive).
FAR_RUNS = 3


def alike(metrics: dict, history: Sequence[dict], key: str = CPP_KEY) -> Tuple[List[dict], Optional[str]]:
    """The history runs this run's cpp_at_load compares with, and why a rise over them cannot be
    a regression (None when it can). A far run is held against the far runs of the history
    (``cpp_at_load_placement`` far), when there are :data:`FAR_RUNS` of them; a near run, or
    one not read, against every other run; a mixed one makes no verdict. ``key``: the
    placement of which figure (:data:`SCALED_KEY`: ``cpp_at_load_scaled``'s).

    >>> hist = [{"cpp_at_load": 2560.0}, {"cpp_at_load": 3040.0, "cpp_at_load_placement": "far"}]
    >>> [h["cpp_at_load"] for h in alike({"cpp_at_load_placement": "near"}, hist)[0]]
    [2560.0]
    >>> same, why = alike({"cpp_at_load_placement": "far", "xcore_rtt_ns": 470.0}, hist)
    >>> [h["cpp_at_load"] for h in same], why.endswith("(1 far run in the history, 3 wanted)")
    ([3040.0], True)
    >>> alike({"cpp_at_load_placement": "far"}, hist * 3)[1] is None
    True
    >>> alike({"cpp_at_load_placement": "mixed", "cpp_scaled_placement": "near"}, hist, SCALED_KEY)[1] is None
    True
    """

    def far(h: dict) -> bool:
        return rests_where(h, key) == "far"

    if rests_where(metrics, key) != "far":
        return [h for h in history if not far(h)], far_reason(metrics, key)
    same = [h for h in history if far(h)]
    if len(same) >= FAR_RUNS:
        return same, None
    runs = f"{len(same)} far run{'' if len(same) == 1 else 's'}"
    return same, f"{far_reason(metrics, key)} ({runs} in the history, {FAR_RUNS} wanted)"


#: Two trials whose SUT core speeds (``sut_core_speed``) lie further apart than this (max/min
#: - 1) ran in different phases of the host: a polling SUT's pair across one is left out.
SPEED_SPLIT = 0.15


def same_speed(a: Any, b: Any, split: float = SPEED_SPLIT) -> bool:
    """Whether two trials ran at about one SUT core speed (within ``split``); unknown counts
    as alike. On the Xeon host (2026-11-30) the speed flipped between ~21 and ~35 M it/s from
    one trial to the next; a testpmd-mac pair across a flip read its ratio 25-40 % off (the
    speed scaling of polling SUTs, speed^-0.25, takes out a fraction of that), while its
    pairs at one speed scattered 4 % (+3.1 % +-1.2 over 10 A/A pairs).

    >>> class T:
    ...     def __init__(self, v): self.details = {"sut_core_speed": v}
    >>> same_speed(T(33.0), T(35.0)), same_speed(T(35.0), T(21.0)), same_speed(T(None), T(21.0))
    (True, False, True)
    """
    va, vb = ((t.details or {}).get("sut_core_speed") for t in (a, b))
    if not all(isinstance(v, (int, float)) and v > 0 for v in (va, vb)):
        return True
    return max(va, vb) / min(va, vb) - 1.0 <= split  # type: ignore[type-var,operator]
