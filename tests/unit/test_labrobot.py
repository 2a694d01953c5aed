"""LabTestbed end to end in Python, through FAKES at two boundaries (no lab here):

* ``RecordingDutNode``: a fake ``dpgate.exec.remote`` node that records every argv and answers
  from a table (lscpu of a 2-socket HT server, VPP's 'show version', perf stat CSV);
* ``CapacityTrexClient``: the ``FakeTrexClient`` of test_trex.py whose "SUT" forwards at
  most ``capacity_pps`` in aggregate.

What is real: core allocation, the SUT drivers' command generation, TrexGenerator's trial
logic, the MLRsearch per-commit search, CPP, the telemetry collector's parsing, the result
records and the JUnit written from them.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from helpers import ovs_vsctl_set
from test_lab_vpp import VPP_UNIT_START
from test_trex import FakeTrexClient, fake_api

from dpgate.exec.remote import Result
from dpgate.labrobot import LabTestbed, parse_ht
from dpgate.model.errors import ConfigError, DpgateError, SutError
from dpgate.outputs.junit import write_junit
from dpgate.outputs.results import ResultStore, load_records
from dpgate.robot import base as robotlib
from dpgate.traffic.trex.driver import TrexGenerator

TOPO = "topologies/lab-2node.example.yaml"

# 2 sockets x 28 cores, HT: CPUs 0-27 socket 0, 28-55 socket 1, siblings +56 (Xeon enumeration).
LSCPU = "# CPU,Core,Socket,Node\n" + "".join(
    f"{cpu},{cpu % 56},{(cpu % 56) // 28},{(cpu % 56) // 28}\n" for cpu in range(112)
)
# perf stat -x, -a -C ... CSV (stderr) built from the documented format (tests/fixtures/telemetry/README.md)
PERF_CSV = (
    "4000000000,,cycles,2000000000,100.00,,\n8000000000,,instructions,2000000000,100.00,2.00,insn per cycle\n"
)
PCM_UNSUPPORTED = open(
    os.path.join(os.path.dirname(__file__), "..", "fixtures", "telemetry", "pcm-pcie-vm-unsupported.txt")
).read()
TESTPMD_LOG = "EAL: RTE Version: 'DPDK 23.11.0'\nio packet forwarding - ports=2 - cores=1 - streams=2\n"
VPP_VERSION = "vpp v23.10-release built by root on dut1 at 2023-10-26T10:00:00\n"


class RecordingDutNode:
    """FAKE dpgate.exec.remote node: records argv lists (and stdin), answers by substring."""

    def __init__(self, answers=None):
        self.calls, self.inputs, self.closed = [], [], False
        self.answers = {
            "lscpu": (0, LSCPU, ""),
            "show version": (0, VPP_VERSION, ""),
            "perf stat": (0, "", PERF_CSV),
            "systemctl is-active": (0, "active\n", ""),
            "pcm-": (1, PCM_UNSUPPORTED, ""),
            "InvocationID": (0, "5f2d0c1e9a7b4c3d\n", ""),
            "dpdk_initialized": (
                0,
                "true\n",
                "",
            ),  # ovs-vsctl get Open_vSwitch . dpdk_initialized  # systemctl show -p InvocationID --value
            "journalctl -u dpgate-testpmd": (0, TESTPMD_LOG, ""),
            "journalctl -u dpgate-l3fwd": (
                0,
                "EAL: RTE Version: 'DPDK 23.11.0'\nL3FWD: entering main loop on lcore 2\n",
                "",
            ),
            **(answers or {}),
        }

    def run(self, argv, timeout=30.0, check=True, sudo=None, input=None):
        assert isinstance(argv, (list, tuple)), f"commands must be argv lists, got {argv!r}"
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        self.inputs.append(input)
        joined = " ".join(argv)
        code, out, err = next((v for k, v in self.answers.items() if k in joined), (0, "", ""))
        return Result(argv, code, out, err)

    def close(self):
        self.closed = True


class CapacityTrexClient(FakeTrexClient):
    """FAKE TRex client: forwards everything up to ``capacity_pps`` (aggregate), drops the rest."""

    def __init__(self, capacity_pps):
        super().__init__()
        self.capacity = capacity_pps

    def start(self, ports, mult, duration, force=False):
        super().start(ports, mult, duration, force)
        self.forward = min(1.0, self.capacity / (self.pps * len(ports)))


class FakeLab(LabTestbed):
    """LabTestbed with the two seams replaced by the fakes above."""

    def __init__(self, capacity_pps=10e6, node=None, **kw):
        super().__init__(TOPO, **kw)
        self.fake_node = node or RecordingDutNode()
        self.capacity = capacity_pps
        self.clients = []

    def _open_node(self):
        return self.fake_node

    def _make_generator(self, profile):
        client = CapacityTrexClient(self.capacity)
        self.clients.append(client)
        return TrexGenerator(
            self._topo(), profile, client=client, api=fake_api(), settle_s=0.0, rx_delay_ms=0
        )


def enter_lab_test(tmp_path, monkeypatch):
    """Pretend to run inside Robot test 'Lab.Vpp-Ip4.<name>' with output dir tmp_path; any
    local process start of a pcm tool fails the test (telemetry must count on the DUT)."""
    real_popen = subprocess.Popen

    def popen(argv, *a, **kw):
        assert not str(argv[0]).startswith("pcm"), f"pcm started on the controller: {argv}"
        return real_popen(argv, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", popen)
    name = {"test": "64B-4t2c-ethip4-ip4base-ndrpdr"}
    monkeypatch.setattr(robotlib, "_current_test", lambda: ("Lab.Vpp-Ip4", name["test"]))
    monkeypatch.setattr(robotlib, "_store", lambda: ResultStore(str(tmp_path)))
    # what DpgateListener.start_test writes before the test body runs
    ResultStore(str(tmp_path)).update(
        f"Lab.Vpp-Ip4.{name['test']}", suite="Lab.Vpp-Ip4", name=name["test"], status="RUNNING"
    )
    return name


@pytest.fixture
def in_test(tmp_path, monkeypatch):
    return enter_lab_test(tmp_path, monkeypatch)


def _no_shell(calls):
    for argv in calls:
        assert argv[0] not in ("sh", "bash", "dash") and "-c" not in argv[:2], argv
        assert "&&" not in argv and ";" not in argv and "|" not in argv, argv


def test_vpp_ip4_ht_two_cores_end_to_end(in_test, tmp_path):
    lab = FakeLab(capacity_pps=10e6)
    tag = lab.bring_up_lab_testbed("vpp-ip4", "64B", cores=2, ht="on")
    assert tag == "4T2C"
    node = lab.fake_node
    # cores: topology main_cpu 1, cpus [2..5] on NUMA 0; HT gives each core's sibling (+56)
    assert (lab.cores.main, lab.cores.workers) == (1, (2, 58, 3, 59))
    conf = node.inputs[node.calls.index(["tee", "/etc/vpp/dpgate-startup.conf"])]
    assert "main-core 1" in conf and "corelist-workers 2,58,3,59" in conf
    assert "dev 0000:18:00.0 { name eth0 num-rx-queues 2 }" in conf  # 4 workers over 2 ports
    assert VPP_UNIT_START in node.calls
    vppctl = [c[3:] for c in node.calls if c[:1] == ["vppctl"]]
    assert ["ip", "route", "add", "198.19.0.1/32", "count", "62500", "via", "20.20.20.2", "eth1"] in vppctl
    assert lab.sut_version() == "v23.10-release"

    res = lab.find_ndr_and_pdr("64B", profile="per-commit")
    # the fake forwards 10 Mpps: MLRsearch (width 0.5 %) brackets it from below
    assert 0.99 * 10e6 <= res.ndr_pps <= 10e6 and 0.99 * 10e6 <= res.pdr_pps <= 10.06e6
    assert res.cores == 2 and res.cpu_hz == 2.5e9 and res.freq_source == "declared"
    assert res.cpp_ndr == pytest.approx(2.5e9 * 2 / res.ndr_pps)
    assert res.generator_max_pps == pytest.approx(2 * 14_880_952) and res.limited_by is None
    # bidirectional streams on both TRex ports
    starts = [k for n, k in lab.clients[0].calls if n == "start"]
    assert starts and all(k["ports"] == [0, 1] for k in starts)
    # telemetry: perf stat on the DUT over the node, pinned to the allocated workers
    perf = [c for c in node.calls if c[:4] == ["env", "LC_ALL=C", "perf", "stat"] and "-C" in c]
    assert perf and perf[-1][perf[-1].index("-C") + 1] == "2,58,3,59"
    assert res.telemetry["ipc"] == pytest.approx(2.0)
    assert res.telemetry["ddio_miss_rate_itom"].startswith("not supported (")  # no pcm here: a reason
    assert any(c[0] == "pcm-pcie" for c in node.calls)  # probed on the DUT (never locally: see in_test)
    _no_shell(node.calls)

    store = ResultStore(str(tmp_path))
    rec = json.load(open(store.record_path("Lab.Vpp-Ip4.64B-4t2c-ethip4-ip4base-ndrpdr")))
    m = rec["metrics"]
    assert m["ndr_pps"] == round(res.ndr_pps, 1) and m["cores"] == 2 and m["core_tag"] == "4T2C"
    assert m["threads"] == 4 and m["cpp"] == round(res.cpp_ndr, 1) and m["ipc"] == pytest.approx(2.0)
    assert rec["sut_version"] == "v23.10-release" and rec["testbed"] == "lab-2n-skx"
    assert rec["dut_cores"] == {"tag": "4T2C", "main": 1, "workers": [2, 58, 3, 59], "numa": 0}
    trials = open(os.path.join(str(tmp_path), "dpgate", "trials.jsonl")).read().splitlines()
    assert len(trials) == res.trials
    store.update(
        "Lab.Vpp-Ip4.64B-4t2c-ethip4-ip4base-ndrpdr", status="PASS"
    )  # what the listener adds at test end
    junit = write_junit(load_records(str(tmp_path)), str(tmp_path / "junit.xml"))
    text = open(junit).read()
    assert "64B-4t2c-ethip4-ip4base-ndrpdr" in text and 'name="core_tag" value="4T2C"' in text

    lab.tear_down_lab_testbed()
    assert node.calls[-1] != ["systemctl", "stop", "dpgate-vpp"] or node.closed
    assert ["systemctl", "stop", "dpgate-vpp"] in node.calls and node.closed
    assert ("disconnect", {}) in lab.clients[0].calls and lab.sut is None


def test_same_core_config_keeps_the_sut_other_config_restarts_it(in_test):
    lab = FakeLab()
    lab.bring_up_lab_testbed("vpp-l2patch", "64B", cores=1, ht="off")
    node = lab.fake_node
    starts = lambda: sum(1 for c in node.calls if c[0] == "systemd-run")  # noqa: E731
    assert starts() == 1 and lab.cores.workers == (2,)
    assert lab.bring_up_lab_testbed("vpp-l2patch", "IMIX", cores=1, ht="off") == "1T1C"
    assert starts() == 1 and ["systemctl", "stop", "dpgate-vpp"] not in node.calls
    assert lab.bring_up_lab_testbed("vpp-l2patch", "64B", cores=1, ht="on") == "2T1C"
    assert starts() == 2 and ["systemctl", "stop", "dpgate-vpp"] in node.calls
    assert lab.cores.workers == (2, 58)
    vppctl = [c[3:] for c in node.calls if c[:1] == ["vppctl"]]
    assert ["test", "l2patch", "rx", "eth0", "tx", "eth1"] in vppctl


def test_generators_take_turns_on_the_trex_ports(in_test):
    lab = FakeLab(capacity_pps=1e6, telemetry=False)
    lab.bring_up_lab_testbed("testpmd-io", "64B", "IMIX", cores=1, ht="off")
    lab.find_ndr_and_pdr("64B", profile="rfc2544-binary")
    lab.find_ndr_and_pdr("IMIX", profile="rfc2544-binary")
    first, second = lab.clients
    names = [n for n, _ in first.calls]
    # the 64B session released the ports before the IMIX one connected
    assert "disconnect" in names and names.index("disconnect") > names.index("connect")
    assert [n for n, _ in second.calls][0] == "connect"


def test_testpmd_l3fwd_and_ovs_are_pinned_to_the_allocation(in_test):
    lab = FakeLab()
    lab.bring_up_lab_testbed("testpmd-io", "64B", cores=2, ht="off")
    tp = next(c for c in lab.fake_node.calls if c[0] == "systemd-run")
    assert tp[tp.index("dpdk-testpmd") + 1 :][:2] == ["-l", "1,2,3"] and "--nb-cores=2" in tp
    lab.bring_up_lab_testbed("l3fwd-ip4", "64B", cores=1, ht="on")
    l3 = [c for c in lab.fake_node.calls if c[0] == "systemd-run"][-1]
    assert "--config=(0,0,2),(1,0,58)" in l3 and "--eth-dest=0,3c:fd:fe:00:00:01" in l3
    rules = lab.fake_node.inputs[lab.fake_node.calls.index(["tee", "/tmp/dpgate-l3fwd.rules"])]
    assert rules == "R198.19.0.0/16 1\nR198.18.0.0/16 0\n"
    lab.bring_up_lab_testbed("ovsdpdk-xconnect", "64B", cores=4, ht="on")
    mask = hex(sum(1 << c for c in (2, 58, 3, 59, 4, 60, 5, 61)))
    assert ovs_vsctl_set(f"pmd-cpu-mask={mask}") in lab.fake_node.calls
    _no_shell(lab.fake_node.calls)
    lab.tear_down_lab_testbed()


def test_teardown_closes_ssh_even_when_stopping_fails(in_test):
    class FailingStop(RecordingDutNode):
        def run(self, argv, **kw):
            if argv[:2] == ["systemctl", "stop"]:
                raise DpgateError("connection reset")
            return super().run(argv, **kw)

    lab = FakeLab(node=FailingStop())
    lab.bring_up_lab_testbed("vpp-l2bd", "64B", cores=1, ht="off")
    lab.find_ndr_and_pdr("64B", profile="rfc2544-binary")
    with pytest.raises(DpgateError, match="teardown incomplete: stopping the SUT: connection reset"):
        lab.tear_down_lab_testbed()
    assert lab.fake_node.closed and ("disconnect", {}) in lab.clients[0].calls


def test_detected_frequency_is_read_on_the_dut(in_test, tmp_path):
    topo = tmp_path / "lab.yaml"
    text = (
        open(TOPO).read().replace("cpu_freq: {source: declared, hz: 2.5e9}", "cpu_freq: {source: detected}")
    )
    topo.write_text(text)
    lab = FakeLab(node=RecordingDutNode({"base_frequency": (0, "2300000\n", "")}), telemetry=False)
    lab.topology_path = str(topo)
    lab.bring_up_lab_testbed("vpp-l2patch", "64B", cores=1, ht="off")
    res = lab.find_ndr_and_pdr("64B", profile="rfc2544-binary")
    assert (res.cpu_hz, res.freq_source) == (2.3e9, "detected")
    assert ["cat", "/sys/devices/system/cpu/cpu2/cpufreq/base_frequency"] in lab.fake_node.calls


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda lab: lab.bring_up_lab_testbed("vpp-xyz", cores=1), "unknown lab NF 'vpp-xyz'"),
        (lambda lab: lab.bring_up_lab_testbed("vpp-ip4", cores=0), "cores must be a whole number"),
        (lambda lab: lab.bring_up_lab_testbed("vpp-ip4", cores=1, ht="maybe"), "ht must be on or off"),
        (
            lambda lab: lab.bring_up_lab_testbed("vpp-ip4", cores=5, ht="on"),
            "5 worker cores requested on NUMA node 0",
        ),
        (lambda lab: lab.find_ndr_and_pdr("64B"), "lab testbed is not up"),
        (lambda lab: lab.run_on_dut(), "Run On DUT needs a command"),
    ],
)
def test_bad_keyword_input_is_one_clear_error(call, words):
    lab = FakeLab()
    with pytest.raises(ConfigError, match=words):
        call(lab)
    assert not any(c[0] == "systemd-run" for c in lab.fake_node.calls)


def test_embedded_topology_is_refused():
    lab = LabTestbed("topologies/embedded.yaml")
    with pytest.raises(ConfigError, match="LabTestbed needs a lab topology"):
        lab.allocate_dut_cores(1)


def test_parse_ht_words():
    assert [parse_ht(v) for v in ("on", "ON", "true", "yes", "1", True)] == [True] * 6
    assert [parse_ht(v) for v in ("off", "no", "false", "0", False)] == [False] * 5


def test_a_sut_that_died_fails_the_search_with_its_log_and_is_restarted_next(in_test):
    class Dying(RecordingDutNode):
        dead = False

        def run(self, argv, **kw):
            if argv[:2] == ["systemctl", "is-active"] and self.dead:
                return Result(list(argv), 3, "failed\n", "")
            if argv[:1] == ["journalctl"] and self.dead:
                return Result(list(argv), 0, "vpp[1]: received signal SIGSEGV\n", "")
            return super().run(argv, **kw)

    lab = FakeLab(node=Dying(), telemetry=False)
    lab.bring_up_lab_testbed("vpp-l2patch", "64B", cores=1, ht="off")
    lab.fake_node.dead = True
    with pytest.raises(
        SutError,
        match=r"SUT vpp-l2patch \(dpgate-vpp\) is not running any more \(failed\): "
        r"vpp\[1\]: received signal SIGSEGV",
    ):
        lab.find_ndr_and_pdr("64B", profile="rfc2544-binary")
    lab.fake_node.dead = False
    lab.bring_up_lab_testbed("vpp-l2patch", "64B", cores=1, ht="off")  # same config, but restarted
    assert sum(1 for c in lab.fake_node.calls if c[0] == "systemd-run") == 2
