"""TelemetryCollector driven through a scripted node that answers with fixture texts: the
argv it builds (cpus, events, windows), the TMAM method it picks, and the derived values."""

import re
import shlex
import threading

import pytest
from helpers import fixture_reader

from dpgate.config.topology import Ssh
from dpgate.exec.remote import Result, SshNode
from dpgate.telemetry import NotSupported, TelemetryError
from dpgate.telemetry.collector import PERF_EVENTS, TelemetryCollector
from dpgate.telemetry.perf import TMAM_RAW_EVENTS

fixture = fixture_reader("telemetry", newline="")


PERF_OK = "4000,,cycles,1000,100.00,,\n10000,,instructions,1000,100.00,2.50,insn per cycle\n"
PCIE_PROBE_OK = "Skt,PCIRdCur,RFO,CRd,DRd,ItoM,PRd,WiL\n0,1,0,0,0,0,0,0\n1,0,0,0,0,0,0,0\n"
MEM_PROBE_OK = fixture("pcm-memory-skx-csv.csv")


def without_c_locale(argv):
    """argv without the ``env LC_ALL=C`` perf runs under (the real DUT sees it; scripts match the tool)."""
    argv = list(argv)
    if argv[:1] == ["env"]:
        assert argv[1] == "LC_ALL=C", argv
        return argv[2:]
    return argv


class ScriptedTelemetryNode:
    """Fake dpgate.exec.remote node for unit tests: ``script(argv)`` -> (code, stdout, stderr).

    Records every argv (thread-safe: the collector runs tools concurrently) and the
    largest number of commands that were running at the same time.
    """

    def __init__(self, script, name="dut1"):
        self.script, self.name = script, name
        self.calls = []
        self._lock = threading.Lock()
        self._running = 0
        self.max_parallel = 0
        self._barrier = None

    def run(self, argv, timeout=30.0, check=True):
        with self._lock:
            self.calls.append((list(argv), timeout))
            self._running += 1
            self.max_parallel = max(self.max_parallel, self._running)
        try:
            in_window = argv[-2:] == ["sleep", "1"] or "-B" in argv or "-nc" in argv
            if self._barrier is not None and in_window:
                self._barrier.wait(timeout=5)  # BrokenBarrierError unless all tools run at once
            code, out, err = self.script(without_c_locale(argv))
        finally:
            with self._lock:
                self._running -= 1
        return Result(list(argv), code, out, err)

    def argv_of(self, tool, *must):
        return [a for a, _ in self.calls if without_c_locale(a)[0] == tool and all(m in a for m in must)]


def pmu_host(topdown="metric", toplev=False):
    """A Cascade Lake-like DUT: perf with a PMU, pcm working; TMAM by the given method."""

    def script(argv):
        tool = argv[0]
        if tool == "perf":
            if "-M" in argv:
                return (
                    (0, "", fixture("perf-stat-icx-metric-topdownl1.csv"))
                    if topdown == "metric"
                    else (0, "", fixture("perf-stat-vm-metric-group-missing.csv"))
                )
            if "--topdown" in argv:
                return (
                    (0, "", fixture("perf-stat-skx-topdown-legacy-per-core.csv"))
                    if topdown == "legacy"
                    else (234, "", fixture("perf-stat-vm-topdown-unsupported.txt"))
                )
            if "UOPS_ISSUED.ANY" in ",".join(argv):
                return (
                    (0, "", fixture("perf-stat-skx-raw-tmam.csv"))
                    if topdown == "raw"
                    else (129, "", fixture("perf-stat-vm-raw-tmam-events.txt"))
                )
            return (
                0,
                "",
                fixture("perf-stat-skx-raw-tmam.csv") if "sleep" in argv and argv[-1] != "0.01" else PERF_OK,
            )
        if tool == "which":
            return (0, "/opt/pmu-tools/toplev\n", "") if toplev else (1, "", "")
        if tool == "cat":
            cpu = re.search(r"/cpu([0-9]+)/topology", argv[1]).group(1)
            return 0, f"0\n{cpu}\n", ""
        if tool.endswith("toplev"):
            return 0, "", fixture("toplev-clx-l1-per-core.csv")
        if tool == "pcm-pcie":
            return 0, fixture("pcm-pcie-skx-csv-e-B.csv") if "-B" in argv else PCIE_PROBE_OK, ""
        if tool == "pcm-memory":
            return 0, MEM_PROBE_OK, ""
        raise AssertionError(f"unexpected command {argv}")

    return ScriptedTelemetryNode(script)


