"""Thresholds files, result records, JUnit content and keyword failure messages."""

import os
import xml.etree.ElementTree as ET

import pytest
from helpers import ndrpdr_result
from robot.api import Failure, SkipExecution

from dpgate.cli.gate_summary import summary_table
from dpgate.config.thresholds import CaseThresholds, load_thresholds
from dpgate.config.units import parse_rate
from dpgate.model.errors import ConfigError
from dpgate.outputs.junit import write_junit
from dpgate.outputs.results import ResultStore, load_records
from dpgate.robotlib import Gates


def result(ndr=212_000.0, pdr=230_000.0, cpp=None, telemetry=None, max_pps=500_000.0):
    return ndrpdr_result(ndr, pdr, cpp=cpp, telemetry=telemetry, max_pps=max_pps)


def write(tmp_path, text):
    p = tmp_path / "t.yaml"
    p.write_text(text)
    return str(p)


# -- thresholds ---------------------------------------------------------------------
def test_thresholds_lookup_merges_defaults_all_and_size(tmp_path):
    f = load_thresholds(
        write(
            tmp_path,
            """
defaults: {cpp_max: 50000}
nfs:
  linux-ip4:
    all: {ndr_min: 0.1 Mpps}
    64B: {ndr_min: 0.2 Mpps, pdr_min: 210kpps}
""",
        )
    )
    t = f.lookup("linux-ip4", "64B")
    assert t.rate("ndr_min") == pytest.approx(200_000)
    assert t.rate("pdr_min") == pytest.approx(210_000)
    assert t.cpp_max == 50000
    t2 = f.lookup("linux-ip4", "IMIX")
    assert t2.rate("ndr_min") == pytest.approx(100_000) and t2.pdr_min is None


@pytest.mark.parametrize(
    "text, path, words",
    [
        ("nfs: {x: {64B: {ndr_min: fast}}}", "nfs.x.64B.ndr_min", "not a rate"),
        ("nfs: {x: {64B: {ndr_min: 50%}}}", "nfs.x.64B.ndr_min", "absolute rate"),
        ("nfs: {x: {63B: {ndr_min: 1Mpps}}}", "nfs.x.63B", "out of range"),
        ("nfs: {x: {64B: {cpp_max: -3}}}", "nfs.x.64B.cpp_max", "> 0"),
        ("nfs: {x: {64B: {ndr_floor: 1Mpps}}}", "nfs.x.64B.ndr_floor", "unknown key"),
        ("nfs: {x: {64B: {ddio_miss_max: 2}}}", "nfs.x.64B.ddio_miss_max", "[0, 1]"),
        ("defaults: {}", "nfs", "missing required field"),
        ("nfs: [1, 2]", "nfs", "mapping"),
        ("nfs: {x: {64B: {ndr_min: 1Mpps}}\n  bad: [", "line", "not valid YAML"),
    ],
)
def test_thresholds_errors_name_file_field_and_expectation(tmp_path, text, path, words):
    src = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_thresholds(src)
    msg = str(err.value)
    assert src in msg and path in msg and words in msg


def test_thresholds_unknown_nf_lists_known(tmp_path):
    f = load_thresholds(write(tmp_path, "nfs: {linux-ip4: {all: {ndr_min: 1kpps}}}"))
    with pytest.raises(ConfigError, match="no thresholds for NF 'vpp'.*linux-ip4"):
        f.lookup("vpp", "64B")


def test_shipped_thresholds_file_is_valid_and_covers_every_embedded_sut():
    from dpgate.testbeds.embedded.suts.base import sut_names

    here = os.path.dirname(__file__)
    f = load_thresholds(os.path.join(here, "..", "..", "variables", "embedded.yaml"))
    for nf in sut_names():
        for size in ("64B", "IMIX", "1518B"):
            t = f.lookup(nf, size)
            assert t.rate("ndr_min") and t.rate("pdr_min"), (nf, size)


# -- keyword failure messages -----------------------------------------------------------
def test_throughput_gate_message_has_numbers_and_percent():
    with pytest.raises(Failure) as err:
        Gates().throughput_should_be_at_least(result(ndr=212_000), parse_rate("0.25 Mpps"), "NDR")
    assert str(err.value) == "NDR 0.212 Mpps < floor 0.250 Mpps (-15.2 %)"


def test_throughput_gate_passes_at_or_above_floor_and_checks_pdr():
    Gates().throughput_should_be_at_least(result(ndr=250_000), parse_rate("0.25 Mpps"), "NDR")
    with pytest.raises(Failure, match=r"PDR 0.230 Mpps < floor 0.240 Mpps \(-4.2 %\)"):
        Gates().throughput_should_be_at_least(result(pdr=230_000), parse_rate("240kpps"), "pdr")


