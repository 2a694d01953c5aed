"""Parsers on the output layouts of pcm-pcie, pcm-memory, perf stat and toplev across CPU
generations (fixtures and their origins: tests/fixtures/telemetry/README.md)."""

import pytest
from helpers import fixture_reader

from dpgate.telemetry import NotSupported, TelemetryError
from dpgate.telemetry.pcm import parse_memory, parse_pcie, pcie_per_packet, reason_from_output
from dpgate.telemetry.perf import derive, parse_perf_stat
from dpgate.telemetry.tmam import (
    parse_toplev_csv,
    tmam_checked,
    tmam_from_events,
    tmam_from_perf_metrics,
    tmam_from_topdown_metrics,
)

fixture = fixture_reader("telemetry", newline="")


# -- pcm-pcie: both formats, several generations --------------------------------------------
def test_seed_figure_24_analysis_reproduced():
    """Seed 000 section 7.2 reads Figure 24 (l3fwd, 64 B at 29.8 Mpps) like this."""
    s = parse_pcie(fixture("pcm-pcie-seed000-fig24-l3fwd.txt"))
    pps = 29.8e6
    # all traffic on socket 0 (socket 1 has only core CRd/DRd noise)
    assert s.total("ItoM") == 33e6 and s.rows[("1", "total")]["itom"] == 0
    # ItoM: 100 % LLC hit; 29.8 MT/s packet writes, the other 3.2 MT/s are Rx descriptor
    # write-backs of 16 B: 3.2 x 64/16 = 12.8 M descriptors/s
    assert s.miss_rate("ItoM") == 0.0 and s.hit("ItoM") == s.total("ItoM")
    rx_desc_wb = s.total("ItoM") - pps
    assert rx_desc_wb == pytest.approx(3.2e6) and rx_desc_wb * 64 / 16 == pytest.approx(12.8e6)
    # RFO: partial writes, 100 % hit; Tx write-back every 16th packet = 1.86 MT/s, rest Rx (6.7)
    assert s.miss_rate("RFO") == 0.0
    assert s.total("RFO") - pps / 16 == pytest.approx(6.7e6, rel=0.01)
    # PCIeRdCur: packets + Rx and Tx descriptor reads coalesced 4 per line = 44.7 MT/s ~ 45 M
    assert s.total("PCIeRdCur") == pytest.approx(pps * (1 + 1 / 4 + 1 / 4), rel=0.01)
    assert s.miss_rate("PCIeRdCur") == 0.0
    # WiL: Rx and Tx tail pointer writes every 32nd packet = 1.86 M/s ~ 1891 K
    assert s.total("WiL") == pytest.approx(2 * pps / 32, rel=0.02)
    pp = pcie_per_packet(s, pps)
    assert pp["ddio_miss_rate_itom"] == 0.0 and pp["ddio_miss_rate_pcierdcur"] == 0.0
    assert pp["pcie_rd_bytes_per_packet"] == pytest.approx(1.5 * 64, rel=0.02)


def test_skylake_table_and_csv_of_the_same_window_agree():
    """PurleyPlatform (Skylake/Cascade Lake), -e -B, 2 s window: table (K/M/G rounding) vs CSV."""
    t = parse_pcie(fixture("pcm-pcie-skx-table-e-B.txt"), interval_s=2)
    c = parse_pcie(fixture("pcm-pcie-skx-csv-e-B.csv"), interval_s=2)
    assert t.events == c.events == ("PCIRdCur", "RFO", "CRd", "DRd", "ItoM", "PRd", "WiL")
    assert c.total("PCIeRdCur") == pytest.approx(29.8e6 * 1.5)  # exact counts / 2 s
    assert t.total("PCIeRdCur") == pytest.approx(c.total("PCIeRdCur"), rel=0.01)  # "89 M" per 2 s
    assert c.miss("DRd") == (6552 + 11064) / 2 and c.sockets == ["0", "1"]
    # -B byte columns are kept apart from events: PurleyPlatform reads = (RdCur+RFO+CRd+DRd) x 64
    rd = c.bandwidth[("0", "total")]["PCIe Rd (B)"]
    assert rd == pytest.approx(
        (
            c.rows[("0", "total")]["pcierdcur"]
            + c.rows[("0", "total")]["rfo"]
            + c.rows[("0", "total")]["crd"]
            + c.rows[("0", "total")]["drd"]
        )
        * 64
    )
    assert not c.has("PCIe Rd (B)")


