"""``find_ndr_pdr``: one entry point, three search profiles.

>>> from dpgate.search.simulated import make_sut
>>> r = find_ndr_pdr(make_sut("hard", seed=1).measure, 100_000, 1_500_000)
>>> round(r.ndr / 1e6, 2), round(r.pdr / 1e6, 2), r.profile, r.trial_count > 5
(1.0, 1.0, 'per-commit', True)
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any, Dict, Optional

from dpgate.model.errors import ConfigError
from dpgate.search import binary, mlr, signoff
from dpgate.search.result import Measure, Progress, SearchResult, TrialLog
from dpgate.search.settings import SearchSettings, build

#: Profile name -> module with ``PROFILE``, ``SETTINGS`` (its frozen settings class,
#: derived from :class:`~dpgate.search.settings.SearchSettings`) and ``run``.
PROFILES: Dict[str, ModuleType] = {
    mlr.PROFILE: mlr,
    signoff.PROFILE: signoff,
    binary.PROFILE: binary,
}


def search_settings(profile: str, **overrides: Any) -> SearchSettings:
    """The settings of ``profile``: its frozen dataclass with ``overrides`` applied and validated.

    >>> s = search_settings("rfc2544-binary", trial_duration=20)
    >>> type(s).__name__, s.trial_duration, s.trial_overhead
    ('BinarySettings', 20.0, 0.5)
    >>> search_settings("per-commit", widht=0.01)
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: search override 'widht' is not known to profile 'per-commit'; accepted: duration_sum, exceed_ratio, expansion_coefficient, final_trial_duration, preceding_targets, search_duration_max, trial_duration, trial_overhead, warmup, width
    """
    if profile not in PROFILES:
        raise ConfigError(f"unknown search profile {profile!r}; accepted: {', '.join(sorted(PROFILES))}")
    settings: SearchSettings = build(PROFILES[profile].SETTINGS, profile, **overrides)
    return settings


def profile_settings(profile: str, **overrides: Any) -> Dict[str, Any]:
    """:func:`search_settings` as a plain dict (name -> value), as a search records it.

    >>> profile_settings("per-commit")["duration_sum"]
    21.0
    """
    return search_settings(profile, **overrides).as_dict()


def _check_loss(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ConfigError(f"{name}={value!r} must be a loss ratio in [0, 1), e.g. 0.005 for 0.5 %")
    return float(value)


def find_ndr_pdr(
    measure: Measure,
    min_rate: float,
    max_rate: float,
    *,
    ndr_loss: float = 0.0,
    pdr_loss: float = 0.005,
    profile: str = "per-commit",
    progress: Optional[Progress] = None,
    **overrides: Any,
) -> SearchResult:
    """Find NDR (loss <= ``ndr_loss``) and PDR (loss <= ``pdr_loss``) between the rates.

    ``measure(load_pps, duration_s)`` runs one trial and returns a
    :class:`dpgate.model.trial.TrialResult` (only ``tx_packets``, ``rx_packets`` and
    ``intended_packets`` are read). ``profile`` is ``per-commit`` (MLRsearch, CSIT
    settings), ``sign-off`` (60 s RFC 2544 definition, see :mod:`dpgate.search.signoff`)
    or ``rfc2544-binary`` (classic binary search). ``overrides`` change profile
    parameters (e.g. ``trial_duration=30``); unknown ones raise ConfigError.
    ``progress(step, load, result)`` is called after every trial.

    Raises :class:`ConfigError` on bad arguments and
    :class:`dpgate.search.SearchAborted` (with ``.partial`` trials) if a trial or the
    search fails.
    """
    settings = search_settings(profile, **overrides)
    ndr_loss = _check_loss("ndr_loss", ndr_loss)
    pdr_loss = _check_loss("pdr_loss", pdr_loss)
    if pdr_loss < ndr_loss:
        raise ConfigError(f"pdr_loss {pdr_loss} must be >= ndr_loss {ndr_loss}")
    for name, rate in (("min_rate", min_rate), ("max_rate", max_rate)):
        if (
            isinstance(rate, bool)
            or not isinstance(rate, (int, float))
            or not rate > 0
            or not math.isfinite(rate)
        ):
            raise ConfigError(f"{name}={rate!r} must be a rate in pps greater than 0")
    if not min_rate < max_rate:
        raise ConfigError(f"min_rate {min_rate:g} pps must be below max_rate {max_rate:g} pps")
    min_rate, max_rate = float(min_rate), float(max_rate)
    log = TrialLog(measure, overhead_s=settings.trial_overhead, progress=progress)
    recorded = dict(
        settings.as_dict(), ndr_loss=ndr_loss, pdr_loss=pdr_loss, min_rate=min_rate, max_rate=max_rate
    )
    try:
        bounds = PROFILES[profile].run(log, min_rate, max_rate, ndr_loss, pdr_loss, settings)
    except Exception as err:  # noqa: BLE001 - re-raised with the partial trials attached
        raise log.aborted(profile, recorded, max_rate, err) from err
    return log.result(profile, recorded, max_rate, **bounds)
