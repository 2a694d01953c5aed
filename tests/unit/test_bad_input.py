"""Table-driven bad input: every problem is one error naming where (file/keyword/option),
the field, the bad value, and what is accepted."""

import copy

import pytest

from dpgate.config.units import UnitError, parse_frame_size, parse_rate, parse_ratio
from dpgate.model.errors import ConfigError

GOOD_TOPO = {
    "name": "e",
    "kind": "embedded",
    "prefix": "dpg0-",
    "nodes": {
        "TG": {
            "type": "TG",
            "generator": "tcpreplay",
            "namespace": "{prefix}tg",
            "cpus": [0],
            "interfaces": {
                "port0": {
                    "name": "tg0",
                    "mac": "02:00:00:00:00:01",
                    "ip4": "198.18.255.1/24",
                    "link": "link1",
                },
                "port1": {
                    "name": "tg1",
                    "mac": "02:00:00:00:00:02",
                    "ip4": "198.19.255.1/24",
                    "link": "link2",
                },
            },
        },
        "DUT1": {
            "type": "DUT",
            "namespace": "{prefix}sut",
            "cpus": [1],
            "cpu_freq": {"source": "detected"},
            "interfaces": {
                "port0": {
                    "name": "sut0",
                    "mac": "02:00:00:00:00:11",
                    "ip4": "198.18.255.2/24",
                    "link": "link1",
                },
                "port1": {
                    "name": "sut1",
                    "mac": "02:00:00:00:00:12",
                    "ip4": "198.19.255.2/24",
                    "link": "link2",
                },
            },
        },
    },
}


def at(d, path):
    for k in path[:-1]:
        d = d[k]
    return d, path[-1]


def setv(path, value):
    def f(t):
        d, k = at(t, path)
        d[k] = value

    return f


def delete(path):
    def f(t):
        d, k = at(t, path)
        del d[k]

    return f


P0 = ["nodes", "TG", "interfaces", "port0"]
S0 = ["nodes", "DUT1", "interfaces", "port0"]

# (mutation, field path in the message, words that must appear: the bad value and what is accepted)
TOPOLOGY_CASES = [
    (setv(P0 + ["mac"], "zz:zz"), "nodes.TG.interfaces.port0.mac", ["'zz:zz'", "MAC address like"]),
    (setv(P0 + ["mac"], 12), "nodes.TG.interfaces.port0.mac", ["12", "MAC address"]),
    (setv(P0 + ["ip4"], "198.18.0.1"), "nodes.TG.interfaces.port0.ip4", ["IPv4 address with prefix"]),
    (
        setv(P0 + ["ip4"], "300.1.1.1/24"),
        "nodes.TG.interfaces.port0.ip4",
        ["'300.1.1.1/24'", "prefix length"],
    ),
    (setv(P0 + ["ip4"], "10.0.0.1/24"), "nodes.TG.interfaces.port0.ip4", ["'10.0.0.1/24'", "198.18.0.0/15"]),
    (
        setv(P0 + ["ip4"], "198.20.0.1/24"),
        "nodes.TG.interfaces.port0.ip4",
        ["198.20.0.1/24", "198.18.0.0/15"],
    ),
    (
        setv(P0 + ["name"], "a-very-long-interface-name"),
        "nodes.TG.interfaces.port0.name",
        ["1..15 characters"],
    ),
    (
        setv(P0 + ["name"], "x; rm -rf /"),
        "nodes.TG.interfaces.port0.name",
        ["'x; rm -rf /'", "[A-Za-z0-9_.-]"],
    ),
    (delete(P0 + ["link"]), "nodes.TG.interfaces.port0.link", ["missing required field", "link name"]),
    (delete(P0 + ["mac"]), "nodes.TG.interfaces.port0.mac", ["missing required field", "MAC"]),
    (setv(P0 + ["link"], "linkX"), "link", ["exactly two interfaces", "found 1"]),
    (
        setv(P0 + ["speed2"], "10G"),
        "nodes.TG.interfaces.port0.speed2",
        ["unknown key 'speed2'", "accepted keys"],
    ),
    (setv(P0 + ["numa"], -1), "nodes.TG.interfaces.port0.numa", ["-1", ">= 0"]),
    (setv(P0 + ["pps_limit"], 0), "nodes.TG.interfaces.port0.pps_limit", ["0", "> 0"]),
    (setv(P0 + ["pci"], "18:00"), "nodes.TG.interfaces.port0.pci", ["'18:00'", "PCI address like"]),
    (setv(["nodes", "TG", "cpus"], [1]), "nodes.DUT1.cpus", ["different CPUs", "[1]"]),
    (setv(["nodes", "TG", "cpus"], "0"), "nodes.TG.cpus", ["'0'", "a list"]),
    (setv(["nodes", "TG", "cpus"], [-2]), "nodes.TG.cpus", ["-2", ">= 0"]),
    (setv(["nodes", "TG", "cpus"], []), "nodes.TG.cpus", ["cpus: [N]"]),
    (setv(["nodes", "TG", "type"], "GEN"), "nodes.TG.type", ["'GEN'", "'TG', 'DUT'"]),
    (setv(["nodes", "TG", "generator"], "pktgen"), "nodes.TG.generator", ["'pktgen'", "'tcpreplay', 'trex'"]),
    (delete(["nodes", "TG", "namespace"]), "nodes.TG.namespace", ["namespace", "{prefix}tg"]),
    (
        setv(["nodes", "DUT1", "cpu_freq"], {"source": "declared"}),
        "nodes.DUT1.cpu_freq.hz",
        ["hz is missing", "hz: 2.5e9"],
    ),
    (
        setv(["nodes", "DUT1", "cpu_freq"], {"source": "guess"}),
        "nodes.DUT1.cpu_freq.source",
        ["'guess'", "'declared', 'detected'"],
    ),
    (
        setv(["nodes", "DUT1", "cpu_freq"], {"source": "declared", "hz": -5}),
        "nodes.DUT1.cpu_freq.hz",
        ["-5", "> 0"],
    ),
    (setv(["nodes", "DUT1", "type"], "TG"), "nodes", ["exactly one node of type TG", "found 2"]),
    (setv(["kind"], "lab-9node"), "kind", ["'lab-9node'", "'embedded', 'lab-2node', 'lab-3node'"]),
    (setv(["prefix"], "Bad Prefix!"), "prefix", ["'Bad Prefix!'", "[a-z0-9-]"]),
    (delete(["name"]), "name", ["missing required field"]),
    (setv(["nodes"], []), "nodes", ["[]", "a mapping"]),
    (setv(["colour"], "blue"), "colour", ["unknown key 'colour'", "accepted keys"]),
    (lambda t: t.update(kind="lab-2node"), "nodes.DUT1.ssh", ["ssh: {host"]),
]


