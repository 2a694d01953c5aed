"""parse_perf_stat on every perf stat output format, from recorded public samples.

Each fixture's origin is in tests/fixtures/telemetry/README.md (perf's own documentation,
perf patches on the kernel mailing list, a GitHub issue, this VM). The expected numbers are
the ones a careful reader takes from the printed text: IPC = instructions / cycles as
counted, the four TMAM level-1 values as printed (percent / 100).
"""

import pytest
from helpers import fixture_reader

from dpgate.telemetry import TelemetryError
from dpgate.telemetry.perf import derive, parse_perf_stat
from dpgate.telemetry.perf_records import Count, Metric

fixture = fixture_reader("telemetry")


def l1(t):
    return (t.retiring, t.bad_speculation, t.frontend_bound, t.backend_bound)


# -- CSV ---------------------------------------------------------------------------------
def test_csv_613_threshold_column_interval_and_separator_inside_an_event_name():
    s = parse_perf_stat(fixture("perf-stat-6.13-spr-topdownl1-threshold-I.csv"))
    assert s.format == "csv" and len(s.intervals) == 1 and s.intervals[0].time == pytest.approx(1.000103288)
    assert l1(s.tmam) == pytest.approx((0.102, 0.076, 0.510, 0.311))  # 10.2, 7.6, 51.0, 31.1 %
    thr = {r.name: r.threshold for r in s.records if isinstance(r, Metric)}
    assert thr["%  tma_backend_bound"] == "bad" and thr["%  tma_retiring"] == "good"
    assert s.count("cpu/UOPS_DECODED.DEC0,cmask=1/") == 26472844  # the ',' inside the event name
    assert s.count("TOPDOWN.SLOTS") == 4677067630 and s.ipc is None  # no cycles/instructions counted


def test_csv_65_default_mode_group_headers():
    s = parse_perf_stat(fixture("perf-stat-6.5-spr-default.csv"))
    assert s.ipc == pytest.approx(37977214 / 52288305) == pytest.approx(0.7263, abs=1e-4)  # perf: 0.73
    assert l1(s.tmam) == pytest.approx((0.146, 0.027, 0.125, 0.701))
    groups = {r.name: r.group for r in s.records if isinstance(r, Metric)}
    assert groups["%  tma_retiring"] == "TopdownL1" and groups["%  tma_memory_bound"] == "TopdownL2"
    assert s.metrics["%  tma_memory_bound"] == 50.5 and s.count("cpu-clock") == 225851.20


def test_csv_65_hybrid_core_pmu_and_nan_metrics():
    s = parse_perf_stat(fixture("perf-stat-6.5-adl-hybrid-default.csv"))
    assert (s.ipc_pmu, s.ipc) == ("cpu_core", pytest.approx(4688595 / 6766433))  # 0.693, perf: 0.69
    assert s.running["cpu_atom/cycles/"] == 54.0 and s.running["cpu_core/cycles/"] == 100.0
    t, pmu = s.tmam_with_pmu()  # cpu_core TopdownL1 is empty (NaN): the atom group is complete
    assert pmu == "cpu_atom" and l1(t) == pytest.approx((0.054, 0.138, 0.413, 0.386))
    nan = [r for r in s.records if isinstance(r, Metric) and r.value is None]
    assert {r.name for r in nan} == {"%  tma_backend_bound", "%  tma_frontend_bound", "%  tma_retiring"}


def test_csv_hybrid_atom_counted_core_not_and_an_impossible_tmam():
    s = parse_perf_stat(fixture("perf-stat-6.x-adl-hybrid-atom-only.csv"))
    assert (s.ipc_pmu, s.ipc) == ("cpu_atom", pytest.approx(508381 / 775564))  # 0.656, perf: 0.66
    assert "<not counted>" in s.unsupported["cpu_core/cycles/u"].reason
    with pytest.raises(TelemetryError, match="add up to 143.4 %"):  # 87.9+24.0+31.5+0.0
        _ = s.tmam
    d = derive(s, packets=1000)
    assert d["ipc"] == pytest.approx(0.6555, abs=1e-4) and d["cpp_measured"] == pytest.approx(775.564)


def test_csv_4x_per_cpu_semicolon_separator_and_padding():
    s = parse_perf_stat(fixture("perf-stat-4.x-per-cpu-semicolon.csv"))
    assert s.format == "csv"
    assert s.count("LLC-load-misses") == 80288 + 56689 + 91863 + 106638 + 134118 + 79837  # CPU2..7 summed
    assert (
        s.count("dTLB-loads")
        == sum((12105259, 12264999, 7955745, 6283968, 13540296, 8901754, 15059405, 12781753))
        and s.running["L1-icache-load-misses"] == 30.69
    )
    assert parse_perf_stat(fixture("perf-stat-4.x-per-cpu-semicolon.csv"), sep=";").counts == s.counts