def test_icelake_event_set_has_no_rfo_and_itomcachenear_has_a_split():
    for name in ("pcm-pcie-icx-table-e.txt", "pcm-pcie-icx-csv-e-B.csv"):
        s = parse_pcie(fixture(name))
        assert s.events == ("PCIRdCur", "ItoM", "ItoMCacheNear", "UCRdF", "WiL")
        assert s.miss_rate("ItoM") == pytest.approx(0.04) and s.miss_rate("ItoMCacheNear") == pytest.approx(
            0.04
        )
        assert s.hit("WiL") == 0 and s.miss("WiL") == s.total("WiL")  # MMIO: pcm counts misses only
        pp = pcie_per_packet(s, 10e6)
        assert (
            isinstance(pp["ddio_miss_rate_rfo"], NotSupported)
            and "no RFO event" in pp["ddio_miss_rate_rfo"].reason
        )
        assert pp["wil_per_packet"] == pytest.approx(625_000 / 10e6)
        # writes = ItoM + ItoMCacheNear lines (WhitleyPlatform::getWriteBw)
        assert pp["pcie_wr_bytes_per_packet"] == pytest.approx((10e6 + 2.5e6) * 64 / 10e6)
        with pytest.raises(TelemetryError, match="no event 'RFO'.*ItoMCacheNear"):
            s.total("RFO")


def test_sapphire_rapids_two_samples_are_averaged():
    s = parse_pcie(fixture("pcm-pcie-spr-csv-e-2samples.csv"))
    assert s.samples == 2 and "WCiLF" in s.events
    assert s.total("ItoM") == 21e6 and s.miss("ItoM") == 400_000
    assert s.miss_rate("ItoM") == pytest.approx(0.4 / 21)


def test_csv_without_e_has_totals_only_and_says_so():
    s = parse_pcie(fixture("pcm-pcie-icx-csv-totals.csv"))
    assert s.total("ItoM") == 10e6 and not s.has_split
    with pytest.raises(TelemetryError, match="run pcm-pcie with -e"):
        s.miss("ItoM")
    pp = pcie_per_packet(s, 1e6)
    assert "run pcm-pcie with -e" in pp["ddio_miss_rate_itom"].reason
    assert pp["pcie_rd_bytes_per_packet"] == pytest.approx(15.002e6 * 64 / 1e6)


@pytest.mark.parametrize(
    "name, cut, words",
    [
        ("pcm-pcie-skx-csv-e-B.csv", lambda t: t[: t.index("0,89400000")], "header but no socket rows"),
        ("pcm-pcie-skx-csv-e-B.csv", lambda t: t[: t.rindex(",0(Hit)")], "truncated"),
        (
            "pcm-pcie-skx-table-e-B.txt",
            lambda t: t[: t.index("6552")],
            "line 3: 3 values for 9 columns.*truncated",
        ),
        ("pcm-pcie-vm-csv-stdout.txt", lambda t: t, "no 'Skt' header"),
    ],
)
def test_truncated_pcie_outputs_are_clear_errors(name, cut, words):
    with pytest.raises(TelemetryError, match=words):
        parse_pcie(cut(fixture(name)))


def test_pcm_reasons_from_this_vm_csv_runs():
    r = reason_from_output(fixture("pcm-pcie-vm-csv-stdout.txt") + fixture("pcm-pcie-vm-csv-stderr.txt"), 1)
    assert "unsupported processor" in r.reason
    assert (
        "unsupported processor" in reason_from_output(fixture("pcm-memory-vm-csv-unsupported.txt"), 1).reason
    )
    assert reason_from_output("Skt,ItoM\n0,1\n", 0) is None
    assert "exited with code 3: boom" in reason_from_output("boom\n", 3).reason


# -- pcm-memory ------------------------------------------------------------------------------
def test_pcm_memory_csv_two_header_rows_per_socket_columns():
    m = parse_memory(fixture("pcm-memory-skx-csv.csv"))
    assert m.samples == 2
    assert m.read_mbps == {"0": pytest.approx(1200.0), "1": pytest.approx(305.0)}
    assert m.write_mbps == {"0": pytest.approx(800.0), "1": pytest.approx(95.0)}
    assert m.total_bytes_per_s == pytest.approx((1505 + 895) * 1e6)