def test_throughput_gate_percent_floor_is_relative_to_generator_ceiling():
    with pytest.raises(Failure, match="floor 0.450 Mpps"):
        Gates().throughput_should_be_at_least(result(ndr=400_000, max_pps=500_000), parse_rate("90%"))


def test_cpp_gate_message():
    with pytest.raises(Failure) as err:
        Gates().cycles_per_packet_should_be_at_most(result(cpp=13_500), 12_000)
    assert str(err.value) == "CPP 13500 > ceiling 12000 (+12.5 %)"
    Gates().cycles_per_packet_should_be_at_most(result(cpp=11_000), 12_000)


def test_telemetry_gate_policy_skip_and_fail_carry_the_reason():
    r = result(telemetry={"ipc": "not supported (perf: cycles <not supported>)"})
    with pytest.raises(SkipExecution, match=r"IPC gate: not supported \(perf: cycles"):
        Gates(telemetry_policy="skip").ipc_should_be_at_least(r, 1.5)
    with pytest.raises(Failure, match="telemetry_policy=fail"):
        Gates(telemetry_policy="fail").ipc_should_be_at_least(r, 1.5)


def test_telemetry_gate_with_values():
    r = result(telemetry={"ipc": 1.2, "ddio_miss_rate_itom": 0.08})
    with pytest.raises(Failure, match=r"IPC 1.20 < floor 1.50 \(-20.0 %\)"):
        Gates().ipc_should_be_at_least(r, 1.5)
    with pytest.raises(Failure, match=r"DDIO ItoM miss rate 8.0% > ceiling 5.0%"):
        Gates().ddio_miss_rate_should_be_at_most(r, "ItoM", "5%")
    Gates().ipc_should_be_at_least(result(telemetry={"ipc": 2.0}), 1.5)


def test_check_gates_reports_all_failures_together():
    t = CaseThresholds(ndr_min="0.3 Mpps", pdr_min="0.3 Mpps", cpp_max=1000.0)
    with pytest.raises(Failure) as err:
        Gates().check_gates(result(), t)
    msg = str(err.value)
    assert msg.count(";") == 2 and "NDR 0.212" in msg and "PDR 0.230" in msg and "CPP" in msg


def test_bad_policy_is_a_config_error():
    with pytest.raises(ConfigError, match="telemetry_policy must be one of skip, fail"):
        Gates(telemetry_policy="maybe")


# -- records and JUnit -------------------------------------------------------------------
def make_records(tmp_path):
    store = ResultStore(str(tmp_path))
    store.update(
        "S.t1",
        suite="S",
        name="t1",
        status="PASS",
        started=1,
        metrics={"ndr_pps": 212000.0, "pdr_pps": 230000.0, "cpp": 12264.2, "ipc": "not supported (no PMU)"},
    )
    store.update(
        "S.t1", gates=[{"name": "ndr_min", "passed": True, "message": "NDR ok", "value": 1, "threshold": 1}]
    )
    store.update(
        "S.t2",
        suite="S",
        name="t2",
        status="FAIL",
        started=2,
        message="NDR 0.212 Mpps < floor 0.250 Mpps (-15.2 %)",
        metrics={"ndr_pps": 212000.0},
    )
    store.update("S.t3", suite="S", name="t3", status="RUNNING", started=3)
    return load_records(str(tmp_path))


def test_records_roundtrip_merge_and_order(tmp_path):
    recs = make_records(tmp_path)
    assert [r["name"] for r in recs] == ["t1", "t2", "t3"]
    assert recs[0]["metrics"]["cpp"] == 12264.2 and recs[0]["gates"][0]["name"] == "ndr_min"


def test_junit_has_properties_failure_and_system_out(tmp_path):
    path = write_junit(make_records(tmp_path), str(tmp_path / "junit.xml"))
    root = ET.parse(path).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert set(cases) == {"t1", "t2", "t3"}
    t1 = cases["t1"]
    assert t1.get("classname") == "S"
    props = {p.get("name"): p.get("value") for p in t1.iter("property")}
    assert props["ndr_pps"] == "212000" and props["ipc"] == "not supported (no PMU)"
    assert "cpp=12264.2" in t1.find("system-out").text
    fail = cases["t2"].find("failure")
    assert fail is not None and fail.get("message") == "NDR 0.212 Mpps < floor 0.250 Mpps (-15.2 %)"
    assert cases["t3"].find("error") is not None  # unfinished test is visible, not lost
    assert cases["t1"].find("failure") is None
    suite = root.find("testsuite")
    assert suite.get("tests") == "3" and suite.get("failures") == "1"