@pytest.mark.parametrize("mutate, path, words", TOPOLOGY_CASES)
def test_bad_topology(mutate, path, words):
    from dpgate.config.topology import topology_from_data

    data = copy.deepcopy(GOOD_TOPO)
    mutate(data)
    with pytest.raises(ConfigError) as err:
        topology_from_data(data, source="topo.yaml")
    msg = str(err.value)
    assert msg.startswith("topo.yaml: ") and path in msg, msg
    for w in words:
        assert w in msg, (w, msg)


THRESHOLD_CASES = [
    ("nfs: {linux-ip4: {64B: {ndr_min: 12}}}", None),  # a bare number is pps: accepted
    ("nfs: {linux-ip4: {64B: {ndr_min: 'x'}}}", ["nfs.linux-ip4.64B.ndr_min", "'x'", "e.g. 50kpps"]),
    ("nfs: {linux-ip4: {64B: {ndr_min: 5furlongs}}}", ["ndr_min", "'furlongs'", "pps, kpps, Mpps"]),
    ("nfs: {linux-ip4: {64B: {pdr_min: 50%}}}", ["pdr_min", "50%", "absolute rate"]),
    ("nfs: {linux-ip4: {9999B: {ndr_min: 1Mpps}}}", ["nfs.linux-ip4.9999B", "9999", "64..9216"]),
    ("nfs: {linux-ip4: {64B: {cpp_max: 0}}}", ["cpp_max", "0", "> 0"]),
    ("nfs: {linux-ip4: {64B: {ddio_miss_max: 150%}}}", ["ddio_miss_max", "150%", "[0, 1]"]),
    ("nfs: {linux-ip4: {64B: {ndr_floor: 1}}}", ["ndr_floor", "accepted keys", "ndr_min"]),
    ("nfs: {linux-ip4: [1]}", ["nfs.linux-ip4", "a mapping"]),
    ("defaults: {ipc_min: -1}\nnfs: {}", ["defaults.ipc_min", "-1", "> 0"]),
    ("nfs: {x: {all: {search_time_limit: -5}}}", ["nfs.x.all.search_time_limit", "-5", ">= 0"]),
    ("nfs: {x: {all: {search_time_limit: 2min}}}", ["nfs.x.all.search_time_limit", "'2min'"]),
    # lab keys with a core tag (threads T physical cores C)
    ("nfs: {x: {64B-2X1C: {ndr_min: 1 Mpps}}}", ["nfs.x.64B-2X1C", "'2X1C'", "like 1T1C or 2T1C"]),
    ("nfs: {x: {64B-1T2C: {ndr_min: 1 Mpps}}}", ["nfs.x.64B-1T2C", "threads T physical cores C"]),
    ("nfs: {x: {63B-1T1C: {ndr_min: 1 Mpps}}}", ["nfs.x.63B-1T1C", "out of range"]),
    ("nfs: {x: {all-: {ndr_min: 1 Mpps}}}", ["nfs.x.all-", "like 1T1C"]),
]


@pytest.mark.parametrize("text, words", THRESHOLD_CASES)
def test_bad_thresholds(tmp_path, text, words):
    from dpgate.config.thresholds import load_thresholds

    p = tmp_path / "th.yaml"
    p.write_text(text)
    if words is None:
        assert load_thresholds(str(p)).lookup("linux-ip4", "64B").rate("ndr_min") == 12
        return
    with pytest.raises(ConfigError) as err:
        load_thresholds(str(p))
    msg = str(err.value)
    assert str(p) in msg
    for w in words:
        assert w in msg, (w, msg)


