"""Telemetry parsers on real recorded outputs (see tests/fixtures/telemetry/README.md)."""

import pytest
from helpers import fixture_reader

from dpgate.telemetry import NotSupported, TelemetryError, TelemetryRecord
from dpgate.telemetry.collector import TelemetryCollector
from dpgate.telemetry.pcm import (
    mem_bytes_per_packet,
    parse_memory,
    parse_pcie,
    pcie_per_packet,
    probe_pcm,
    reason_from_output,
)
from dpgate.telemetry.perf import derive, parse_perf_stat, perf_stat_argv, probe_perf
from dpgate.telemetry.tmam import (
    plot_tmam_bars,
    tmam_from_events,
    tmam_from_topdown_metrics,
)

fixture = fixture_reader("telemetry")


# -- perf -------------------------------------------------------------------------------
def test_perf_vm_output_marks_cycles_and_instructions_unsupported():
    s = parse_perf_stat(fixture("perf-stat-vm-not-supported.csv"))
    assert set(s.unsupported) == {"cycles", "instructions"}
    assert "not supported" in str(s.unsupported["cycles"])
    assert s.count("task-clock") == pytest.approx(0.51)  # as recorded
    assert isinstance(s.get("cycles"), NotSupported)


def test_perf_per_cpu_column_is_stripped():
    s = parse_perf_stat(fixture("perf-stat-vm-per-cpu.csv"))
    assert s.count("context-switches") == 371 and s.count("cpu-clock") == pytest.approx(202.36)


def test_perf_counts_ipc_ipp_cpp_and_interval_sum():
    text = (
        "# started on x\n\n"
        "1.000134525,2000000000,,cycles,1000,100.00,,\n"
        "1.000134525,5000000000,,instructions,1000,100.00,2.50,insn per cycle\n"
        "2.001253360,2000000000,,cycles,1000,100.00,,\n"
        "2.001253360,5000000000,,instructions,1000,100.00,2.50,insn per cycle\n"
    )
    s = parse_perf_stat(text)
    assert s.count("cycles") == 4e9 and s.count("instructions") == 1e10
    d = derive(s, packets=1e7)
    assert d["ipc"] == pytest.approx(2.5) and d["ipp"] == pytest.approx(1000) and d["cpp_measured"] == 400
    assert d["cpp_measured"] == pytest.approx(d["ipp"] / d["ipc"])  # CPP = IPP / IPC


def test_perf_unsupported_propagates_to_derived_metrics():
    d = derive(parse_perf_stat(fixture("perf-stat-vm-not-supported.csv")), packets=1000)
    assert all(isinstance(v, NotSupported) for v in d.values())


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "no event lines"),
        ("# only a comment\n", "no event lines"),
        ("12,,\n", "line 1"),
        ("abc,,cycles,1,100,,\n", "not a number"),
    ],
)
def test_perf_malformed_is_a_clear_error(text, words):
    with pytest.raises(TelemetryError, match=words):
        parse_perf_stat(text)


def test_perf_argv_is_a_list_on_the_sut_cpus():
    argv = perf_stat_argv([1, 3], ["cycles", "instructions"], 2)
    assert (
        argv[:4] == ["env", "LC_ALL=C", "perf", "stat"]
        and "-C" in argv
        and argv[argv.index("-C") + 1] == "1,3"
    )
    assert argv[-2:] == ["sleep", "2"]


class CannedNode:
    """Test double of a dpgate.exec.remote node: answers every command with one canned Result."""

    def __init__(self, returncode=0, stdout="", stderr="", raises=None):
        self.result = (returncode, stdout, stderr)
        self.raises = raises
        self.calls = []

    def run(self, argv, timeout=30.0, check=True):
        from dpgate.exec.remote import Result

        self.calls.append(list(argv))
        if self.raises is not None:
            raise self.raises
        return Result(list(argv), *self.result)


