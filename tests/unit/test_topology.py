"""Unit tests for the topology model: loading, prefix expansion and one clear ConfigError
(file, path to the field, what is expected) for every kind of mistake."""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from dpgate.config.topology import BENCH_NET, load_topology, topology_from_data
from dpgate.model.errors import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMBEDDED = os.path.join(ROOT, "topologies", "embedded.yaml")
SRC = "t.yaml"


@pytest.fixture(autouse=True)
def _no_env_prefix(monkeypatch):
    monkeypatch.delenv("DPGATE_PREFIX", raising=False)


@pytest.fixture
def data():
    with open(EMBEDDED, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def lab_data():
    return {
        "name": "lab",
        "kind": "lab-2node",
        "nodes": {
            "TG": {
                "type": "TG",
                "generator": "trex",
                "trex": {"server": "10.0.0.1", "client_path": "/opt/trex/interactive"},
                "ssh": {"host": "10.0.0.1", "key_file": "~/.ssh/id_ed25519"},
                "cpus": [2, 3],
                "interfaces": {
                    "port0": {
                        "name": "ens1f0",
                        "mac": "3c:fd:fe:00:00:01",
                        "link": "l1",
                        "pci": "0000:18:00.0",
                        "speed": "25Gbps",
                        "numa": 0,
                    },
                    "port1": {
                        "name": "ens1f1",
                        "mac": "3c:fd:fe:00:00:02",
                        "link": "l2",
                        "pci": "18:00.1",
                        "speed": "25Gbps",
                    },
                },
            },
            "DUT1": {
                "type": "DUT",
                "ssh": {"host": "10.0.0.2", "user": "ci", "password_env": "DUT_PW", "sudo": True},
                "cpus": [2],
                "cpu_freq": {"source": "declared", "hz": 2.5e9},
                "interfaces": {
                    "port0": {
                        "name": "ens2f0",
                        "mac": "3c:fd:fe:00:01:01",
                        "link": "l1",
                        "ip4": "10.10.0.1/24",
                    },
                    "port1": {"name": "ens2f1", "mac": "3c:fd:fe:00:01:02", "link": "l2"},
                },
            },
        },
    }


def load_err(data, source=SRC, prefix=None) -> ConfigError:
    with pytest.raises(ConfigError) as ei:
        topology_from_data(data, source=source, prefix=prefix)
    err = ei.value
    assert err.source == source
    assert str(err).startswith(f"{source}: ")  # one line naming the file first
    assert "\n" not in str(err)
    return err


# -- valid files ---------------------------------------------------------------


def test_embedded_file_loads_into_typed_objects():
    topo = load_topology(EMBEDDED)
    assert topo.kind == "embedded" and topo.name == "embedded"
    assert topo.source == EMBEDDED
    assert topo.prefix == "dpg0-"
    assert topo.tg.namespace == "dpg0-tg" and topo.dut.namespace == "dpg0-sut"
    assert topo.tg.generator == "auto"
    assert topo.tg.cpus != topo.dut.cpus
    assert topo.dut.cpu_freq.source == "detected"
    pairs = [(t.name, s.name) for t, s in topo.pairs()]
    assert pairs == [("tg0", "sut0"), ("tg1", "sut1")]
    for t, s in topo.pairs():
        assert t.link == s.link
        for iface in (t, s):
            assert iface.address.ip in BENCH_NET
            assert iface.mac.startswith("02:")  # locally administered
    assert topo.dut.port(1).name == "sut1"
    assert [p.name for p in topo.tg.ports] == ["tg0", "tg1"]


def test_prefix_override_argument(data):
    topo = topology_from_data(data, source=SRC, prefix="ci7-")
    assert topo.prefix == "ci7-"
    assert topo.tg.namespace == "ci7-tg" and topo.dut.namespace == "ci7-sut"


def test_prefix_override_from_environment(data, monkeypatch):
    monkeypatch.setenv("DPGATE_PREFIX", "pool3-")
    assert topology_from_data(data, source=SRC).dut.namespace == "pool3-sut"
    # an explicit argument wins over the environment
    assert topology_from_data(data, source=SRC, prefix="arg-").dut.namespace == "arg-sut"


def test_load_topology_prefix_argument():
    assert load_topology(EMBEDDED, prefix="x1-").tg.namespace == "x1-tg"


@pytest.mark.parametrize("prefix", ["Upper-", "-lead", "a" * 11, "sp ace", "dot."])
def test_bad_prefix(data, prefix):
    err = load_err(data, prefix=prefix)
    assert err.path == "prefix"
    assert "1..10 characters" in err.reason


def test_lab_topology_loads():
    topo = topology_from_data(lab_data(), source="lab.yaml")
    assert topo.kind == "lab-2node"
    assert topo.tg.trex.server == "10.0.0.1" and topo.tg.trex.sync_port == 4501
    assert topo.dut.ssh.user == "ci" and topo.dut.ssh.sudo is True and topo.dut.ssh.port == 22
    assert topo.dut.cpu_freq.hz == 2.5e9
    assert topo.tg.port(0).link_bps == 25e9
    assert topo.dut.namespace is None
    # lab addresses are not restricted to the benchmarking range
    assert topo.dut.port(0).ip4 == "10.10.0.1/24"


# -- one ConfigError per mistake ------------------------------------------------


def test_missing_nodes(data):
    del data["nodes"]
    err = load_err(data)
    assert err.path == "nodes"
    assert "missing required field" in err.reason


def test_nodes_not_a_mapping(data):
    data["nodes"] = ["TG", "DUT1"]
    err = load_err(data)
    assert err.path == "nodes" and "expected a mapping" in err.reason


def test_top_level_not_a_mapping():
    err = load_err(["just", "a", "list"])
    assert err.path == "(top)"


@pytest.mark.parametrize(
    "mac", ["02:00:00:00:00", "02-00-00-00-00-01", "zz:00:00:00:00:01", "0200.0000.0001", ""]
)
def test_bad_mac(data, mac):
    data["nodes"]["TG"]["interfaces"]["port1"]["mac"] = mac
    err = load_err(data)
    assert err.path == "nodes.TG.interfaces.port1.mac"
    assert "expected a MAC address" in err.reason
    assert repr(mac) in err.reason  # says what it got


def test_missing_mac(data):
    del data["nodes"]["DUT1"]["interfaces"]["port0"]["mac"]
    err = load_err(data)
    assert err.path == "nodes.DUT1.interfaces.port0.mac"
    assert "missing required field: MAC address" in err.reason


@pytest.mark.parametrize("ip4", ["198.18.300.1/24", "198.18.0.1/33", "not-an-ip", "2001:db8::1/64"])
def test_bad_ip4(data, ip4):
    data["nodes"]["DUT1"]["interfaces"]["port1"]["ip4"] = ip4
    err = load_err(data)
    assert err.path == "nodes.DUT1.interfaces.port1.ip4"
    assert "expected an IPv4 address" in err.reason


@pytest.mark.parametrize("ip4", ["10.0.0.1/24", "198.20.0.1/24", "198.17.255.1/24", "198.18.0.1/8"])
def test_embedded_address_outside_benchmarking_range(data, ip4):
    data["nodes"]["TG"]["interfaces"]["port0"]["ip4"] = ip4
    err = load_err(data)
    assert err.path == "nodes.TG.interfaces.port0.ip4"
    assert "198.18.0.0/15" in err.reason and ip4 in err.reason


@pytest.mark.parametrize("ip4", ["198.18.0.1/24", "198.19.255.254/16", "198.18.0.1/15"])
def test_embedded_address_inside_range_ok(data, ip4):
    data["nodes"]["TG"]["interfaces"]["port0"]["ip4"] = ip4
    assert topology_from_data(data, source=SRC).tg.port(0).ip4 == ip4


def test_same_cpu_for_tg_and_sut(data):
    data["nodes"]["DUT1"]["cpus"] = [0]
    err = load_err(data)
    assert err.path == "nodes.DUT1.cpus"
    assert "different CPUs" in err.reason and "[0]" in err.reason


def test_overlapping_cpu_lists(data):
    data["nodes"]["TG"]["cpus"] = [0, 1]
    data["nodes"]["DUT1"]["cpus"] = [1, 2]
    err = load_err(data)
    assert "different CPUs" in err.reason and "[1]" in err.reason


@pytest.mark.parametrize(
    "cpus, needle",
    [
        ("0", "expected a list"),
        ([-1], ">= 0"),
        (["a"], "expected an integer"),
        ([1.5], "expected an integer"),
    ],
)
def test_bad_cpus(data, cpus, needle):
    data["nodes"]["TG"]["cpus"] = cpus
    err = load_err(data)
    assert err.path.startswith("nodes.TG.cpus")
    assert needle in err.reason


def test_embedded_needs_cpus(data):
    del data["nodes"]["DUT1"]["cpus"]
    err = load_err(data)
    assert err.path == "nodes.DUT1.cpus" and "cpus" in err.reason


def test_embedded_needs_namespace(data):
    del data["nodes"]["TG"]["namespace"]
    err = load_err(data)
    assert err.path == "nodes.TG.namespace" and "namespace" in err.reason


def test_link_with_one_end(data):
    data["nodes"]["DUT1"]["interfaces"]["port1"]["link"] = "link9"
    err = load_err(data)
    assert err.path.endswith(".link")
    assert "exactly two interfaces, found 1" in err.reason
    assert "link2" in err.reason or "link9" in err.reason


def test_link_with_three_ends(data):
    data["nodes"]["DUT1"]["interfaces"]["port2"] = {
        "name": "sut2",
        "mac": "02:00:00:00:00:13",
        "link": "link1",
    }
    err = load_err(data)
    assert "'link1'" in err.reason and "found 3" in err.reason


@pytest.mark.parametrize(
    "where, key, path",
    [
        ((), "colour", "colour"),
        (("nodes", "TG"), "cpu", "nodes.TG.cpu"),
        (("nodes", "DUT1", "interfaces", "port0"), "ipv4", "nodes.DUT1.interfaces.port0.ipv4"),
        (("nodes", "DUT1", "cpu_freq"), "mhz", "nodes.DUT1.cpu_freq.mhz"),
    ],
)
def test_unknown_key(data, where, key, path):
    d = data
    for k in where:
        d = d[k]
    d[key] = 1
    err = load_err(data)
    assert err.path == path
    assert f"unknown key {key!r}" in err.reason and "accepted keys" in err.reason


@pytest.mark.parametrize(
    "mutate, path, needle",
    [
        (lambda d: d.__setitem__("kind", "cloud"), "kind", "expected one of 'embedded'"),
        (
            lambda d: d["nodes"]["TG"].__setitem__("type", "tg"),
            "nodes.TG.type",
            "expected one of 'TG', 'DUT'",
        ),
        (lambda d: d["nodes"]["TG"].__setitem__("generator", "pktgen"), "nodes.TG.generator", "'tcpreplay'"),
        (
            lambda d: d["nodes"]["TG"]["interfaces"]["port0"].__setitem__("name", "a-very-long-ifname0"),
            "nodes.TG.interfaces.port0.name",
            "1..15 characters",
        ),
        (
            lambda d: d["nodes"]["DUT1"].__setitem__("cpu_freq", {"source": "declared"}),
            "nodes.DUT1.cpu_freq.hz",
            "hz is missing",
        ),
        (
            lambda d: d["nodes"]["DUT1"].__setitem__("cpu_freq", {"source": "declared", "hz": -1}),
            "nodes.DUT1.cpu_freq.hz",
            "> 0",
        ),
        (
            lambda d: d["nodes"]["DUT1"].__setitem__("cpu_freq", {"source": "guessed"}),
            "nodes.DUT1.cpu_freq.source",
            "'declared', 'detected'",
        ),
        (
            lambda d: d["nodes"]["DUT1"].__setitem__("type", "TG"),
            "nodes",
            "exactly one node of type TG, found 2",
        ),
        (lambda d: d["nodes"].pop("DUT1"), "nodes", "at least one node of type DUT"),
        (
            lambda d: d["nodes"]["TG"]["interfaces"]["port0"].__setitem__("mac", 2),
            "nodes.TG.interfaces.port0.mac",
            "expected a MAC",
        ),
        (
            lambda d: d["nodes"]["TG"].__setitem__("interfaces", None),
            "nodes.TG.interfaces",
            "expected a mapping",
        ),
        (lambda d: d.__setitem__("prefix", ["a-"]), "prefix", "expected a string"),
    ],
)
def test_wrong_fields(data, mutate, path, needle):
    mutate(data)
    err = load_err(data)
    assert err.path == path
    assert needle in err.reason


def test_lab_dut_without_ssh():
    d = lab_data()
    del d["nodes"]["DUT1"]["ssh"]
    err = load_err(d, source="lab.yaml")
    assert err.path == "nodes.DUT1.ssh"
    assert "ssh" in err.reason and "host" in err.reason


def test_lab_tg_without_trex():
    d = lab_data()
    del d["nodes"]["TG"]["trex"]
    err = load_err(d, source="lab.yaml")
    assert err.path == "nodes.TG.trex"


def test_lab_bad_pci_and_ssh_port():
    d = lab_data()
    d["nodes"]["TG"]["interfaces"]["port1"]["pci"] = "18:00"
    err = load_err(copy.deepcopy(d), source="lab.yaml")
    assert err.path == "nodes.TG.interfaces.port1.pci" and "PCI address" in err.reason
    d["nodes"]["TG"]["interfaces"]["port1"]["pci"] = "18:00.1"
    d["nodes"]["DUT1"]["ssh"]["port"] = 0
    err = load_err(d, source="lab.yaml")
    assert err.path == "nodes.DUT1.ssh.port"


def test_lab_ssh_missing_host():
    d = lab_data()
    d["nodes"]["DUT1"]["ssh"] = {"user": "root"}
    err = load_err(d, source="lab.yaml")
    assert err.path == "nodes.DUT1.ssh.host" and "missing required field" in err.reason