KEYWORD_CASES = [
    (lambda: parse_rate("fast"), UnitError, ["'fast'", "50kpps"]),
    (lambda: parse_rate("-5kpps"), UnitError, ["'-5kpps'"]),
    (lambda: parse_rate("0pps"), UnitError, ["'0pps'", "greater than 0"]),
    (lambda: parse_rate("150%"), UnitError, ["150%", "(0, 100]"]),
    (lambda: parse_rate("3 furlongs/s"), UnitError, ["'3 furlongs/s'", "50kpps"]),
    (lambda: parse_frame_size("63"), UnitError, ["63", "64..9216", "IMIX"]),
    (lambda: parse_frame_size("9217B"), UnitError, ["9217", "64..9216"]),
    (lambda: parse_frame_size("jumbo"), UnitError, ["'jumbo'", "64B", "IMIX"]),
    (lambda: parse_ratio("1.5", "ndr_loss"), UnitError, ["ndr_loss", "'1.5'", "[0, 1)"]),
    (lambda: parse_ratio("-0.1", "pdr_loss"), UnitError, ["pdr_loss", "[0, 1)"]),
    (lambda: parse_ratio("lots", "pdr_loss"), UnitError, ["'lots'", "0.5%"]),
]


def _unknown_nf():
    from dpgate.testbeds.embedded.suts.base import sut_class

    sut_class("vpp-in-a-namespace")


def _unknown_profile():
    from dpgate.search import find_ndr_pdr

    find_ndr_pdr(lambda load, d: None, 1000, 2000, profile="quick")


def _unknown_override():
    from dpgate.search import find_ndr_pdr

    find_ndr_pdr(lambda load, d: None, 1000, 2000, widht=0.1)


def _bad_goal():
    from dpgate.robotlib import Gates, NdrPdrResult

    r = NdrPdrResult(
        "nf",
        "64B",
        1e5,
        1e5,
        None,
        None,
        0.0,
        0.005,
        "per-commit",
        1,
        1.0,
        1,
        2e9,
        "declared",
        2e4,
        2e4,
        None,
        None,
    )
    Gates().throughput_should_be_at_least(r, parse_rate("1Mpps"), goal="MRR")


def _bad_policy():
    from dpgate.robotlib import Gates

    Gates(telemetry_policy="ignore")


def _bad_profile_kind():
    from dpgate.traffic.profiles import make_profile

    make_profile("ip6", 64)


def _bad_flows():
    from dpgate.traffic.profiles import make_profile

    make_profile("ip4", 64, flows=100000)


KEYWORD_CASES += [
    (_unknown_nf, ConfigError, ["'vpp-in-a-namespace'", "linux-ip4", "testpmd-io"]),
    (_unknown_profile, ConfigError, ["'quick'", "per-commit", "sign-off", "rfc2544-binary"]),
    (_unknown_override, ConfigError, ["'widht'", "width"]),
    (_bad_goal, ConfigError, ["'MRR'", "NDR or PDR"]),
    (_bad_policy, ConfigError, ["'ignore'", "skip, fail"]),
    (_bad_profile_kind, ConfigError, ["'ip6'", "l2, ip4"]),
    (_bad_flows, ConfigError, ["100000", "1..65536"]),
]


@pytest.mark.parametrize("call, exc, words", KEYWORD_CASES)
def test_bad_keyword_arguments(call, exc, words):
    with pytest.raises(exc) as err:
        call()
    for w in words:
        assert w in str(err.value), (w, str(err.value))


CLI_CASES = [
    (["trial", "--sut", "linux-ip4", "--rate", "fast"], ["--rate", "'fast'"]),
    (["trial", "--sut", "linux-ip4", "--rate", "1kpps", "--duration", "0"], ["--duration", "> 0"]),
    (["trial", "--sut", "linux-ip4", "--rate", "1kpps", "--duration", "soon"], ["--duration", "'soon'"]),
    (
        ["trial", "--sut", "linux-ip4", "--rate", "1kpps", "--frame-size", "32"],
        ["--frame-size", "32", "64..9216"],
    ),
    (["trial", "--rate", "1kpps"], ["--sut"]),
    (["gate", "--profile", "fastest"], ["--profile", "'fastest'", "per-commit"]),
    (["gate", "--telemetry-policy", "maybe"], ["--telemetry-policy", "'maybe'", "skip"]),
]


@pytest.mark.parametrize("argv, words", CLI_CASES)
def test_bad_command_line(capsys, argv, words):
    from dpgate.cli.main import main

    with pytest.raises(SystemExit) as ex:
        main(argv)
    assert ex.value.code == 2
    err = capsys.readouterr().err
    for w in words:
        assert w in err, (w, err)


def test_table_has_at_least_40_malformed_inputs():
    n = len(TOPOLOGY_CASES) + len([c for c in THRESHOLD_CASES if c[1]]) + len(KEYWORD_CASES) + len(CLI_CASES)
    assert n >= 40