def test_probe_perf_on_this_host_or_a_missing_tool():
    from dpgate.model.errors import EnvironmentProblem

    missing = CannedNode(
        raises=EnvironmentProblem(
            "required tool 'perf' not found: install it with 'apt-get install linux-perf'"
        )
    )
    assert "install linux-perf" in probe_perf(missing).reason
    assert "install linux-perf" in probe_perf(CannedNode(127, "", "sh: 1: perf: not found")).reason
    assert "no CPU PMU" in probe_perf(CannedNode(0, "", fixture("perf-stat-vm-not-supported.csv"))).reason
    pmu = CannedNode(0, "", "100,,cycles,1,100.00,,\n90,,instructions,1,100.00,,\n")
    assert probe_perf(pmu, cpus=[2, 3]) is None
    assert pmu.calls[0][:9] == ["env", "LC_ALL=C", "perf", "stat", "-x,", "-a", "-C", "2,3", "-e"]
    assert (
        "install linux-perf"
        in probe_perf(CannedNode(127, "", "env: 'perf': No such file or directory")).reason
    )


# -- pcm-pcie ---------------------------------------------------------------------------
def test_pcie_seed_figure_24_analysis():
    """Seed 000, Figure 24: DPDK l3fwd, 64 B at 29.8 Mpps."""
    s = parse_pcie(fixture("pcm-pcie-seed000-fig24-l3fwd.txt"))
    assert s.events == ("PCIeRdCur", "RFO", "CRd", "DRd", "ItoM", "PRd", "WiL")
    assert s.sockets == ["0", "1"]
    # ItoM and PCIeRdCur: 100 % LLC hit
    assert s.total("ItoM") == 33e6 and s.miss_rate("ItoM") == 0.0 and s.hit("ItoM") == 33e6
    assert s.miss_rate("PCIeRdCur") == 0.0 and s.total("PCIeRdCur") == 45e6
    assert s.miss_rate("RFO") == 0.0 and s.total("RFO") == 8587e3
    # CRd aggregates over both sockets; DRd has misses on both
    assert s.total("CRd") == 449e3 + 79e3 and s.miss("DRd") == 3276 + 5532
    pp = pcie_per_packet(s, 29.8e6)
    # WiL: tail pointers every 32nd packet, Rx and Tx: about 2 per 32 packets
    assert pp["wil_per_packet"] == pytest.approx(2 / 32, rel=0.05)
    # 64 B packets + Rx/Tx descriptor reads (1/4 each) = 1.5 cache lines per packet read
    assert pp["pcie_rd_bytes_per_packet"] == pytest.approx(1.5 * 64, rel=0.02)
    assert pp["ddio_miss_rate_itom"] == 0.0


def test_pcie_csv_kind_glued_to_the_last_value():
    """pcm-pcie -csv -e prints (Total)/(Miss)/(Hit) right after the last number (pcm-pcie.h)."""
    a = parse_pcie(
        "Skt,PCIRdCur,ItoM,WiL\n0,1000,2000,50(Total)\n0,100,500,50(Miss)\n0,900,1500,0(Hit)\n"
        "1,0,1000,0(Total)\n1,0,0,0(Miss)\n1,0,1000,0(Hit)\n"
    )
    assert a.total("PCIeRdCur") == 1000 and a.total("ItoM") == 3000
    assert a.miss_rate("ItoM") == pytest.approx(500 / 3000) and a.hit("ItoM") == 2500


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("hello\n", "no 'Skt' header"),
        (" Skt | PCIeRdCur |  ItoM \n", "header but no socket rows"),
        (" Skt | PCIeRdCur |  ItoM \n 0   45 M   (Total)\n", "line 2: 1 values for 2 columns"),
        ("Skt,ItoM,WiL\n0,abc,1(Total)\n", "'abc' is not a count"),
        ("Skt,ItoM,RFO\n0,1\n", "line 2: 1 values for 2 columns .*truncated"),
    ],
)
def test_pcie_malformed_is_a_clear_error(text, words):
    with pytest.raises(TelemetryError, match=words):
        parse_pcie(text)


def test_pcie_unknown_event_lists_the_known_ones():
    s = parse_pcie(fixture("pcm-pcie-seed000-fig24-l3fwd.txt"))
    with pytest.raises(TelemetryError, match="no event 'ItoMCacheNear'.*PCIeRdCur"):
        s.total("ItoMCacheNear")


