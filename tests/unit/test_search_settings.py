"""Search settings are frozen dataclasses, one per profile, every field documented."""

from __future__ import annotations

import dataclasses

import pytest

from dpgate.model.errors import ConfigError
from dpgate.search import PROFILES, find_ndr_pdr, profile_settings
from dpgate.search.api import search_settings
from dpgate.search.settings import CHECKS, SearchSettings
from dpgate.search.simulated import make_sut


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_each_profile_has_frozen_documented_settings(profile):
    s = search_settings(profile)
    assert isinstance(s, SearchSettings) and type(s) is PROFILES[profile].SETTINGS
    for f in dataclasses.fields(s):
        assert f.metadata["check"] in CHECKS
        assert type(s).doc(f.name).strip(), f"{profile}.{f.name} has no doc"
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.trial_overhead = 1.0  # type: ignore[misc]
    # The module's DEFAULTS are the profile's own fields, read-only.
    assert dict(PROFILES[profile].DEFAULTS) == {k: v for k, v in s.as_dict().items() if k != "trial_overhead"}


def test_overrides_build_a_new_object_and_the_dict_view_matches():
    s = search_settings("sign-off", trial_duration=30, samples_min=3.0)
    assert (s.trial_duration, s.samples_min) == (30.0, 3)
    assert isinstance(s.samples_min, int) and isinstance(s.trial_duration, float)
    assert search_settings("sign-off").trial_duration == 60.0  # defaults untouched
    assert profile_settings("sign-off", trial_duration=30, samples_min=3.0) == s.as_dict()


def test_one_error_per_bad_key_or_value():
    with pytest.raises(
        ConfigError, match=r"'probe' is not known to profile 'sign-off'; accepted: .*probe_duration"
    ):
        search_settings("sign-off", probe=2)
    with pytest.raises(ConfigError, match=r"long_step=1.5 must be in \(0, 1\)"):
        search_settings("sign-off", long_step=1.5)


def test_recorded_settings_keep_their_order_and_values():
    r = find_ndr_pdr(make_sut("hard").measure, 1e5, 1.5e6, profile="rfc2544-binary", trial_duration=20)
    assert list(r.settings) == [
        "trial_overhead",
        "trial_duration",
        "width",
        "resolution_pps",
        "start_rate",
        "ndr_loss",
        "pdr_loss",
        "min_rate",
        "max_rate",
        "wall_time_s",
    ]
    assert r.settings["trial_duration"] == 20.0 and r.settings["resolution_pps"] is None


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_count_that_is_not_finite_is_one_config_error(value):
    with pytest.raises(ConfigError, match=r"samples_max=(nan|inf) must be an integer >= 1"):
        search_settings("sign-off", samples_max=value)