def test_csv_real_vm_interval_not_counted_and_semicolon():
    s = parse_perf_stat(fixture("perf-stat-vm-interval.csv"))  # 6.1 pads the timestamp with spaces
    assert [round(i.time, 3) for i in s.intervals] == [0.050, 0.101, 0.124]
    assert s.intervals[0].count("task-clock") == 0.68 and "task-clock" in s.intervals[1].unsupported
    assert s.count("task-clock") == pytest.approx(0.75) and s.count("context-switches") == 1
    assert s.partial == ("task-clock", "context-switches")  # a lower bound: one interval did not count
    v = parse_perf_stat(fixture("perf-stat-vm-semicolon.txt"))
    assert v.count("task-clock") == 0.59 and v.metrics["CPUs utilized"] == 0.011


def test_metric_only_with_nothing_counted_is_an_error():
    for name in ("perf-stat-vm-metric-only.csv", "perf-stat-vm-metric-only-human.txt"):
        with pytest.raises(TelemetryError, match="no event lines"):
            parse_perf_stat(fixture(name))


def test_csv_metric_only_topdown_per_core():
    text = (
        "core,cpus,retiring,bad speculation,frontend bound,backend bound,\n"  # --topdown -x, --per-core
        "S0-C2,1,37.0,3.0,20.0,40.0,\n"
        "S0-C3,1,35.4,2.6,22.0,40.0,\n"
    )
    s = parse_perf_stat(text)
    assert s.format == "csv metric-only" and l1(s.tmam) == pytest.approx((0.362, 0.028, 0.21, 0.40))
    assert {r.aggr for r in s.records} == {"S0-C2", "S0-C3"}
    iv = parse_perf_stat(
        "time,%  tma_retiring,%  tma_bad_speculation,%  tma_frontend_bound,%  tma_backend_bound,\n"
        "1.001141351,11.5,6.7,46.9,34.9,\n2.006141972,13.4,8.1,50.4,28.1,\n"
    )  # 6.3 doc values
    assert [round(i.tmam.retiring, 3) for i in iv.intervals] == [0.115, 0.134]
    assert iv.tmam.backend_bound == pytest.approx((34.9 + 28.1) / 200)
    with pytest.raises(TelemetryError, match="line 2: 3 metric-only values"):
        parse_perf_stat("time,%  tma_retiring,%  tma_backend_bound,\n1.000000001,11.5,34.9,46.9,\n")


# -- human -------------------------------------------------------------------------------
def test_human_65_group_headers_and_grouped_counts():
    s = parse_perf_stat(fixture("perf-stat-6.5-spr-default.txt"))
    assert s.format == "human" and s.count("cpu-clock") == 226054.13 and s.count("cycles") == 45940682
    assert s.ipc == pytest.approx(36676047 / 45940682)  # 0.798, perf: 0.80
    assert l1(s.tmam) == pytest.approx((0.152, 0.031, 0.130, 0.687))
    assert s.metrics["of all branches"] == 0.88  # '0.88% of all branches'


def test_human_65_hybrid_running_percentages_and_nan():
    s = parse_perf_stat(fixture("perf-stat-6.5-adl-hybrid-default.txt"))
    assert (s.ipc_pmu, s.ipc) == ("cpu_core", pytest.approx(4477162 / 6313960))  # 0.709, perf: 0.71
    assert s.running["cpu_atom/cycles/"] == 54.18
    t, pmu = s.tmam_with_pmu()
    assert pmu == "cpu_atom" and l1(t) == pytest.approx((0.054, 0.136, 0.411, 0.392))


def test_human_64_metrics_on_the_topdown_slots_event():
    s = parse_perf_stat(fixture("perf-stat-6.4-spr-topdown-events.txt"))
    assert s.ipc == pytest.approx(556325 / 540970)  # cycles:u / instructions:u: 1.028
    assert l1(s.tmam) == pytest.approx((0.172, 0.231, 0.414, 0.184))
    assert s.count("topdown-retiring:u") == 564859 and s.count("task-clock:u") == 0.54