def test_pcm_memory_table_nodes_and_hbm_layout():
    m = parse_memory(fixture("pcm-memory-skx-table.txt"))
    assert m.read_mbps == {"0": 1200.5, "1": 300.0} and m.write_mbps == {"0": 800.25, "1": 100.0}
    # HBM parts (display_bandwidth printHBM): one socket per block
    hbm = (
        "|--                              Processor socket 0                            --|\n"
        "|-- DRAM Mem Read  (MB/s):    2000.00 --||-- HBM Read (MB/s):         10.00 --|\n"
        "|-- DRAM Mem Write (MB/s):    1000.00 --||-- HBM Write(MB/s):          5.00 --|\n"
    )
    h = parse_memory(hbm)
    assert h.read_mbps == {"0": 2000.0} and h.write_mbps == {"0": 1000.0}


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("Date,Time,Mem Read (MB/s),Mem Write (MB/s)\n2024-1-1,1:2:3,1,2\n", "first header row"),
        (",,SKT0,SKT0\nDate,Time,Mem Read (MB/s),Mem Write (MB/s)\n", "no data rows"),
        (",,SKT0,SKT0\nDate,Time,Mem Read (MB/s),Mem Write (MB/s)\n2024-1-1,1:2:3,12.5\n", "truncated"),
        (
            ",,SKT0,SKT0\nDate,Time,Mem Read (MB/s),Mem Write (MB/s)\n2024-1-1,1:2:3,x,1\n",
            "'x' is not a number",
        ),
        ("|-- NODE 0 Mem Read (MB/s) :  1200.00 --|\n", "Read without Write .* 0"),
    ],
)
def test_pcm_memory_malformed(text, words):
    with pytest.raises(TelemetryError, match=words):
        parse_memory(text)


def test_pcm_memory_truncated_csv_fixture():
    text = fixture("pcm-memory-skx-csv.csv")
    with pytest.raises(TelemetryError, match="line 3: .* cells.*truncated"):
        parse_memory(text[: text.index("1000,") + 5])


# -- perf stat: events, metrics, topdown -------------------------------------------------------
def test_perf_metric_group_topdownl1_csv():
    s = parse_perf_stat(fixture("perf-stat-icx-metric-topdownl1.csv"))
    assert s.metrics["%  tma_bad_speculation"] == 3.1  # from a continuation line
    t = tmam_from_perf_metrics(s.metrics)
    assert (t.retiring, t.bad_speculation, t.frontend_bound, t.backend_bound) == pytest.approx(
        (0.412, 0.031, 0.156, 0.401)
    )
    assert t.total == pytest.approx(1.0, abs=0.002)
    d = derive(s, packets=20e6)
    assert d["ipc"] == pytest.approx(2.5, rel=1e-4) and d["cache_misses_per_packet"] == pytest.approx(0.065)
    assert d["llc_load_misses_per_packet"] == pytest.approx(0.013)


def test_perf_legacy_topdown_per_core_is_averaged_over_cores():
    s = parse_perf_stat(fixture("perf-stat-skx-topdown-legacy-per-core.csv"))
    assert s.count("topdown-total-slots") == 16e9  # "S0-C2,1," prefix stripped
    t = tmam_from_perf_metrics(s.metrics)  # "frontend bound" etc.: percent
    assert t.frontend_bound == pytest.approx(0.21) and t.retiring == pytest.approx(0.362)
    assert t.total == pytest.approx(1.0)


def test_perf_raw_events_seed_equations():
    s = parse_perf_stat(fixture("perf-stat-skx-raw-tmam.csv"))
    t = tmam_from_events(s.counts)
    # slots = 4 x 2e9; retiring 3.2/8; bad (3.8-3.2+4x0.04)/8; frontend 0.8/8
    assert (t.retiring, t.bad_speculation, t.frontend_bound) == pytest.approx((0.4, 0.095, 0.1))
    assert t.total == pytest.approx(1.0)


def test_perf_vm_outputs_of_topdown_attempts():
    # -M TopdownL1 on this VM: perf says it cannot find the group, then counts its defaults
    s = parse_perf_stat(fixture("perf-stat-vm-metric-group-missing.csv"))
    assert "cycles" in s.unsupported and not any("tma_" in k for k in s.metrics)
    with pytest.raises(TelemetryError, match="lacks TMAM level-1"):
        tmam_from_perf_metrics(s.metrics)
    with pytest.raises(TelemetryError, match="no event lines"):
        parse_perf_stat(fixture("perf-stat-vm-topdown-unsupported.txt"))
    d = derive(parse_perf_stat(fixture("perf-stat-vm-cache-events.csv")), packets=1000)
    assert "cache-misses <not supported>" in d["cache_misses_per_packet"].reason


