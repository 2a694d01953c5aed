"""LabTestbed's latency trials and DUT facts, through the fakes of test_labrobot.py (a recording
DUT node, a capacity-limited TRex client): latency at fractions of PDR with telemetry at PDR,
the record saying why there is no latency, and the DUT's CPU model read on the DUT."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from test_labrobot import CapacityTrexClient, FakeLab, RecordingDutNode, enter_lab_test
from test_trex import fake_api

from dpgate.outputs.junit import write_junit
from dpgate.outputs.results import ResultStore, load_records
from dpgate.traffic.trex.driver import TrexGenerator


@pytest.fixture
def in_test(tmp_path, monkeypatch):
    return enter_lab_test(tmp_path, monkeypatch)


class LatencyCapacityClient(CapacityTrexClient):
    """FAKE TRex client: capacity-limited forwarding plus TRex-shaped latency stats per pg_id."""

    def get_stats(self):
        from test_trex_latency import latency_stats

        out = super().get_stats()
        out["latency"] = latency_stats()
        return out


class LatencyLab(FakeLab):
    def _make_generator(self, profile):
        client = LatencyCapacityClient(self.capacity)
        self.clients.append(client)
        return TrexGenerator(
            self._topo(),
            profile,
            client=client,
            api=fake_api(),
            settle_s=0.0,
            rx_delay_ms=0,
            latency_pps=self.latency_pps,
        )


def test_latency_trials_at_fractions_of_pdr_and_telemetry_at_pdr(in_test, tmp_path):
    lab = LatencyLab(capacity_pps=10e6, latency_pps=1000)
    lab.bring_up_lab_testbed("vpp-ip4", "64B", cores=2, ht="on")
    res = lab.find_ndr_and_pdr("64B", profile="per-commit")
    rec = json.load(
        open(ResultStore(str(tmp_path)).record_path("Lab.Vpp-Ip4.64B-4t2c-ethip4-ip4base-ndrpdr"))
    )
    assert sorted(rec["latency"]) == ["10% PDR", "50% PDR", "90% PDR"]
    assert rec["latency"]["90% PDR"]["load_pps"] == pytest.approx(0.9 * res.pdr_pps, rel=1e-6)
    assert rec["latency"]["10% PDR"]["directions"]["1->0"]["p99_us"] == 8  # hdrh decoded per direction
    assert "5 s trials at 90/50/10 % of PDR" in rec["latency_note"]
    # JUnit: the generator names itself, latency as latency_<load>_<direction>_<stat>_us properties
    assert rec["metrics"]["tg"] == "TRex v3.08" and rec["metrics"]["latency_10pdr_1to0_p99_us"] == 8
    junit = write_junit(load_records(str(tmp_path)), str(tmp_path / "junit.xml"))
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["tg"] == "TRex v3.08" and props["latency_90pdr_0to1_min_us"] == "5"
    assert {"latency_50pdr_1to0_avg_us", "latency_10pdr_0to1_p999_us", "latency_90pdr_1to0_max_us"} <= set(
        props
    )
    assert rec["profile"] == "per-commit" and len(rec["trials"]) == res.trials
    # telemetry: a 2 s counting window inside the trial, and PDR captured too (or noted = NDR)
    perf = [c for c in lab.fake_node.calls if c[:4] == ["env", "LC_ALL=C", "perf", "stat"] and "-C" in c]
    assert perf[-1][-2:] == ["sleep", "2"]
    assert "ipc_pdr" in res.telemetry or res.telemetry["telemetry_pdr"].startswith("PDR = NDR")
    lab.tear_down_lab_testbed()


def test_without_latency_streams_the_record_says_why(in_test, tmp_path):
    lab = FakeLab(capacity_pps=10e6, telemetry=False)
    lab.bring_up_lab_testbed("vpp-ip4", "64B", cores=1, ht="off")
    lab.find_ndr_and_pdr("64B", profile="per-commit")
    rec = json.load(
        open(ResultStore(str(tmp_path)).record_path("Lab.Vpp-Ip4.64B-4t2c-ethip4-ip4base-ndrpdr"))
    )
    assert rec["latency"] is None and "latency_pps" in rec["latency_note"]
    lab.tear_down_lab_testbed()


SKX_CPUINFO = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8180 CPU @ 2.50GHz\n\nprocessor\t: 1\n"
)


@pytest.mark.parametrize(
    "cpuinfo, model",
    [
        ((0, SKX_CPUINFO, ""), True),
        ((0, "processor\t: 0\nBogoMIPS\t: 50.00\n", ""), False),  # an ARM kernel names no model
        ((1, "", "cat: /proc/cpuinfo: Permission denied\n"), False),
    ],
)
def test_the_record_names_the_dut_cpu_model_read_on_the_dut(in_test, tmp_path, cpuinfo, model):
    lab = FakeLab(node=RecordingDutNode({"/proc/cpuinfo": cpuinfo}), capacity_pps=10e6, telemetry=False)
    lab.bring_up_lab_testbed("vpp-ip4", "64B", cores=1, ht="off")
    lab.find_ndr_and_pdr("64B", profile="per-commit")
    rec = json.load(
        open(ResultStore(str(tmp_path)).record_path("Lab.Vpp-Ip4.64B-4t2c-ethip4-ip4base-ndrpdr"))
    )
    assert ["cat", "/proc/cpuinfo"] in lab.fake_node.calls
    if model:
        assert rec["metrics"]["host_cpu_model"] == "Intel(R) Xeon(R) Platinum 8180 CPU @ 2.50GHz"
        junit = write_junit(load_records(str(tmp_path)), str(tmp_path / "junit.xml"))
        props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
        assert props["host_cpu_model"] == rec["metrics"]["host_cpu_model"]
        assert rec["metrics"]["host_cpu_id"] == props["host_cpu_id"] == "GenuineIntel family 6 model 85"
    else:
        assert "host_cpu_model" not in rec["metrics"] and "host_cpu_id" not in rec["metrics"]
    lab.tear_down_lab_testbed()