def test_pcm_unsupported_reason_from_this_vm():
    r = reason_from_output(fixture("pcm-pcie-vm-unsupported.txt"))
    assert isinstance(r, NotSupported) and "unsupported processor" in r.reason
    r2 = reason_from_output(fixture("pcm-memory-vm-unsupported.txt"))
    assert "unsupported processor" in r2.reason

    assert "install pcm" in probe_pcm(CannedNode(raises=FileNotFoundError("pcm-pcie"))).reason
    assert (
        "unsupported processor" in probe_pcm(CannedNode(1, "", fixture("pcm-pcie-vm-csv-stderr.txt"))).reason
    )


def test_pcm_memory_bytes_per_packet():
    text = (
        "|-- NODE 0 Mem Read (MB/s) :  1200.00 --||-- NODE 1 Mem Read (MB/s) :   300.00 --|\n"
        "|-- NODE 0 Mem Write(MB/s) :   800.00 --||-- NODE 1 Mem Write(MB/s) :   100.00 --|\n"
    )
    m = parse_memory(text)
    assert m.read_mbps == {"0": 1200.0, "1": 300.0} and m.write_mbps["0"] == 800.0
    assert mem_bytes_per_packet(m, 10e6) == pytest.approx(240.0)
    with pytest.raises(TelemetryError, match="no 'NODE n Mem Read"):
        parse_memory(fixture("pcm-memory-vm-unsupported.txt"))


# -- TMAM -------------------------------------------------------------------------------
def test_tmam_level1_sums_to_100_percent():
    ev = {
        "CPU_CLK_UNHALTED.THREAD_ANY": 1e9,
        "UOPS_RETIRED.RETIRE_SLOTS": 1.6e9,
        "UOPS_ISSUED.ANY": 1.9e9,
        "INT_MISC.RECOVERY_CYCLES": 2e7,
        "IDQ_UOPS_NOT_DELIVERED.CORE": 4e8,
    }
    t = tmam_from_events(ev)
    assert t.retiring == pytest.approx(0.4) and t.frontend_bound == pytest.approx(0.1)
    assert t.bad_speculation == pytest.approx((1.9e9 - 1.6e9 + 8e7) / 4e9)
    assert t.total == pytest.approx(1.0) and 0 < t.backend_bound < 1
    t5 = tmam_from_events(ev, slots_per_cycle=5)
    assert t5.retiring == pytest.approx(0.32) and t5.total == pytest.approx(1.0)


def test_tmam_missing_event_and_topdown_metrics():
    with pytest.raises(TelemetryError, match="IDQ_UOPS_NOT_DELIVERED.CORE"):
        tmam_from_events(
            {
                "CPU_CLK_UNHALTED.THREAD": 1,
                "UOPS_RETIRED.RETIRE_SLOTS": 1,
                "UOPS_ISSUED.ANY": 1,
                "INT_MISC.RECOVERY_CYCLES": 0,
            }
        )
    t = tmam_from_topdown_metrics(
        {"retiring": 41.2, "bad speculation": 3.1, "frontend bound": 15.6, "backend bound": 40.1}
    )
    assert t.retiring == pytest.approx(0.412) and t.total == pytest.approx(1.0)


def test_tmam_plot_writes_png(tmp_path):
    t = tmam_from_topdown_metrics(
        {"retiring": 40, "bad speculation": 5, "frontend bound": 15, "backend bound": 40}
    )
    path = plot_tmam_bars({"64B-1c-a": t, "64B-1c-b": t}, str(tmp_path / "tmam.png"))
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


# -- records and the collector ----------------------------------------------------------------
def test_unsupported_record_metrics_carry_the_reason():
    rec = TelemetryRecord.unsupported(
        NotSupported("perf: no PMU"), NotSupported("pcm: unsupported processor")
    )
    m = rec.to_metrics()
    assert m["ipc"] == "not supported (perf: no PMU)"
    assert m["ddio_miss_rate_itom"] == "not supported (pcm: unsupported processor)"
    assert set(m) >= {"ipp", "cpp_measured", "tmam_retiring", "mem_bytes_per_packet"}


def test_collector_on_this_host_reports_reasons_never_numbers():
    c = TelemetryCollector([1])
    perf, pcm = c.probe()
    rec = c.measure(0.1, packets=1000)
    m = rec.to_metrics()
    if perf is not None:  # this VM class: no PMU
        assert m["ipc"].startswith("not supported (")
    else:
        assert isinstance(m["ipc"], float)
    if pcm is not None:
        assert m["ddio_miss_rate_itom"].startswith("not supported (")