def test_human_4x_interval_multiplexed_unit_after_the_name():
    s = parse_perf_stat(fixture("perf-stat-4.x-interval-multiplexed.txt"))
    assert len(s.intervals) == 1 and s.intervals[0].time == pytest.approx(123.100852112)
    assert s.count("cpu-clock") == 8008.478891
    assert next(r for r in s.records if isinstance(r, Count) and r.event == "cpu-clock").unit == "msec"
    assert s.running["cycles"] == 38.46 and s.running["LLC-loads"] == 30.77
    # as counted: 5,574,865,332 / 5,109,360,888 = 1.091; perf itself printed 0.53 on that line
    assert s.ipc == pytest.approx(1.0911, abs=1e-4) and s.metrics["insn per cycle"] == 0.53


def test_human_real_vm_outputs():
    s = parse_perf_stat(fixture("perf-stat-vm-human.txt"))
    assert set(s.unsupported) == {"cycles", "instructions"} and s.count("task-clock") == 0.63
    assert s.ipc is None and "cycles <not supported>" in s.why_no_ipc().reason
    i = parse_perf_stat(fixture("perf-stat-vm-interval-human.txt"))
    assert len(i.intervals) == 3 and i.intervals[2].count("task-clock") == 0.09


def test_human_metric_only_topdown_interval_63():
    s = parse_perf_stat(fixture("perf-stat-6.3-topdown-metric-only-I.txt"))
    assert s.format == "human metric-only" and len(s.intervals) == 6
    assert l1(s.intervals[0].tmam) == pytest.approx((0.115, 0.067, 0.469, 0.349))
    assert s.tmam.retiring == pytest.approx((11.5 + 13.4 + 12.9 + 12.5 + 11.8 + 14.0) / 600)


def test_human_metric_only_topdown_interval_5x_legacy_names():
    s = parse_perf_stat(fixture("perf-stat-5.x-icl-topdown-metric-only-I.txt"))
    assert len(s.intervals) == 8
    assert l1(s.intervals[0].tmam) == pytest.approx((0.23, 0.153, 0.296, 0.321))
    assert l1(s.intervals[7].tmam) == pytest.approx((0.047, 0.067, 0.475, 0.411))


def test_human_metric_only_header_wider_than_its_columns():
    text = (
        "\n Performance counter stats for 'system wide':\n\n"
        " %  tma_frontend_bound      %  tma_retiring %  tma_backend_bound %  tma_bad_speculation \n"
        "                  18.8                 28.8                 49.6                     2.8 \n\n"
        "       1.470718902 seconds time elapsed\n"
    )
    assert l1(parse_perf_stat(text).tmam) == pytest.approx((0.288, 0.028, 0.188, 0.496))


# -- refusals ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, words",
    [
        ('{"counter-value" : "1.0", "event" : "cycles"\n', "line 1: not valid JSON"),
        ('{"counter-value" : "lots", "event" : "cycles"}\n', "line 1: counter-value 'lots' is not a number"),
        ("0,51,msec,task-clock,505872,100.00,0,101,CPUs utilized\n", "line 1: a decimal comma.*LC_ALL=C"),
        ("1200,,cycles,1000,100.00,,\nGARBAGE 12 34\n", "line 2"),
        (
            "1200,,cycles,1000,100.00,,\n3000,,instructions,1000,100.00,2.5,insn per cycle,extra,more\n",
            "line 2",
        ),
        (
            "1.000000001,1200,,cycles,1000,100.00,,\n3000,,instructions,1000,100.00,,\n",
            "line 2: no -I timestamp",
        ),
        ("        2,000      cycles   junk junk  # 1.0 GHz\n", "line 1"),
    ],
)
def test_anything_else_is_one_error_naming_the_line(text, words):
    with pytest.raises(TelemetryError, match=words):
        parse_perf_stat(text)


def test_perf_messages_with_commas_are_not_data():
    text = (
        "Warning: kernel.perf_event_paranoid=2, trying to fall back to excluding kernel samples\n"
        "1200,,cycles,1000,100.00,,\n3000,,instructions,1000,100.00,2.50,insn per cycle\n"
    )
    s = parse_perf_stat(text)
    assert s.ipc == 2.5 and s.messages[0].startswith("Warning: kernel.perf_event_paranoid=2,")


def test_tmam_outside_0_100_or_not_summing_is_refused():
    base = (
        "1,,slots,1,100.00,{},%  tma_retiring\n,,,,,{},%  tma_bad_speculation\n"
        ",,,,,{},%  tma_frontend_bound\n,,,,,{},%  tma_backend_bound\n"
    )
    with pytest.raises(TelemetryError, match="outside 0..100 %"):
        _ = parse_perf_stat(base.format(150, 0, 0, 0)).tmam  # CSV drops the '-' of -50: 150 alone
    with pytest.raises(TelemetryError, match="add up to 90.0 %"):
        _ = parse_perf_stat(base.format(40, 5, 15, 30)).tmam
    assert parse_perf_stat(base.format(40, 5, 15, 40)).tmam.backend_bound == 0.4