def test_perf_aggregation_prefixes_and_interval_continuations():
    text = (
        "#           time             counts unit events\n"
        "1.001002003,S0-D0-C2,2,4000,,cycles,1000,100.00,,\n"
        "1.001002003,S0-D0-C2,2,,,,,,40.0,%  tma_backend_bound\n"
        "1.001002003,S0-D0-C3,2,6000,,cycles,1000,100.00,,\n"
        "2.002003004,CPU2,<not counted>,,instructions,0,0.00,,\n"
    )
    s = parse_perf_stat(text)
    assert s.count("cycles") == 10000 and "instructions" in s.unsupported
    assert s.metrics["%  tma_backend_bound"] == 40.0


def test_tmam_sum_check_and_percent_or_ratio():
    with pytest.raises(TelemetryError, match="add up to 90.0 %"):
        tmam_from_topdown_metrics(
            {"Retiring": 40, "Bad_Speculation": 5, "Frontend_Bound": 15, "Backend_Bound": 30}
        )
    r = tmam_from_topdown_metrics(
        {"Retiring": 0.4, "Bad_Speculation": 0.05, "Frontend_Bound": 0.15, "Backend_Bound": 0.4}
    )  # old metric JSON: ratios
    assert r.retiring == 0.4 and r.total == pytest.approx(1.0)
    small = tmam_checked(
        {"retiring": 0.5, "bad_speculation": 0.3, "frontend_bound": 0.2, "backend_bound": 99.0},
        "x",
        percent=True,
    )  # 0.5 % is not a ratio of 0.5
    assert small.retiring == pytest.approx(0.005)


# -- toplev ---------------------------------------------------------------------------------------
def test_toplev_csv_per_core_rows_averaged():
    t = parse_toplev_csv(fixture("toplev-clx-l1-per-core.csv"))
    assert t.retiring == pytest.approx((50.32 + 48.94) / 200) and t.bad_speculation == pytest.approx(0.00875)
    assert t.total == pytest.approx(1.0)


def test_toplev_interval_summary_rows_win():
    text = (
        "Timestamp,CPUs,Area,Value,Unit,Description,Sample,Stddev,Multiplex,Bottleneck,Idle\n"
        "1.000000000,S0-C2,Frontend_Bound,50.00,% Slots,,,0.00,100.0,,\n"
        "1.000000000,S0-C2,Bad_Speculation,10.00,% Slots,,,0.00,100.0,,\n"
        "1.000000000,S0-C2,Backend_Bound,20.00,% Slots,,,0.00,100.0,,\n"
        "1.000000000,S0-C2,Retiring,20.00,% Slots,,,0.00,100.0,,\n"
        'SUMMARY,S0-C2,Frontend_Bound,10.00,% Slots,"a, quoted, description",,0.00,100.0,,\n'
        "SUMMARY,S0-C2,Bad_Speculation,5.00,% Slots,,,0.00,100.0,,\n"
        "SUMMARY,S0-C2,Backend_Bound,45.00,% Slots,,,0.00,100.0,<==,\n"
        "SUMMARY,S0-C2,Retiring,40.00,% Slots,,,0.00,100.0,,\n"
    )
    t = parse_toplev_csv(text)
    assert t.frontend_bound == pytest.approx(0.10) and t.backend_bound == pytest.approx(0.45)


@pytest.mark.parametrize(
    "cut, words",
    [
        (lambda t: "", "empty"),
        (lambda t: t.split("\n", 1)[1], "no header row with 'Area'"),
        (lambda t: t[: t.index("S0-C2,Backend_Bound")], "lacks TMAM level-1 retiring, backend_bound"),
        (
            lambda t: t[: t.index("S0-C2,Bad_Speculation") + len("S0-C2,Bad_Spec")],
            "shorter than its header .truncated",
        ),
        (lambda t: t.replace("15.63", "n/a"), "'n/a' is not a number"),
    ],
)
def test_toplev_malformed(cut, words):
    with pytest.raises(TelemetryError, match=words):
        parse_toplev_csv(cut(fixture("toplev-clx-l1-per-core.csv")))
