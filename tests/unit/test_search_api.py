"""find_ndr_pdr entry point: validation, result fields, partial results, progress, latency."""

from __future__ import annotations

import dataclasses
import doctest

import pytest

import dpgate.search.api
import dpgate.search.latency
import dpgate.search.result
import dpgate.search.signoff
import dpgate.search.simulated
from dpgate.model.errors import ConfigError, TrialError
from dpgate.model.trial import TrialResult
from dpgate.search import SearchAborted, SearchResult, counts_of, find_ndr_pdr, latency_trials
from dpgate.search.simulated import HardCapacity, make_sut

PROFILES = ("per-commit", "rfc2544-binary", "sign-off")
FAST = {
    "per-commit": {},
    "rfc2544-binary": {"trial_duration": 1.0},
    "sign-off": {"trial_duration": 10.0},
}


def test_unknown_profile_lists_accepted():
    with pytest.raises(ConfigError) as err:
        find_ndr_pdr(make_sut("hard").measure, 1e5, 1.5e6, profile="fast")
    msg = str(err.value)
    assert "'fast'" in msg
    for p in PROFILES:
        assert p in msg


@pytest.mark.parametrize("profile", PROFILES)
def test_unknown_override_names_it_and_lists_accepted(profile):
    with pytest.raises(ConfigError) as err:
        find_ndr_pdr(make_sut("hard").measure, 1e5, 1.5e6, profile=profile, widht=0.01)
    assert "'widht'" in str(err.value)
    assert "width" in str(err.value).split("accepted:")[1]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"min_rate": 2e6, "max_rate": 1e6}, "below max_rate"),
        ({"min_rate": 1e6, "max_rate": 1e6}, "below max_rate"),
        ({"min_rate": 0, "max_rate": 1e6}, "min_rate"),
        ({"ndr_loss": 1.0}, "ndr_loss"),
        ({"pdr_loss": -0.1}, "pdr_loss"),
        ({"ndr_loss": 0.01, "pdr_loss": 0.005}, "pdr_loss"),
        ({"width": 0.0}, "width"),
        ({"trial_duration": -1}, "trial_duration"),
        ({"trial_duration": "60s"}, "trial_duration"),
        ({"exceed_ratio": 1.0}, "exceed_ratio"),
    ],
)
def test_bad_arguments_raise_config_error(kwargs, fragment):
    args = {"min_rate": 1e5, "max_rate": 1.5e6}
    args.update(kwargs)
    with pytest.raises(ConfigError, match=fragment):
        find_ndr_pdr(make_sut("hard").measure, args.pop("min_rate"), args.pop("max_rate"), **args)