def test_tests_a_stopped_run_cut_short_are_errors_not_failures(tmp_path):
    """Ctrl-C during a gate (2026-12-06, 18 of 27 cases done): Robot fails the running test
    ("Execution terminated by signal") and every later one ("Test execution stopped due to a
    fatal error."); JUnit gave them 9 <failure>s, as if the SUTs had failed their gates."""
    store = ResultStore(str(tmp_path))
    messages = {
        "a": "per-commit search aborted after 8 trial(s): ExecutionFailed: Execution terminated by signal",
        "b": "Test execution stopped due to a fatal error.",
        "c": "NDR 0.1 Mpps < floor 0.2 Mpps (-50.0 %)",
    }
    for started, (name, message) in enumerate(messages.items()):
        store.update(f"S.{name}", suite="S", name=name, status="FAIL", started=started, message=message)
    recs = load_records(str(tmp_path))
    root = ET.parse(write_junit(recs, str(tmp_path / "j.xml"))).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    for name in ("a", "b"):
        assert cases[name].find("failure") is None
        assert (
            cases[name].find("error").get("message").startswith("not run to its end: the run was stopped (")
        )
    assert cases["c"].find("failure") is not None and cases["c"].find("error") is None
    assert root.find("testsuite").get("failures") == "1" and root.find("testsuite").get("errors") == "2"
    table = summary_table(recs)
    assert "NOT RUN: Test execution stopped" in table and "FAIL: NDR 0.1 Mpps" in table


def test_summary_table_lists_numbers_and_verdicts(tmp_path):
    table = summary_table(make_records(tmp_path))
    assert "0.212" in table and "0.230" in table and "12264" in table
    assert "FAIL: NDR 0.212 Mpps < floor" in table


# -- unfinished searches ------------------------------------------------------------------
def test_time_limited_search_falls_back_to_bounds_of_measured_trials():
    from dpgate.search import SearchAborted, find_ndr_pdr
    from dpgate.search.bounded import _bounds_from_trials, _TimeUp
    from dpgate.search.simulated import make_sut

    sut = make_sut("hard", seed=3)
    calls = []

    def measure(load, duration):
        if len(calls) >= 8:
            raise _TimeUp("limit")
        calls.append(load)
        return sut.measure(load, duration)

    with pytest.raises(SearchAborted) as err:
        find_ndr_pdr(measure, 100_000, 1_500_000)
    assert isinstance(err.value.__cause__, _TimeUp)
    b = _bounds_from_trials(err.value.partial, 0.0, 0.005)
    assert b.trial_count == 8
    assert b.ndr is not None and b.ndr_upper is not None and b.ndr < b.ndr_upper
    # every trial at or below the lower bound passed; the upper bound failed
    for load, _, tr in err.value.partial.trials:
        if load <= b.ndr:
            assert tr.loss_ratio == 0.0
    assert any(
        load == pytest.approx(b.ndr_upper, abs=0.1) and tr.loss_ratio > 0
        for load, _, tr in err.value.partial.trials
    )


def test_partial_bounds_majority_rule_on_noisy_loads():
    from dpgate.model.trial import TrialResult
    from dpgate.search.bounded import _bounds_from_trials

    def t(load, lost):
        return (
            load,
            1.0,
            TrialResult.from_counts(load, 1.0, tx_packets=int(load), rx_packets=int(load) - lost),
        )

    class P:
        trials = (t(100, 0), t(200, 0), t(200, 5), t(200, 0), t(300, 9), t(300, 9), t(250, 0))

    b = _bounds_from_trials(P, 0.0, 0.05)
    assert (b.ndr, b.ndr_upper) == (250, 300)  # 200 passed 2 of 3 s: a pass
    assert b.pdr == 300 and b.pdr_upper is None  # 9 of 300 = 3 % < 5 %


# -- tags and the gate command line --------------------------------------------------------
@pytest.mark.parametrize(
    "name, tags",
    [
        ("64B-1c-linux-ip4-ndrpdr", ["64B", "1C", "NDRPDR"]),
        ("IMIX-2t1c-ethip4-ip4base-ndrpdr", ["IMIX", "1C", "2T1C", "NDRPDR"]),
        ("1518B-4c-vpp-l2patch-ndrpdr", ["1518B", "4C", "NDRPDR"]),
        ("imix-1c-x-mrr", ["IMIX", "1C"]),
        ("not-a-case-name", []),
    ],
)
def test_tags_derived_from_case_names(name, tags):
    from dpgate.robotmods import tags_for

    assert tags_for(name) == tags


def test_gate_robot_argv_carries_profile_listener_and_modifier(tmp_path):
    from dpgate.cli.gate import robot_argv
    from dpgate.cli.main import build_parser

    args = build_parser().parse_args(
        [
            "gate",
            "--outdir",
            str(tmp_path),
            "--profile",
            "sign-off",
            "--include",
            "64B",
            "--prefix",
            "dpg7-",
            "--variable",
            "X:1",
        ]
    )
    argv = robot_argv(args)
    assert argv[1:3] == ["-m", "robot"]
    assert "SEARCH_PROFILE:sign-off" in argv and "PREFIX:dpg7-" in argv and "X:1" in argv
    assert argv[argv.index("--include") + 1] == "64B"
    assert any(a.startswith("dpgate.listener.DpgateListener:") for a in argv)
    assert "dpgate.robotmods.CaseTags" in argv
    assert argv[-1] == "suites/embedded"


