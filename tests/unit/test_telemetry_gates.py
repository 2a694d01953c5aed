"""The telemetry gate keywords of issue #5 on collector records (skip/fail policy, DDIO per
event), and the embedded testbed's capture at NDR and PDR."""

import pytest
from helpers import ndrpdr_result
from robot.api import Failure, SkipExecution
from test_telemetry_collector import ScriptedTelemetryNode, fixture, pmu_host, vm_host

from dpgate.model.trial import TrialResult
from dpgate.robotlib import EmbeddedTestbed, Gates
from dpgate.telemetry import report_rows
from dpgate.telemetry.collector import TelemetryCollector
from dpgate.telemetry.rows import tmam_bars


def result(telemetry):
    return ndrpdr_result(
        29.8e6,
        30e6,
        telemetry=telemetry,
        max_pps=None,
        hz=2.3e9,
        nf="l3fwd",
        ndr_upper_pps=None,
        pdr_upper_pps=None,
        trials=10,
        search_s=1.0,
    )


def skx_metrics():
    """What the collector records on a Cascade Lake DUT forwarding 29.8 Mpps (fixtures)."""
    return TelemetryCollector([2, 3], pmu_host("metric")).measure(2.0, 2 * 29.8e6).to_metrics()


def icx_metrics():
    def script(argv):
        if argv[0] == "pcm-pcie" and "-B" in argv:
            return 0, fixture("pcm-pcie-icx-csv-e-B.csv"), ""
        return pmu_host("metric").script(argv)

    return TelemetryCollector([2], ScriptedTelemetryNode(script)).measure(1.0, 10e6).to_metrics()


KEYWORDS = [  # (keyword method, args that pass on skx_metrics, args that fail, key)
    ("ipc_should_be_at_least", (2.0,), (3.0,), "ipc"),
    ("instructions_per_packet_should_be_at_most", (200,), (100,), "ipp"),
    ("ddio_miss_rate_should_be_at_most", ("ItoM", "5%"), None, "ddio_miss_rate_itom"),
    ("memory_bytes_per_packet_should_be_at_most", (100,), (50,), "mem_bytes_per_packet"),
    ("tmam_retiring_should_be_at_least", ("40%",), ("45%",), "tmam_retiring"),
]


@pytest.mark.parametrize("name, ok, bad, key", KEYWORDS)
def test_each_gate_keyword_passes_and_fails_on_measured_values(name, ok, bad, key):
    kw = getattr(Gates(), name)
    assert hasattr(kw, "robot_name"), f"{name} is not a Robot keyword"
    r = result(skx_metrics())
    kw(r, *ok)
    if bad:
        with pytest.raises(Failure, match=r"(floor|ceiling) .*\(.*%\)"):
            kw(r, *bad)


@pytest.mark.parametrize("name, ok, bad, key", KEYWORDS)
def test_each_gate_keyword_skips_or_fails_by_policy_with_the_reason(name, ok, bad, key):
    vm = TelemetryCollector([1], vm_host()).measure(2.0, 1000).to_metrics()
    r = result(vm)
    reason = vm[key][len("not supported (") : -1]
    with pytest.raises(SkipExecution) as skip:
        getattr(Gates(telemetry_policy="skip"), name)(r, *ok)
    assert reason in str(skip.value) and "telemetry_policy=skip" in str(skip.value)
    with pytest.raises(Failure) as fail:
        getattr(Gates(telemetry_policy="fail"), name)(r, *ok)
    assert reason in str(fail.value) and "telemetry_policy=fail" in str(fail.value)