@pytest.mark.parametrize("profile", PROFILES)
def test_result_fields_and_time_accounting(profile):
    r = find_ndr_pdr(make_sut("hard").measure, 1e5, 1.5e6, profile=profile, **FAST[profile])
    assert isinstance(r, SearchResult)
    assert r.profile == profile
    assert r.trial_count == len(r.trials) > 2
    assert all(isinstance(t[2], TrialResult) for t in r.trials)
    assert r.total_time_s == pytest.approx(sum(d for _, d, _ in r.trials) + 0.5 * r.trial_count)
    assert r.settings["pdr_loss"] == 0.005 and r.settings["min_rate"] == 1e5
    assert r.ndr <= r.pdr
    assert r.at_max == (False, False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.ndr = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("profile", PROFILES)
def test_at_max_when_sut_outruns_max_rate(profile):
    sut = HardCapacity(capacity=5e6)
    r = find_ndr_pdr(sut.measure, 1e5, 1.5e6, profile=profile, **FAST[profile])
    assert r.ndr == pytest.approx(1.5e6)
    assert r.pdr == pytest.approx(1.5e6)
    assert r.ndr_at_max and r.pdr_at_max


@pytest.mark.parametrize("profile", PROFILES)
def test_measure_failure_raises_with_partial_trials(profile):
    sut = make_sut("hard")
    calls = []

    def measure(load, duration):
        if len(calls) == 4:
            raise TrialError("generator died")
        calls.append(load)
        return sut.measure(load, duration)

    with pytest.raises(SearchAborted) as err:
        find_ndr_pdr(measure, 1e5, 1.5e6, profile=profile, **FAST[profile])
    partial = err.value.partial
    assert isinstance(err.value.__cause__, TrialError)
    assert "generator died" in str(err.value) and "4 trial(s)" in str(err.value)
    assert partial.trial_count == 4
    assert [t[0] for t in partial.trials] == calls
    assert partial.ndr is None and partial.pdr is None


def test_progress_called_per_trial():
    seen = []
    r = find_ndr_pdr(
        make_sut("hard").measure, 1e5, 1.5e6, progress=lambda i, load, res: seen.append((i, load, res))
    )
    assert [i for i, _, _ in seen] == list(range(1, r.trial_count + 1))
    assert [(load, res) for _, load, res in seen] == [(t[0], t[2]) for t in r.trials]


def test_loss_counts_intended_when_present():
    # A generator that could only send half: tx == rx, yet the trial lost half.
    c = counts_of({"tx_packets": 500, "rx_packets": 500, "intended_packets": 1000})
    assert (c.loss, c.loss_ratio) == (500, 0.5)
    c = counts_of({"tx_packets": 1000, "rx_packets": 990})
    assert (c.loss, c.loss_ratio) == (10, 0.01)


def test_search_sees_generator_shortfall_as_loss():
    cap = 800_000.0

    def shortfall(load, duration):
        intended = int(load * duration)
        sent = min(intended, int(cap * duration))
        return TrialResult.from_counts(load, duration, tx_packets=sent, rx_packets=sent)

    r = find_ndr_pdr(shortfall, 1e5, 1.5e6)
    assert cap * 0.99 <= r.ndr <= cap


def test_measure_returning_wrong_type_aborts_clearly():
    with pytest.raises(SearchAborted, match="tx_packets"):
        find_ndr_pdr(lambda load, d: 42, 1e5, 1.5e6)


def test_per_commit_warmup_and_config_order():
    r = find_ndr_pdr(make_sut("hard").measure, 1e5, 1.5e6, warmup=True)
    assert r.trials[0][:2] == (1.5e6, 1.0)  # the warm-up trial is recorded
    # Rates above MLRsearch's default max_load (1e9) need the setter order handled.
    big = HardCapacity(capacity=2.5e9)
    r = find_ndr_pdr(big.measure, 2e9, 3e9, search_duration_max=3600)
    assert 2.5e9 * 0.99 <= r.ndr <= 2.5e9
    assert r.settings["search_duration_max"] == 3600.0


def test_latency_trials_at_fractions_of_pdr():
    calls = []
    out = latency_trials(lambda load, d: calls.append((load, d)) or load / 1e3, 1e6)
    assert [round(load) for load, _ in out] == [900_000, 500_000, 100_000]
    assert [res for _, res in out] == [900.0, 500.0, 100.0]
    assert all(d == 5.0 for _, d in calls)
    with pytest.raises(ConfigError):
        latency_trials(lambda load, d: None, 0.0)
    with pytest.raises(ConfigError):
        latency_trials(lambda load, d: None, 1e6, fractions=(1.5,))


@pytest.mark.parametrize(
    "module",
    [
        dpgate.search.api,
        dpgate.search.latency,
        dpgate.search.result,
        dpgate.search.signoff,
        dpgate.search.simulated,
    ],
)
def test_doctests(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_mlrsearch_wall_clock_timeout_keeps_partial_trials():
    # MLRsearch's search_duration_max is wall clock and raises RuntimeError without
    # its trials; the wrapper still hands them back.
    with pytest.raises(SearchAborted) as err:
        find_ndr_pdr(make_sut("hard").measure, 1e5, 1.5e6, search_duration_max=1e-9)
    assert isinstance(err.value.__cause__, RuntimeError)
    assert err.value.partial.trial_count >= 1
    assert err.value.partial.trials[0][0] == 1.5e6  # MLRsearch starts at max load
