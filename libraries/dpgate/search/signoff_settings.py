"""The ``sign-off`` profile's settings (what each does: :mod:`dpgate.search.signoff`).

>>> from dpgate.search.settings import build
>>> s = build(SignOffSettings, "sign-off", trial_duration=30)
>>> s.trial_duration, s.probe_duration, s.max_long_trials
(30.0, 1.0, 10)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from dpgate.search.settings import SearchSettings, own_defaults, setting


@dataclass(frozen=True)
class SignOffSettings(SearchSettings):
    """Full-trial length, probe lengths, resolutions, budgets and margins of ``sign-off``."""

    trial_duration: float = setting(60.0, "positive", "full-length trial that defines the answer [s]")
    probe_duration: float = setting(1.0, "positive", "short locating probe [s]")
    width: float = setting(0.005, "fraction", "probe resolution, relative")
    signoff_width: float = setting(
        0.01, "fraction", "full-trial bracket of the full-trial-only search, relative"
    )
    samples_min: int = setting(5, "count", "capacity samples taken at least")
    samples_max: int = setting(
        15, "count", "capacity samples taken at most, when they disagree by more than width"
    )
    long_step: float = setting(0.08, "fraction", "relative step down between full trials")
    max_long_trials: int = setting(10, "count", "full-length trials spent at most (NDR and PDR together)")
    tail_accept: int = setting(3, "count", "lost frames of a full trial that still confirm a loss-tail NDR")
    pdr_margin: float = setting(0.001, "positive", "capacity-limited PDR candidate lowered by this, relative")
    tail_probe_duration: float = setting(10.0, "positive", "probe low in the loss tail [s]")
    event_probe_duration: float = setting(2.0, "positive", "event probe that catches rare lossy events [s]")
    event_near: float = setting(
        0.04, "positive", "relative distance from the events' zero that catching aims at and stops within"
    )
    event_margin: float = setting(
        0.005, "positive", "full trials start this far under the events' zero, relative"
    )
    event_accept: float = setting(
        0.01, "positive", "a failure whose event lies this close under the load confirms it"
    )
    event_budget: float = setting(3.0, "positive", "full trials' time the counted event search may spend")
    event_spread: float = setting(
        0.03, "positive", "events whose zeros lie this close to the line's are step-like"
    )

    event_refine: float = setting(
        0.03, "positive", "a passed answer this far under the nearest lossy load is bisected further"
    )
    event_refine_trials: int = setting(2, "count", "full trials the event search may spend bisecting")


#: The defaults by name (read-only; the settings are :class:`SignOffSettings`).
DEFAULTS: Mapping[str, Any] = own_defaults(SignOffSettings)
