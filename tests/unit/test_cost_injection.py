"""Per-packet cost injection (``--inject-cost``): units per SUT and host class, the filters or
loads it installs, the calibration rows a record names, and the refusals."""

from __future__ import annotations

import os

import pytest

from dpgate.model.errors import ConfigError, EnvironmentProblem
from dpgate.testbeds.embedded.suts import cost


def test_cost_units_and_refusals():
    assert cost.units_for("linux-ip4", 5) >= 1
    assert cost.units_for("linux-ip4", 10) > cost.units_for("linux-ip4", 5)
    with pytest.raises(ConfigError, match="inject_cost|not available"):
        cost.units_for("ovs-xconnect", 10)
    with pytest.raises(ConfigError, match="percentage"):
        cost.units_for("linux-ip4", 0)


def test_work_filter_is_n_loads_then_no_match_ahead_of_the_cross_connect():
    from dpgate.testbeds.embedded.suts.linux import LinuxXconnect

    (argv,) = cost.work_filters("sut0", 670)
    assert argv[argv.index("dev") + 1] == "sut0" and argv[argv.index("bytecode") - 1] == "bpf"
    code = argv[-1].split(",")
    assert code[0] == "671" and len(code) == 672  # count, 670 x "ld [k]", "return 0"
    loads = [ins.split() for ins in code[1:-1]]
    assert {ins[0] for ins in loads} == {"32"} and code[-1] == "6 0 0 0"  # BPF_LD|BPF_W|BPF_ABS
    # every word within the smallest frame's 60 bytes: a load past its end would end the program
    assert all(14 <= int(ins[3]) and int(ins[3]) + 4 <= 60 for ins in loads)
    assert int(argv[argv.index("prio") + 1]) < LinuxXconnect.mirred_prio
    many = cost.work_filters("sut0", 2 * cost.BPF_CHUNK + 1)
    assert [a[a.index("handle") + 1] for a in many] == ["1", "2", "3"]
    assert all(8 * int(a[-1].split(",")[0]) < 16384 for a in many)  # netlink bound
    for bad in (0, cost.WORK_MAX + 1):
        with pytest.raises(ConfigError, match="BPF loads per frame"):
            cost.work_filters("sut0", bad)


@pytest.mark.parametrize("table", ["fast", "slow"])
@pytest.mark.parametrize("sut", sorted(cost.CALIBRATION))
def test_units_are_the_percentage_of_the_reference_cost_less_the_classifier(sut, table):
    tab = {name: t for _, name, t in cost.CLASSES}[table]
    base, unit, fixed = tab[sut]
    for pct in (5, 10, 20):
        n = cost.units_for(sut, pct, tab)
        assert n >= 1
        # within one unit of the aim, unless one unit already overshoots it
        assert abs(fixed + n * unit - pct / 100 * base) <= unit / 2 + 1e-9 or n == 1
        assert cost.expected_percent(sut, n, tab) == pytest.approx(100 * (fixed + n * unit) / base)
    assert cost.units_for(sut, 10, tab) >= cost.units_for(sut, 5, tab)


class _Tb:
    tg_cpus = [0]


class _Sut:
    name, tb = "linux-xconnect", _Tb()


def test_the_injection_takes_the_host_classs_calibration_and_the_record_says_which(monkeypatch):
    """The fast class's "+10 %" (194 loads) read +28 to +31 % on linux-xconnect on the Zen 3
    host at 13-19 M it/s (gk5, 2026-11-28): a host of the slow class gets the slow table."""
    done = []

    def units(sut, n):  # the named boundary: the tc commands that put the programs on the ports
        cost.work_filters("sut0", n)  # refuses what the real one refuses (0 or too many loads)
        done.append(n)
        return {"bpf_loads_per_frame": n}

    monkeypatch.setattr(cost, "inject_units", units)
    slow = cost.inject_cost(_Sut(), 10, speed=16.4, model="AMD EPYC 7B13")  # the Zen 3 host
    fast = cost.inject_cost(_Sut(), 10, speed=55.0, model="AMD EPYC 7B13")
    assert done == [66, 194] and (slow["calibration"], fast["calibration"]) == ("slow", "fast")
    assert slow["calibration_speed"] == 16.4 and abs(slow["expected_percent"] - 10.0) < 0.2
    assert cost.cost_metrics(slow) == {
        "injected_cost": 0.1,
        "injected_cost_loads": 66,
        "injected_cost_expected": round(slow["expected_percent"] / 100, 4),
        "injected_cost_calibration": "slow",
    }
    # not given: the generator core's speed is probed (the real probe on CPU 0)
    probed = cost.inject_cost(_Sut(), 10)
    here = cost.calibration_for(probed["calibration_speed"], cost.cpu_model(), cost.cpu_family_model())
    assert probed["calibration"] == here[0], probed
    assert done[-1] == cost.units_for("linux-xconnect", 10, here[1])