def test_ddio_gate_for_other_events_and_generations():
    skx = result(skx_metrics())
    g = Gates(telemetry_policy="fail")
    for event in ("ItoM", "RFO", "PCIeRdCur", "PCIRdCur"):
        g.ddio_miss_rate_should_be_at_most(skx, event, "5%")
    with pytest.raises(Failure, match=r"DDIO DRd miss rate 0.0086% > ceiling 0.0%"):
        g.ddio_miss_rate_should_be_at_most(skx, "DRd", "0%")  # 8.6e-05: a few misses
    with pytest.raises(Failure, match="this CPU generation has no ItoMCacheNear event"):
        g.ddio_miss_rate_should_be_at_most(skx, "ItoMCacheNear", "5%")
    icx = result(icx_metrics())
    with pytest.raises(Failure, match=r"DDIO ItoM miss rate 4.0% > ceiling 3.0% \(\+33.3 %\)"):
        g.ddio_miss_rate_should_be_at_most(icx, "ItoM", "3%")
    g.ddio_miss_rate_should_be_at_most(icx, "ItoMCacheNear", "5%")
    with pytest.raises(Failure, match="no RFO event"):
        g.ddio_miss_rate_should_be_at_most(icx, "RFO", "5%")
    with pytest.raises(Failure, match="counts no CRd event; it has itom, itomcachenear, pcierdcur"):
        g.ddio_miss_rate_should_be_at_most(icx, "CRd", "5%")


class FakeGen:
    """Generator double: remembers the trials asked for, forwards 99 % of them."""

    def __init__(self):
        self.trials = []

    def measure(self, load, duration):
        self.trials.append((load, duration))
        sent = int(load * duration)
        return TrialResult.from_counts(load, duration, sent, int(sent * 0.99))


def _testbed(node):
    tb = EmbeddedTestbed()
    tb._collector = TelemetryCollector([2, 3], node)
    tb.TELEMETRY_SETTLE_S = 0.0
    return tb


def test_capture_at_ndr_and_pdr_with_pdr_keys_suffixed():
    tb, gen = _testbed(pmu_host("metric")), FakeGen()
    ndr = tb._telemetry_at(gen, 29.8e6)
    pdr = tb._telemetry_at(gen, 30e6, suffix="_pdr")
    assert gen.trials == [(29.8e6, 5.0), (30e6, 5.0)]
    # packets in the 2 s window from the trial's received rate (99 % of 29.8 Mpps)
    assert ndr["cpp_measured"] == pytest.approx(4000123456 / (0.99 * 29.8e6 * 2), rel=1e-6)
    assert set(pdr) == {k + "_pdr" for k in ndr}
    assert pdr["ipc_pdr"] == ndr["ipc"] and pdr["tmam_source_pdr"] == "perf-metric-TopdownL1"


def test_vm_capture_runs_no_trial_and_keeps_junit_short():
    tb, gen = _testbed(vm_host()), FakeGen()
    ndr = tb._telemetry_at(gen, 1e5)
    pdr = tb._telemetry_at(gen, 1.1e5, suffix="_pdr")
    assert gen.trials == []
    assert ndr["ipc"].startswith("not supported (perf: cycles <not supported>")
    assert pdr == {"telemetry_pdr": "not supported (same reasons as the NDR values)"}


def test_report_rows_for_the_lead():
    skx, vm = skx_metrics(), TelemetryCollector([1], vm_host()).measure(2, 1).to_metrics()
    recs = [{"name": "64B-2c-l3fwd", "metrics": dict(skx, cpp=77.2)}, {"name": "64B-1c-linux", "metrics": vm}]
    rows = report_rows(recs)
    assert rows[0].ipc == pytest.approx(2.5, rel=1e-4) and rows[0].cpp == 77.2
    assert rows[0].tmam.retiring == pytest.approx(0.412) and rows[0].as_tuple()[0] == "64B-2c-l3fwd"
    assert rows[1].ipc is None and rows[1].tmam is None
    assert rows[1].reasons["ipc"].startswith("not supported (perf")
    assert list(tmam_bars(rows)) == ["64B-2c-l3fwd"]
    pdr = report_rows([{"name": "x", "metrics": {"ipc_pdr": 1.5, "cpp_pdr": 90.0}}], suffix="_pdr")
    assert pdr[0].ipc == 1.5 and pdr[0].cpp == 90.0
    vm_pdr = report_rows(
        [{"name": "y", "metrics": {"telemetry_pdr": "not supported (same reasons as the NDR values)"}}],
        suffix="_pdr",
    )[0]
    assert vm_pdr.ipc is None and vm_pdr.reasons["tmam_retiring"].startswith("not supported (same reasons")
