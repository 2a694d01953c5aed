"""sign-off's event search: the NDR when loss comes from rare events (stalls).

Part of :mod:`dpgate.search.signoff`, whose docstring (section 3) describes it: event
probes catch single stalls at a few loads, a per-event line through their losses
(:func:`dpgate.search.signoff_fit.event_line`) places the load under which they lose
nothing, and full-length trials decide from there down.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, List, Optional, Tuple

from dpgate.search.signoff_fit import event_line
from dpgate.search.signoff_full import step_down

if TYPE_CHECKING:
    from dpgate.search.signoff import _Search


def hunt(sr: "_Search", load: float) -> Tuple[float, int]:
    """Event probes (``event_probe_duration``) at ``load`` until one loses frames or
    they add up to one full trial; return (load, frames lost by that probe or 0).

    A probe much shorter than the time between loss events sees at most one event,
    so its loss is the loss of one event at this load.
    """
    load = sr._clip(load)
    d, T = sr.s["event_probe_duration"], sr.s["trial_duration"]
    spent = 0.0
    while spent < T * (1 - 1e-9):
        c = sr.probe(load, min(d, T - spent))
        spent += min(d, T - spent)
        if c.loss:
            return load, c.loss
    return load, 0

def event_search(
    sr: "_Search", candidate: float, floor: float, upper: Optional[float]
) -> Tuple[Optional[float], Optional[float]]:
    """NDR when loss grows with trial duration: rare loss events (stalls).

    A stall at load L loses ``s x (L - theta)`` frames, what arrives during it
    beyond what the ring absorbs. Event probes catch single stalls down to near
    theta (:func:`hunt`, :func:`event_line`); full trials decide from
    ``theta x (1 - event_margin)`` down. See the module docstring.
    """
    w, step = sr.s["width"], sr.s["long_step"]
    margin, near = sr.s["event_margin"], sr.s["event_near"]
    accept = sr.s["event_accept"]
    la, ga = hunt(sr, candidate * (1 - 2 * w))
    if not ga:
        # No event in a full trial's worth of probing: events are rare, or lose
        # nothing at this load. A full trial there decides.
        c = sr.long(la)
        if c.loss == 0:
            return la, upper
        upper = min(upper or la, la)
        for x in (la, la * (1 - step)):  # events do happen: catch one
            x, g = hunt(sr, x)
            if g:
                la, ga = x, g
                break
        else:  # loss that short probes never see: search with full trials
            return step_down(sr, la, c, 0.0, floor)
    events: List[Tuple[float, float]] = [(la, float(ga))]

    def catch(load: float, above: float) -> bool:
        """An event at ``load``, or, if none comes in a full trial's time (theta is
        above ``load``), one between it and ``above``. True if one was caught."""
        for x in (load, math.sqrt(load * above)):
            x, g = hunt(sr, x)
            if g:
                events.append((x, float(g)))
                return True
        return False

    def locate() -> Tuple[Optional[float], float]:
        """(slope, theta) from the events caught, catching more as needed."""
        fit: Optional[Tuple[float, float]] = None
        for _ in range(6):
            lowest = min(x for x, _ in events)
            fit = event_line(events) if len(events) > 1 else None
            if fit is not None and len(events) > 2 and lowest <= fit[1] * (1 + 2 * near):
                break  # the lowest event is near theta: its short way to zero fixes it
            if fit is None or lowest > la * (1 - step):
                target = lowest * (1 - step)  # first a lever for the slope
            else:
                # One more event just above theta: its short way to zero makes the
                # slope's error matter little, and it lengthens the slope's lever.
                target = min(fit[1] * (1 + near), lowest * (1 - near))
            target = max(target, lowest * (1 - 2 * step))  # no leap on a poor fit
            if not catch(target, lowest):
                # No event for two full trials' time: theta is above these loads.
                return (fit[0] if fit else None), math.sqrt(target * lowest)
        else:
            fit = event_line(events)  # with the last event caught
        if fit is None:
            return None, min(x for x, _ in events) * (1 - step)
        return fit

    slope, theta = locate()
    load = max(theta * (1 - margin), floor)
    fails = 0
    while sr.budget_left():
        c = sr.long(load)
        if c.loss == 0:
            return load, upper
        upper = min(upper or load, load)
        if slope is not None and c.loss <= slope * load * accept:
            # The coin flip expected at the answer: one event, barely lossy here.
            return load, upper
        fails += 1
        if slope is None and catch(load, load):
            # No line to read the loss with (no events caught lower): events do
            # happen here, so catch one and locate again.
            slope, theta = locate()
            load = max(min(theta * (1 - margin), load * (1 - margin)), floor)
            continue
        nxt = load * (1 - margin * 2 ** (fails - 1))
        if slope is not None:
            own = load - c.loss / slope  # zero-loss load of the event it met, if one
            nxt = min(nxt, max(own * (1 - margin / 2), load * (1 - 4 * margin * fails)))
        if load <= floor:
            break
        load = max(nxt, floor)
    return None, upper