def test_a_generator_core_fast_only_in_bursts_takes_the_slow_table(monkeypatch):
    """The Zen 4 host (2026-12-03) read 18-44 M it/s within one run; a median of its probe
    read over 40 in 2 of 4 linux-ip4 runs, whose "+10 %" then took the fast table (456 loads,
    read +17.9 %). The table is picked by the lower quartile, as the machine class is."""
    import itertools

    from dpgate.config import machineclass
    from dpgate.exec import speedprobe

    burst = itertools.cycle([22.0, 41.0, 41.0, 21.0, 41.0])  # 60 % of the readings in a burst
    cpus_asked = []

    class Bursty:  # the named boundary: the timed loop on the generator core
        def __init__(self, cpus, probe_s=speedprobe.PROBE_S):
            if any(int(c) not in range(os.cpu_count() or 1) for c in cpus):
                raise EnvironmentProblem("start the speed probe on a CPU that does not exist")
            cpus_asked.append(sorted(cpus))
            self.cpus = sorted(cpus)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def read(self):
            return {c: next(burst) for c in self.cpus}

    monkeypatch.setattr(speedprobe, "SpeedProbe", Bursty)
    monkeypatch.setattr(machineclass, "CLASS_PAUSE_S", 0.0)
    monkeypatch.setattr(cost, "inject_units", lambda sut, n: {"bpf_loads_per_frame": n})
    monkeypatch.setattr(cost, "cpu_model", lambda: "AMD EPYC")
    monkeypatch.setattr(cost, "cpu_family_model", lambda: "family 25 model 17")
    got = cost.inject_cost(_Sut(), 10)
    assert cpus_asked == [[0]]  # the generator's core, not the SUT's
    assert got["calibration_speed"] < 40.0 and got["calibration"] == "slow-zen4", got
    zen4 = cost.calibration_for(22.0, "AMD EPYC", "family 25 model 17")[1]
    assert got["bpf_loads_per_frame"] == cost.units_for("linux-xconnect", 10, zen4)


class _Mac:
    name, tb = "testpmd-mac", _Tb()


