"""The collector's TMAM probe order against perf 5.x, 6.5-6.12 and >= 6.13 outputs.

A scripted DUT answers each perf command with a recorded output of that perf generation
(tests/fixtures/telemetry/README.md): the collector must pick the first method that works,
and record IPC and the four TMAM values a reader takes from that output.
"""

import pytest
from test_telemetry_collector import PERF_OK, ScriptedTelemetryNode, fixture

from dpgate.telemetry.collector import TelemetryCollector

MISSING_GROUP = fixture("perf-stat-vm-metric-group-missing.csv")  # real: "Cannot find metric or group"


def dut(metric_group, topdown):
    """perf answers ``-M TopdownL1`` and ``--topdown`` with the given (code, stderr); pcm is absent."""

    def script(argv):
        if argv[0] == "perf":
            if "-M" in argv:
                return (0, "", metric_group)
            if "--topdown" in argv:
                return topdown
            return 0, "", PERF_OK
        if argv[0] == "which":
            return 1, "", ""
        if argv[0].startswith("pcm"):
            return 1, "", "Error: unsupported processor"
        raise AssertionError(f"unexpected command {argv}")

    return ScriptedTelemetryNode(script)


VERSIONS = {
    # perf 5.x on Skylake server: no TopdownL1 metric group; --topdown prints per-core topdown events
    "5.x": (
        MISSING_GROUP,
        (0, "", fixture("perf-stat-skx-topdown-legacy-per-core.csv")),
        "perf-topdown",
        None,
        (0.362, 0.028, 0.21, 0.40),
    ),
    # perf 6.5-6.12: metric group headers ',<run>,<pct>,,,,TopdownL1' and metrics under them
    "6.5-6.12": (
        fixture("perf-stat-6.5-spr-default.csv"),
        (234, "", "should not be tried"),
        "perf-metric-TopdownL1",
        37977214 / 52288305,
        (0.146, 0.027, 0.125, 0.701),
    ),
    # perf >= 6.13: the threshold column after each metric
    ">=6.13": (
        fixture("perf-stat-6.13-layout-metric-topdownl1.csv"),
        (234, "", "should not be tried"),
        "perf-metric-TopdownL1",
        2.5,
        (0.102, 0.076, 0.51, 0.311),
    ),
}


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_probe_order_per_perf_generation(version):
    group_out, topdown_out, method, ipc, tmam = VERSIONS[version]
    node = dut(group_out, topdown_out)
    c = TelemetryCollector([2, 3], node)
    assert c.plan().tmam_method == method
    argv = c.commands(2.0)["perf"]
    assert argv[:2] == ["env", "LC_ALL=C"]
    if method == "perf-topdown":
        assert argv[-5:-3] == ["--topdown", "--no-metric-only"]  # keep the cycles/instructions lines
        assert node.argv_of("perf", "-M")  # -M TopdownL1 was tried first
    else:
        assert not node.argv_of("perf", "--topdown")
    rec = c.measure(2.0, 2 * 29.8e6)
    v = rec.values
    if ipc is None:
        assert "not supported" in str(v["ipc"])  # the legacy fixture counts no cycles
    else:
        assert v["ipc"] == pytest.approx(ipc)
    got = (v["tmam_retiring"], v["tmam_bad_speculation"], v["tmam_frontend_bound"], v["tmam_backend_bound"])
    assert got == pytest.approx(tmam)
    assert rec.info["tmam_source"] == method


def test_hybrid_dut_says_which_core_pmu():
    node = dut(fixture("perf-stat-6.5-adl-hybrid-default.csv"), (234, "", "x"))

    def script(argv):
        if argv[0] == "perf" and argv[-1] == "2":  # the window: the hybrid output
            return 0, "", fixture("perf-stat-6.5-adl-hybrid-default.csv")
        return node.script(argv)

    c = TelemetryCollector([2], ScriptedTelemetryNode(script))
    rec = c.measure(2.0, 1e6)
    assert rec.values["ipc"] == pytest.approx(4688595 / 6766433)
    assert rec.info["ipc_pmu"] == "cpu_core" and rec.info["tmam_pmu"] == "cpu_atom"
    assert rec.values["tmam_retiring"] == pytest.approx(0.054)


def test_impossible_tmam_is_not_supported_with_the_reason():
    node = dut(fixture("perf-stat-6.x-adl-hybrid-atom-only.csv"), (234, "", "x"))
    rec = TelemetryCollector([2], node).measure(2.0, 1e6)
    assert "add up to 143.4 %" in rec.values["tmam_retiring"].reason
    assert rec.values["ipc"] == pytest.approx(508381 / 775564) and rec.info["ipc_pmu"] == "cpu_atom"
