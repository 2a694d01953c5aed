"""``find_ndr_pdr``: one entry point, three search profiles.

    >>> from dpgate.search.simulated import make_sut
    >>> r = find_ndr_pdr(make_sut("hard", seed=1).measure, 100_000, 1_500_000)
    >>> round(r.ndr / 1e6, 2), round(r.pdr / 1e6, 2), r.profile, r.trial_count > 5
    (1.0, 1.0, 'per-commit', True)
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

from dpgate.model.errors import ConfigError
from dpgate.search import binary, mlr, signoff
from dpgate.search.result import DEFAULT_TRIAL_OVERHEAD_S, Measure, Progress, SearchResult, TrialLog

PROFILES = {
    mlr.PROFILE: mlr,
    signoff.PROFILE: signoff,
    binary.PROFILE: binary,
}

#: Overrides every profile accepts.
COMMON_DEFAULTS: Dict[str, Any] = {"trial_overhead": DEFAULT_TRIAL_OVERHEAD_S}

_INT_SETTINGS = {"samples_min", "samples_max", "max_long_trials", "tail_accept", "preceding_targets", "expansion_coefficient"}


def profile_settings(profile: str, **overrides: Any) -> Dict[str, Any]:
    """Defaults of ``profile`` with ``overrides`` applied and validated.

    >>> profile_settings("per-commit")["duration_sum"]
    21.0
    >>> profile_settings("per-commit", widht=0.01)
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: search override 'widht' is not known to profile 'per-commit'; accepted: duration_sum, exceed_ratio, expansion_coefficient, final_trial_duration, preceding_targets, search_duration_max, trial_duration, trial_overhead, warmup, width
    """
    if profile not in PROFILES:
        raise ConfigError(
            f"unknown search profile {profile!r}; accepted: {', '.join(sorted(PROFILES))}"
        )
    settings = dict(COMMON_DEFAULTS, **PROFILES[profile].DEFAULTS)
    for key, value in overrides.items():
        if key not in settings:
            raise ConfigError(
                f"search override {key!r} is not known to profile {profile!r}; "
                f"accepted: {', '.join(sorted(settings))}"
            )
        settings[key] = _check(profile, key, value)
    return settings


def _check(profile: str, key: str, value: Any) -> Any:
    if key in ("resolution_pps", "start_rate") and value is None:
        return None
    if key == "warmup":
        if value is True:
            return 1.0
        if value in (False, None):
            return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"search override {key}={value!r} (profile {profile!r}) must be a number")
    if key in _INT_SETTINGS:
        if int(value) != value or value < 1:
            raise ConfigError(f"search override {key}={value!r} must be an integer >= 1")
        return int(value)
    v = float(value)
    if not math.isfinite(v):
        raise ConfigError(f"search override {key}={value!r} must be finite")
    if key in ("width", "signoff_width", "long_step") and not 0 < v < 1:
        raise ConfigError(f"search override {key}={value!r} must be in (0, 1)")
    if key == "exceed_ratio" and not 0 <= v < 1:
        raise ConfigError(f"search override {key}={value!r} must be in [0, 1)")
    if key in ("trial_overhead", "warmup") and v < 0:
        raise ConfigError(f"search override {key}={value!r} must be >= 0")
    if key not in ("trial_overhead", "warmup", "exceed_ratio") and v <= 0:
        raise ConfigError(f"search override {key}={value!r} must be > 0")
    return v


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
    settings = profile_settings(profile, **overrides)
    ndr_loss = _check_loss("ndr_loss", ndr_loss)
    pdr_loss = _check_loss("pdr_loss", pdr_loss)
    if pdr_loss < ndr_loss:
        raise ConfigError(f"pdr_loss {pdr_loss} must be >= ndr_loss {ndr_loss}")
    for name, rate in (("min_rate", min_rate), ("max_rate", max_rate)):
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0 or not math.isfinite(rate):
            raise ConfigError(f"{name}={rate!r} must be a rate in pps greater than 0")
    if not min_rate < max_rate:
        raise ConfigError(f"min_rate {min_rate:g} pps must be below max_rate {max_rate:g} pps")
    min_rate, max_rate = float(min_rate), float(max_rate)
    log = TrialLog(measure, overhead_s=settings["trial_overhead"], progress=progress)
    recorded = dict(settings, ndr_loss=ndr_loss, pdr_loss=pdr_loss, min_rate=min_rate, max_rate=max_rate)
    try:
        bounds = PROFILES[profile].run(log, min_rate, max_rate, ndr_loss, pdr_loss, settings)
    except Exception as err:  # noqa: BLE001 - re-raised with the partial trials attached
        raise log.aborted(profile, recorded, max_rate, err) from err
    return log.result(profile, recorded, max_rate, **bounds)