def test_a_cpu_model_with_its_own_rows_gets_them_and_the_record_says_so(monkeypatch):
    """Zen 3 and Xeon VMs probe alike (13-37 M it/s) but a load costs testpmd-mac 1.2 % of a
    packet on the first and 0.5 % on the second (2026-11-30): the Xeon's rows, over its class's
    table."""
    done = []
    monkeypatch.setattr(cost, "inject_units", lambda sut, n: done.append(n) or {"bpf_loads_per_frame": n})
    xeon = cost.inject_cost(_Mac(), 10, speed=23.0, model="Intel(R) Xeon(R) Processor")
    zen = cost.inject_cost(_Mac(), 10, speed=23.0, model="AMD EPYC 7B13")
    fast_xeon = cost.inject_cost(_Sut(), 10, speed=55.0, model="Intel(R) Xeon(R) Processor")
    assert (xeon["calibration"], zen["calibration"], fast_xeon["calibration"]) == (
        "slow-xeon",
        "slow",
        "fast-xeon",
    )
    # a fast Xeon (2026-12-02) has its own rows (a load costs testpmd-mac 0.9 % of a packet
    # there by the gate's pairs, 1.3 % on the AMD host of the class); an AMD host of the fast class has no l3fwd
    # row (its in-line loads were never calibrated there)
    _, fast_x = cost.calibration_for(55.0, "Intel(R) Xeon(R) Processor")
    _, fast_amd = cost.calibration_for(55.0, "AMD EPYC 7B13")
    assert fast_x["testpmd-mac"] == cost.CALIBRATION_XEON_FAST["testpmd-mac"] != fast_amd["testpmd-mac"]
    assert "l3fwd-ip4" in fast_x and "l3fwd-ip4" not in fast_amd
    assert cost.units_for("testpmd-mac", 10, fast_x) > 2 * cost.units_for("testpmd-mac", 10, fast_amd)
    # ... and a kernel SUT's load is a larger share there (1.53 cycles on 1,568 against 0.94 on
    # 2,650); OVS AF_XDP is calibrated on the fast Xeon only
    assert cost.units_for("linux-xconnect", 10, fast_x) < cost.units_for("linux-xconnect", 10, fast_amd) / 2
    assert "ovs-afxdp-xconnect" in fast_x and "ovs-afxdp-xconnect" not in fast_amd
    # OVS on af_packet too (at saturation, 2026-12-03): the AMD host of the class still refuses
    assert "ovs-xconnect" in fast_x and 100 < cost.units_for("ovs-xconnect", 10, fast_x) < 300
    with pytest.raises(ConfigError, match="not calibrated on this host class"):
        cost.units_for("ovs-xconnect", 10, fast_amd)
    assert done[0] == cost.units_for("testpmd-mac", 10, cost.CALIBRATION_XEON)
    assert done[1] == cost.units_for("testpmd-mac", 10, cost.CALIBRATION_SLOW) and done[0] > done[1]
    assert abs(xeon["expected_percent"] - 10.0) < 1.0 and abs(zen["expected_percent"] - 10.0) < 2.0
    # a SUT without a Xeon row keeps the class's row on the Xeon (every SUT has one since
    # 2026-11-30 afternoon: take one away)
    monkeypatch.delitem(cost.CALIBRATION_XEON, "ovs-xconnect")
    _, table = cost.calibration_for(23.0, "Intel(R) Xeon(R) Processor")
    assert table["ovs-xconnect"] == cost.CALIBRATION_SLOW["ovs-xconnect"]
    assert cost.cpu_model() is None or cost.cpu_model().strip()


@pytest.mark.parametrize(
    "sut_name", ["testpmd-io", "ovsdpdk-xconnect", "ovs-afxdp-xconnect", "l3fwd-ip4", "ovs-xconnect"]
)
def test_polling_sut_cost_injection_is_on_the_generator_ports(monkeypatch, sut_name):
    """testpmd and OVS-DPDK transmit through net_af_packet, OVS AF_XDP by sendto on its XSK
    socket: each runs the peer's ingress in its own transmit call, so the work goes on the
    generator ports' ingress (tc itself is the boundary here; the integration test runs it)."""
    import types

    calls = []
    monkeypatch.setattr(
        cost, "_inject_ingress", lambda ns, ports, n, offsets=cost.LOAD_OFFSETS: calls.append((ns, n))
    )
    sut = types.SimpleNamespace(
        name=sut_name, ns="x-sut", tb=types.SimpleNamespace(tg_ns="x-tg"), tg_ports=lambda: []
    )
    assert cost.inject_units(sut, 7)["bpf_loads_per_frame"] == 7
    assert calls == [("x-tg", 7)]


def test_ovsdpdk_units_follow_its_calibration():
    base, unit, fixed = cost.CALIBRATION["ovsdpdk-xconnect"]
    assert cost.units_for("ovsdpdk-xconnect", 10) == round((0.10 * base - fixed) / unit)


def test_ovs_afxdp_is_calibrated_on_the_slow_class_only():
    """OVS AF_XDP's loads are cheap in-line loads (a linear skb), so "+10 %" is tens of loads
    and "+5 %" the classifier plus one load; the fast class has no figures for it and refuses."""
    slow = cost.CALIBRATION_SLOW
    base, unit, fixed = slow["ovs-afxdp-xconnect"]
    assert cost.units_for("ovs-afxdp-xconnect", 10, slow) == round((0.10 * base - fixed) / unit) > 10
    assert cost.units_for("ovs-afxdp-xconnect", 5, slow) == 1  # the classifier alone is ~7 %
    with pytest.raises(ConfigError, match="not calibrated on this host class.*--calibrate-units"):
        cost.units_for("ovs-afxdp-xconnect", 10, cost.CALIBRATION)
    with pytest.raises(ConfigError, match="not available for SUT 'vpp-l2patch'"):
        cost.units_for("vpp-l2patch", 10, slow)


