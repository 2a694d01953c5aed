"""Search settings: one frozen dataclass per profile, built from validated overrides.

Every profile's settings class derives from :class:`SearchSettings` (the settings all
profiles share) and declares each field with :func:`setting`: its default, the check
an override must pass and what it means. :func:`build` applies overrides with one
:class:`ConfigError` per bad key or value, the messages naming the key and, for an
unknown key, every accepted one.

    >>> from dataclasses import asdict
    >>> s = build(SearchSettings, "any", trial_overhead=1)
    >>> s.trial_overhead, asdict(s)
    (1.0, {'trial_overhead': 1.0})
    >>> build(SearchSettings, "any", trial_overhead=-1)
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: search override trial_overhead=-1 must be >= 0
    >>> SearchSettings.doc("trial_overhead")
    'accounted per-trial overhead (traffic start/stop, counter reads) [s]'
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Dict, Mapping, Type, TypeVar

from dpgate.model.errors import ConfigError
from dpgate.search.result import DEFAULT_TRIAL_OVERHEAD_S

#: Checks an override can name (see :func:`_check`):
#: ``positive`` > 0; ``non_negative`` >= 0; ``ratio`` in [0, 1); ``fraction`` in (0, 1);
#: ``count`` an integer >= 1; ``optional_positive`` > 0 or None; ``duration_or_flag``
#: >= 0, or True (1 s) / False / None (0 s).
CHECKS = ("positive", "non_negative", "ratio", "fraction", "count", "optional_positive", "duration_or_flag")


def setting(default: Any, check: str, doc: str) -> Any:
    """A settings field: ``default``, the ``check`` an override must pass (one of
    :data:`CHECKS`) and its ``doc`` (unit in brackets)."""
    if check not in CHECKS:
        raise ValueError(f"unknown setting check {check!r}; accepted: {', '.join(CHECKS)}")
    return dataclasses.field(default=default, metadata={"check": check, "doc": doc})


@dataclass(frozen=True)
class SearchSettings:
    """The settings every profile accepts; each profile's class adds its own."""

    trial_overhead: float = setting(
        DEFAULT_TRIAL_OVERHEAD_S,
        "non_negative",
        "accounted per-trial overhead (traffic start/stop, counter reads) [s]",
    )

    @classmethod
    def doc(cls, name: str) -> str:
        """What the field ``name`` means."""
        return str(_fields(cls)[name].metadata["doc"])

    def as_dict(self) -> Dict[str, Any]:
        """Field name -> value, in declaration order (what a search result records)."""
        return dataclasses.asdict(self)


S = TypeVar("S", bound=SearchSettings)


def _fields(cls: Type[SearchSettings]) -> Dict[str, dataclasses.Field[Any]]:
    return {f.name: f for f in dataclasses.fields(cls)}


def own_defaults(cls: Type[SearchSettings]) -> Mapping[str, Any]:
    """Read-only defaults of the fields ``cls`` adds to :class:`SearchSettings`, by name.

    >>> dict(own_defaults(SearchSettings))
    {}
    """
    common = {f.name for f in dataclasses.fields(SearchSettings)}
    return MappingProxyType({k: v for k, v in cls().as_dict().items() if k not in common})


def build(cls: Type[S], profile: str, **overrides: Any) -> S:
    """``cls``'s defaults with ``overrides`` applied, each checked (``profile`` names
    the profile in the errors)."""
    fields = _fields(cls)
    checked: Dict[str, Any] = {}
    for key, value in overrides.items():
        if key not in fields:
            raise ConfigError(
                f"search override {key!r} is not known to profile {profile!r}; accepted: {', '.join(sorted(fields))}"
            )
        checked[key] = _check(profile, key, fields[key].metadata["check"], value)
    return cls(**checked)


def _check(profile: str, key: str, check: str, value: Any) -> Any:
    if check == "optional_positive" and value is None:
        return None
    if check == "duration_or_flag":
        if value is True:
            return 1.0
        if value in (False, None):
            return 0.0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"search override {key}={value!r} (profile {profile!r}) must be a number")
    if check == "count":
        if not math.isfinite(value) or int(value) != value or value < 1:
            raise ConfigError(f"search override {key}={value!r} must be an integer >= 1")
        return int(value)
    v = float(value)
    if not math.isfinite(v):
        raise ConfigError(f"search override {key}={value!r} must be finite")
    if check == "fraction" and not 0 < v < 1:
        raise ConfigError(f"search override {key}={value!r} must be in (0, 1)")
    if check == "ratio" and not 0 <= v < 1:
        raise ConfigError(f"search override {key}={value!r} must be in [0, 1)")
    if check in ("non_negative", "duration_or_flag") and v < 0:
        raise ConfigError(f"search override {key}={value!r} must be >= 0")
    if check in ("positive", "optional_positive") and v <= 0:
        raise ConfigError(f"search override {key}={value!r} must be > 0")
    return v