def vm_host():
    def script(argv):
        if argv[0] == "perf":
            return 0, "", fixture("perf-stat-vm-not-supported.csv")
        if argv[0] == "pcm-pcie":
            return 1, fixture("pcm-pcie-vm-csv-stdout.txt"), fixture("pcm-pcie-vm-csv-stderr.txt")
        if argv[0] == "pcm-memory":
            return 1, "", fixture("pcm-memory-vm-csv-unsupported.txt")
        raise AssertionError(f"a VM must not run {argv}")

    return ScriptedTelemetryNode(script)


def test_metric_group_host_builds_the_argv_and_derives_everything():
    node = pmu_host("metric")
    c = TelemetryCollector([2, 3], node)
    assert c.probe() == (None, None)
    assert c.plan().tmam_method == "perf-metric-TopdownL1"
    cmds = c.commands(2.0)
    assert cmds["perf"] == [
        "env",
        "LC_ALL=C",
        "perf",
        "stat",
        "-x,",
        "-a",
        "-C",
        "2,3",
        "-e",
        ",".join(PERF_EVENTS),
        "-M",
        "TopdownL1",
        "--",
        "sleep",
        "2",
    ]
    assert cmds["pcm-pcie"] == ["pcm-pcie", "-csv", "-e", "-B", "-i=1", "2"]
    assert cmds["pcm-memory"] == ["pcm-memory", "-csv", "-nc", "-i=1", "2"]
    packets = 2 * 29.8e6
    rec = c.measure(2.0, packets)
    v = rec.values
    assert v["ipc"] == pytest.approx(2.5, rel=1e-4)
    assert v["cpp_measured"] == pytest.approx(4000123456 / packets)
    assert v["ipp"] == pytest.approx(10000308640 / packets)
    assert (v["tmam_retiring"], v["tmam_backend_bound"]) == pytest.approx((0.412, 0.401))
    assert sum(
        v[k] for k in ("tmam_retiring", "tmam_bad_speculation", "tmam_frontend_bound", "tmam_backend_bound")
    ) == pytest.approx(1.0, abs=0.002)
    # pcm-pcie counted over the 2 s window: per-second rates / 29.8 Mpps
    assert v["ddio_miss_rate_itom"] == 0.0 and v["ddio_miss_rate_drd"] == pytest.approx(
        (6552 + 11064) / (204e6 + 132e3)
    )
    assert v["pcie_rd_bytes_per_packet"] == pytest.approx(1.5 * 64)
    assert v["wil_per_packet"] == pytest.approx(2 / 32)
    assert isinstance(v["ddio_miss_rate_itomcachenear"], NotSupported)  # not on Skylake-SP
    # pcm-memory (1505 + 895) MB/s at 29.8 Mpps
    assert v["mem_bytes_per_packet"] == pytest.approx(2400e6 / 29.8e6)
    m = rec.to_metrics()
    assert m["tmam_source"] == "perf-metric-TopdownL1" and m["telemetry_window_s"] == "2"


def test_tools_of_one_window_run_at_the_same_time():
    node = pmu_host("metric")
    c = TelemetryCollector([2], node)
    c.probe()
    node._barrier = threading.Barrier(3)  # perf, pcm-pcie and pcm-memory must all be running
    c.measure(1.0, 1e6)
    assert node.max_parallel == 3
    window = [(a, t) for a, t in node.calls if a[-1] == "1" or a[-2:] == ["sleep", "1"]]
    assert {without_c_locale(a)[0] for a, _ in window} == {"perf", "pcm-pcie", "pcm-memory"}
    assert all(t == 31.0 for _, t in window)  # each waits for the window + 30 s, no longer


def test_legacy_topdown_then_raw_events_then_toplev_order():
    legacy = TelemetryCollector([2, 3], pmu_host("legacy"))
    assert legacy.plan().tmam_method == "perf-topdown"
    assert "--topdown" in legacy.commands(2)["perf"]
    v = legacy.measure(2, 1e6).values
    assert v["tmam_frontend_bound"] == pytest.approx(0.21)

    raw = TelemetryCollector([2, 3], pmu_host("raw"))
    assert raw.plan().tmam_method == "perf-raw-events"
    argv = raw.commands(2)["perf"]
    assert argv[argv.index("-e") + 1] == ",".join(PERF_EVENTS + TMAM_RAW_EVENTS) and "-M" not in argv
    v = raw.measure(2, 1e6).values
    assert (v["tmam_retiring"], v["tmam_bad_speculation"], v["tmam_frontend_bound"]) == pytest.approx(
        (0.4, 0.095, 0.1)
    )

    node = pmu_host("none", toplev=True)
    tl = TelemetryCollector([2, 3], node)
    assert tl.plan().tmam_method == "toplev"
    assert tl.commands(2)["toplev"] == [
        "/opt/pmu-tools/toplev",
        "-l1",
        "-v",
        "--no-desc",
        "-x,",
        "--core",
        "S0-C2,S0-C3",
        "sleep",
        "2",
    ]
    rec = tl.measure(2, 1e6)
    assert rec.values["tmam_retiring"] == pytest.approx(0.4963)
    assert rec.info["tmam_source"] == "toplev"
    assert node.argv_of("cat")[0] == [
        "cat",
        "/sys/devices/system/cpu/cpu2/topology/physical_package_id",
        "/sys/devices/system/cpu/cpu2/topology/core_id",
    ]