def test_l3fwd_and_ovs_xconnect_are_calibrated_at_saturation_and_refused_where_not():
    """Neither reports busy cycles: their tables come from the paired check's figure at
    saturation; both inject in-line loads (hundreds per +10 %); l3fwd has a row on the Xeon
    host only (its Zen 3 row was for out-of-line loads); the fast class's table (its AMD host)
    refuses both, the fast Xeon has rows of its own for them."""
    xeon = cost.calibration_for(23.0, "Intel(R) Xeon(R) Processor")[1]
    for name, table in (("l3fwd-ip4", xeon), ("ovs-xconnect", cost.CALIBRATION_SLOW)):
        base, unit, fixed = table[name]
        n = cost.units_for(name, 10, table)
        assert n == round((0.10 * base - fixed) / unit) and n >= 100
        assert abs(cost.expected_percent(name, n, table) - 10.0) < 100.0 * unit / base
        with pytest.raises(ConfigError, match="not calibrated on this host class"):
            cost.units_for(name, 10, cost.CALIBRATION)
    with pytest.raises(ConfigError, match="not calibrated on this host class.*--calibrate-units"):
        cost.units_for("l3fwd-ip4", 10, cost.calibration_for(23.0, "AMD EPYC 7B13")[1])


class _Done:
    returncode, stdout = 0, ""


def test_l3fwd_loads_the_link_header_the_others_the_headers_beyond_it(monkeypatch):
    """af_packet's transmit skb holds only the link header in line: l3fwd's loads stay there
    (bytes 0-11), the other transmit SUTs' go beyond it (bytes 14-45), as calibrated."""
    ran = []
    monkeypatch.setattr(cost, "run", lambda argv, ns=None, check=True: ran.append(argv) or _Done())

    class Port:
        def __init__(self, name):
            self.name = name

    class Tb:
        tg_ns = "dpg-tg"

    for name in ("l3fwd-ip4", "testpmd-io"):
        sut = type("S", (), {"name": name, "tb": Tb(), "tg_ports": lambda self: [Port("tg0")]})()
        ran.clear()
        info = cost.inject_units(sut, 5)
        (prog,) = [a for a in ran if "bytecode" in a]
        offs = {int(ins.split()[3]) for ins in prog[-1].split(",")[1:-1]}
        assert info["bpf_loads_per_frame"] == 5
        if name == "l3fwd-ip4":
            assert offs == {0, 4, 8} and "in line" in info["method"]
        else:
            assert offs and min(offs) >= 14 and "in line" not in info["method"]
    with pytest.raises(ConfigError, match="load offsets"):
        cost.work_filters("tg0", 3, (58,))


def test_a_vendor_line_model_name_takes_the_rows_of_its_family_and_model(monkeypatch):
    """The Zen 4 VM names itself ``AMD EPYC`` (family 25 model 17), as an AMD host of another
    generation may: its rows (2026-12-03) are keyed by family and model too, and a host of the
    same name and another family keeps its class's table."""
    zen4 = "family 25 model 17"
    name, table = cost.calibration_for(25.0, "AMD EPYC", zen4)
    assert name == "slow-zen4" and table["l3fwd-ip4"] == cost.CALIBRATION_ZEN4["l3fwd-ip4"]
    other_name, other = cost.calibration_for(25.0, "AMD EPYC", "family 25 model 1")
    assert other_name == "slow" and "l3fwd-ip4" not in other
    assert cost.calibration_for(25.0, "AMD EPYC")[0] == "slow"  # no family read: the class's
    assert cost.calibration_for(55.0, "AMD EPYC", "family 25 model 1")[0] == "fast"
    # the slow table's one load read +3.4 % there (its "+5 %"); the Zen 4 rows give it two
    assert cost.units_for("testpmd-mac", 5, table) > cost.units_for("testpmd-mac", 5, cost.CALIBRATION_SLOW)
    # read from /proc/cpuinfo when not given: the record names the rows the host took
    monkeypatch.setattr(cost, "cpu_model", lambda: "AMD EPYC")
    monkeypatch.setattr(cost, "cpu_family_model", lambda: zen4)
    monkeypatch.setattr(cost, "inject_units", lambda sut, n: {"bpf_loads_per_frame": n})
    got = cost.inject_cost(_Sut(), 10, speed=25.0)
    assert got["calibration"] == "slow-zen4"
    assert got["bpf_loads_per_frame"] == cost.units_for("linux-xconnect", 10, table)