# -- aggregation modes and -r, recorded on this VM (linux-perf 6.1, LC_ALL=C) ------------
def test_real_vm_aggregation_modes_and_repeat_noise():
    r = parse_perf_stat(fixture("perf-stat-vm-repeat-noise.csv"))  # -r 3: '7.24%' before the run time
    assert r.count("task-clock") == 0.88 and r.count("page-faults") == 59 and r.running["task-clock"] == 100.0
    assert r.metrics["CPUs utilized"] == 0.028
    sock = parse_perf_stat(fixture("perf-stat-vm-per-socket.csv"))  # 'S0,2,' id and CPU count
    assert sock.count("task-clock") == 108.71 and sock.records[0].aggr == "S0"
    core = parse_perf_stat(fixture("perf-stat-vm-per-core-human.txt"))
    assert core.count("task-clock") == pytest.approx(56.72 + 56.73)
    assert [r.aggr for r in core.records if isinstance(r, Count)] == ["S0-D0-C0", "S0-D0-C1"]
    iv = parse_perf_stat(fixture("perf-stat-vm-interval-per-socket-human.txt"))
    assert [i.count("task-clock") for i in iv.intervals] == [89.67, 60.36]
    th = parse_perf_stat(fixture("perf-stat-vm-per-thread.csv"))  # --per-thread: 'bash-10045,'
    assert th.records[0].aggr == "bash-10045" and "<not counted>" in th.unsupported["task-clock"].reason


def test_human_output_in_a_decimal_comma_locale_is_read_not_misread():
    # built from print_counter_value_std ("%'18.0f", "%'18.2f") and print_metric_std under de_DE
    text = (
        "         1.234.567      cycles                           #    0,638 GHz\n"
        "         2.469.134      instructions                     #    2,00  insn per cycle\n"
        "            226,13 msec task-clock                       #    0,006 CPUs utilized\n"
    )
    s = parse_perf_stat(text)
    assert s.count("cycles") == 1234567 and s.count("task-clock") == 226.13
    assert s.ipc == 2.0 and s.metrics["insn per cycle"] == 2.0 and s.metrics["CPUs utilized"] == 0.006


# -- JSON (-j) ---------------------------------------------------------------------------
def test_json_65_group_headers_nan_and_hybrid():
    s = parse_perf_stat(fixture("perf-stat-6.5-spr-default.json"))
    assert s.format == "json" and s.ipc == pytest.approx(38620409 / 48433482)  # perf: 0.797391
    assert l1(s.tmam) == pytest.approx((0.15251513, 0.02771783, 0.12026074, 0.69950631))
    h = parse_perf_stat(fixture("perf-stat-6.5-adl-hybrid-default.json"))
    assert (h.ipc_pmu, h.ipc) == ("cpu_core", pytest.approx(15489913 / 18685492))  # perf: 0.828981
    t, pmu = h.tmam_with_pmu()
    assert pmu == "cpu_atom" and l1(t) == pytest.approx((0.05374638, 0.13719821, 0.41016738, 0.39327764))


def test_json_real_vm_not_supported_and_interval_per_cpu():
    s = parse_perf_stat(fixture("perf-stat-vm-json.txt"))
    assert "cycles" in s.unsupported and s.count("task-clock") == pytest.approx(0.640982)
    i = parse_perf_stat(fixture("perf-stat-vm-json-interval-per-cpu.txt"))
    assert len(i.intervals) == 2 and {r.aggr for r in i.records} == {"CPU0", "CPU1"}
    assert i.count("task-clock") == pytest.approx(sum(r.value for r in i.records if isinstance(r, Count)))
    with pytest.raises(TelemetryError, match="no event lines"):
        parse_perf_stat("{}\n")  # -j --metric-only with nothing countable


def test_hybrid_cache_misses_come_from_the_ipc_pmu():
    text = (
        "6766433,,cpu_core/cycles/,16067551558,100.00,,\n4688595,,cpu_core/instructions/,16067558976,100.00,,\n"
        "<not counted>,,cpu_atom/cycles/,0,0.00,,\n<not counted>,,cpu_atom/instructions/,0,0.00,,\n"
        "1300,,cpu_core/cache-misses/,16067558976,100.00,,\n<not counted>,,cpu_atom/cache-misses/,0,0.00,,\n"
    )
    d = derive(parse_perf_stat(text), packets=100)  # built from the 6.5 hybrid CSV's layout
    assert d["ipc"] == pytest.approx(4688595 / 6766433) and d["cache_misses_per_packet"] == 13.0