def test_no_tmam_method_says_what_was_tried():
    c = TelemetryCollector([2], pmu_host("none"))
    reason = c.plan().tmam
    assert (
        "Cannot find metric or group" in reason.reason and "System does not support topdown" in reason.reason
    )
    assert "toplev: not installed" in reason.reason and "event syntax error" in reason.reason
    v = c.measure(1, 1e6).values
    assert v["tmam_retiring"] is reason and isinstance(v["ipc"], float)


def test_vm_host_runs_no_capture_and_reports_each_tools_reason():
    node = vm_host()
    c = TelemetryCollector([1], node)
    perf, pcm = c.probe()
    assert "no CPU PMU" in perf.reason and "unsupported processor" in pcm.reason
    assert not c.supported and c.commands(2) == {}
    n = len(node.calls)
    m = c.measure(2, 1000).to_metrics()
    assert len(node.calls) == n  # nothing ran for the window
    assert m["ipc"].startswith("not supported (perf: cycles") and "tmam_source" not in m
    assert m["mem_bytes_per_packet"].startswith("not supported (pcm: unsupported processor")
    assert "telemetry_window_s" not in m


def test_pcm_failing_during_the_window_marks_only_its_values():
    def script(argv):
        if argv[0] == "pcm-pcie" and "-B" in argv:
            return (
                1,
                "",
                "Access to Intel(r) Performance Counter Monitor has denied (no MSR or PCI CFG space access).",
            )
        if argv[0] == "pcm-memory" and "-nc" in argv:
            return 0, fixture("pcm-memory-skx-csv.csv")[:120], ""  # cut short
        return pmu_host("metric").script(argv)

    c = TelemetryCollector([2], ScriptedTelemetryNode(script))
    v = c.measure(2, 2e6).values
    assert "no MSR or PCI CFG space access" in v["ddio_miss_rate_itom"].reason
    assert "pcm-memory output not understood" in v["mem_bytes_per_packet"].reason
    assert isinstance(v["ipc"], float)


def test_process_mode_counts_perf_on_the_pid():
    c = TelemetryCollector([], pmu_host("metric"), pid=4242, pcm=False)
    argv = c.commands(1)["perf"]
    assert argv[5:7] == ["-p", "4242"] and "-a" not in argv
    assert "pcm disabled" in c.plan().pcie.reason
    with pytest.raises(TelemetryError, match="cpus"):
        TelemetryCollector([])


class _Chan:
    def __init__(self, code):
        self.code = code

    def recv_exit_status(self):
        return self.code


class _Stream:
    def __init__(self, data=b"", code=0):
        self.data, self.channel = data, _Chan(code)

    def read(self):
        return self.data


class ScriptedSshClient:
    """Fake paramiko client for a DUT: answers the shell-quoted command via a script."""

    def __init__(self, script):
        self.script, self.commands = script, []
        self._lock = threading.Lock()

    def connect(self, host, **kw):
        pass

    def exec_command(self, cmd, timeout=None):
        with self._lock:
            self.commands.append(cmd)
        code, out, err = self.script(shlex.split(cmd))
        return _Stream(), _Stream(out.encode(), code), _Stream(err.encode())

    def close(self):
        pass


def test_collector_over_ssh_on_a_lab_dut():
    inner = pmu_host("metric")
    fake = ScriptedSshClient(
        lambda argv: inner.script(without_c_locale(argv[2:] if argv[:2] == ["sudo", "-n"] else argv))
    )
    node = SshNode(Ssh(host="192.0.2.10", user="lab", sudo=True), client_factory=lambda: fake, env={})
    c = TelemetryCollector([4, 5], node)
    rec = c.measure(2.0, 2 * 29.8e6)
    assert rec.values["ipc"] == pytest.approx(2.5, rel=1e-4) and rec.values[
        "pcie_rd_bytes_per_packet"
    ] == pytest.approx(96.0)
    sent = [shlex.split(cmd) for cmd in fake.commands]
    assert ["sudo", "-n", "pcm-pcie", "-csv", "-e", "-B", "-i=1", "2"] in sent
    perf = next(a for a in sent if "perf" in a and "TopdownL1" in a and a[-1] == "2")
    assert perf[:10] == ["sudo", "-n", "env", "LC_ALL=C", "perf", "stat", "-x,", "-a", "-C", "4,5"]