def test_a_cpu_with_rows_of_its_own_keeps_them_in_a_fast_phase():
    """The Zen 4 VM's probe read 42.5 M it/s over 2 s before one linux-xconnect "+5 %" (gk87,
    2026-12-04), and the fast table made it 53 loads: its own rows, calibrated over the 18-44
    M it/s it runs at, make it one. A CPU of that name and another model, or a model name of
    several CPUs with rows in both classes (the Xeons), still goes by the probe."""
    zen4 = "family 25 model 17"
    for speed in (22.0, 42.5, 60.0):
        name, table = cost.calibration_for(speed, "AMD EPYC", zen4)
        assert name == "slow-zen4", speed
        assert cost.units_for("linux-xconnect", 5, table) == cost.units_for(
            "linux-xconnect", 5, {**cost.CALIBRATION_SLOW, **cost.CALIBRATION_ZEN4}
        )
    assert cost.units_for("linux-xconnect", 5, table) < cost.units_for("linux-xconnect", 5, cost.CALIBRATION)
    assert cost.calibration_for(42.5, "AMD EPYC", "family 25 model 1")[0] == "fast"
    assert cost.calibration_for(42.5, "Intel(R) Xeon(R) Processor", "family 6 model 85")[0] == "fast-xeon"
    assert cost.calibration_for(23.0, "Intel(R) Xeon(R) Processor", "family 6 model 167")[0] == "slow-xeon"


def test_the_zen5_vm_injects_into_the_three_suts_the_fast_class_had_no_rows_for():
    """On the Zen 5 VM (``AMD EPYC``, family 26 model 2; 2026-12-05) the fast class's six rows
    reproduced within a few percent, and OVS AF_XDP, l3fwd and OVS on af_packet were
    calibrated there: that CPU injects into all nine SUTs, in a slow phase of its probe too,
    while a fast host without such rows still refuses those three rather than guess."""
    zen5 = "family 26 model 2"
    for speed in (30.0, 55.0):
        name, table = cost.calibration_for(speed, "AMD EPYC", zen5)
        assert name == "fast-zen5", speed
        assert {k: table[k] for k in cost.CALIBRATION} == cost.CALIBRATION
        for sut in ("ovs-afxdp-xconnect", "l3fwd-ip4", "ovs-xconnect"):
            assert table[sut] == cost.CALIBRATION_ZEN5[sut]
            assert 9.0 <= cost.expected_percent(sut, cost.units_for(sut, 10, table), table) <= 11.0
    # its classifier alone is ~10 % on OVS AF_XDP: "+5 %" is one load, not zero
    assert cost.units_for("ovs-afxdp-xconnect", 5, table) == 1
    other, table = cost.calibration_for(55.0, "AMD EPYC", "family 25 model 1")
    assert other == "fast"
    with pytest.raises(ConfigError, match="not calibrated on this host class"):
        cost.units_for("l3fwd-ip4", 10, table)


def test_the_model_207_xeon_takes_its_own_rows_whatever_the_probe_reads():
    """The Intel Xeon VM of family 6 model 207 (2026-12-07) shares its model name with the
    Xeons of 2026-11-30 and 12-02, whose rows (by the name alone) made its "+10 %" read +8.6
    to +13.5 % by its own calibration: its rows (by family and model) win in either class the
    probe picks, over the name's rows of that class too, while the name's other CPUs keep the
    probe's class."""
    xeon = "Intel(R) Xeon(R) Processor"
    for speed in (18.0, 35.0, 44.0):
        name, table = cost.calibration_for(speed, xeon, "family 6 model 207")
        assert name == "slow-xeon207", speed
        for sut in cost.CALIBRATION_XEON207:
            assert table[sut] == cost.CALIBRATION_XEON207[sut]
            assert 9.5 <= cost.expected_percent(sut, cost.units_for(sut, 10, table), table) <= 10.5
    assert set(cost.CALIBRATION_XEON207) == set(cost.calibrated_suts())
    assert cost.calibration_for(44.0, xeon, "family 6 model 167")[0] == "fast-xeon"
    assert cost.calibration_for(35.0, xeon, "family 6 model 167")[0] == "slow-xeon"
    assert cost.calibration_for(35.0, xeon)[0] == "slow-xeon"