def test_gate_rejects_variable_without_colon(tmp_path):
    from dpgate.cli.gate import robot_argv
    from dpgate.cli.main import build_parser

    args = build_parser().parse_args(["gate", "--variable", "NOCOLON"])
    with pytest.raises(ConfigError, match="--variable 'NOCOLON' must be NAME:VALUE"):
        robot_argv(args)


def test_check_gates_skips_only_the_unsupported_telemetry_gate():
    r = result(telemetry={"ipc": "not supported (perf: no PMU)"})
    t = CaseThresholds(ndr_min="0.2 Mpps", ipc_min=1.5)
    Gates(telemetry_policy="skip").check_gates(r, t)  # throughput passed: the test passes
    with pytest.raises(SkipExecution, match="IPC gate: not supported"):
        Gates(telemetry_policy="skip").check_gates(r, CaseThresholds(ipc_min=1.5))  # nothing else to check
    with pytest.raises(
        Failure, match="IPC gate: not supported \\(perf: no PMU\\) \\(telemetry_policy=fail\\)"
    ):
        Gates(telemetry_policy="fail").check_gates(r, t)


def test_junit_shows_skipped_gate(tmp_path):
    store = ResultStore(str(tmp_path))
    store.update("S.t", suite="S", name="t", status="PASS", started=1, metrics={"ipc": "not supported (x)"})
    store.update(
        "S.t",
        gates=[
            {
                "name": "ipc",
                "passed": True,
                "skipped": True,
                "message": "IPC not supported (x)",
                "value": "x",
                "threshold": 1.5,
            }
        ],
    )
    path = write_junit(load_records(str(tmp_path)), str(tmp_path / "j.xml"))
    out = ET.parse(path).getroot().find(".//system-out").text
    assert "gate.ipc=SKIP: IPC not supported (x)" in out and "ipc=not supported (x)" in out


# -- results at the generator's ceiling ---------------------------------------------
def test_a_failed_floor_at_the_generator_ceiling_is_inconclusive_not_a_sut_failure():
    g = Gates()
    at_ceiling = result(ndr=277_252.0, pdr=277_252.0, max_pps=277_252.0)
    with pytest.raises(
        SkipExecution,
        match=r"ndr_min inconclusive: NDR 0.277 Mpps < floor 0.325 Mpps .*"
        r"at the generator's ceiling 0.277 Mpps",
    ):
        g.throughput_should_be_at_least(at_ceiling, parse_rate("0.325 Mpps"), "NDR")
    with pytest.raises(SkipExecution, match="cpp_max inconclusive"):
        g.cycles_per_packet_should_be_at_most(at_ceiling, 7700)
    # below the ceiling the SUT itself was the limit: a real failure
    with pytest.raises(Failure, match=r"NDR 0.212 Mpps < floor 0.325 Mpps"):
        g.throughput_should_be_at_least(result(max_pps=277_252.0), parse_rate("0.325 Mpps"), "NDR")
    # a passing value at the ceiling simply passes
    g.throughput_should_be_at_least(at_ceiling, parse_rate("0.2 Mpps"), "NDR")


def test_check_gates_skips_a_case_whose_every_failure_is_the_generators(tmp_path):
    th = load_thresholds(
        write(
            tmp_path, "nfs: {linux-bridge: {1518B: {ndr_min: 0.325 Mpps, pdr_min: 0.33 Mpps, cpp_max: 7700}}}"
        )
    ).lookup("linux-bridge", "1518B")
    with pytest.raises(SkipExecution, match="inconclusive"):
        Gates().check_gates(result(ndr=277_252.0, pdr=277_252.0, max_pps=277_252.0), th)


def test_calibration_replaces_a_hiccup_probe_but_keeps_a_slow_generator():
    from dpgate.traffic.tcpreplay import EXTRA_PROBES, ceiling_from_probes

    rates = iter([700e3, 280e3, 690e3, 705e3])
    assert ceiling_from_probes(lambda: next(rates)) == (690e3, [700e3, 280e3, 690e3, 705e3])
    steady = iter([300e3, 310e3, 305e3])
    assert ceiling_from_probes(lambda: next(steady))[0] == 300e3  # lowest of consistent probes
    calls = []
    low = iter([700e3, 100e3, 690e3] + [90e3] * 10)

    def probe():
        calls.append(1)
        return next(low)

    best, probes = ceiling_from_probes(probe)
    assert len(calls) == 3 + EXTRA_PROBES and best == 90e3  # bounded retakes; a persistently slow one stays
