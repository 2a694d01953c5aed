"""VPP driver: startup.conf, CLI per NF, output parsing, commands through a recording fake node."""

from __future__ import annotations

import shlex

import pytest

from dpgate.config.topology import load_topology
from dpgate.exec.remote import Result
from dpgate.model.errors import ConfigError, SutError
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.vpp import (
    Neighbor,
    Route,
    Vpp,
    cli_lines,
    parse_show_interface,
    parse_show_runtime,
    parse_version,
    startup_conf,
)

TOPO = "topologies/lab-2node.example.yaml"
CORES = CoreAllocation(main=1, workers=(2, 30), phy_cores=1, threads_per_core=2, numa=0)


#: How a lab DUT with systemd starts VPP with dpgate's startup file.
VPP_UNIT_START = [
    "systemd-run",
    "--unit=dpgate-vpp",
    "--collect",
    "--",
    "vpp",
    "-c",
    "/etc/vpp/dpgate-startup.conf",
]


class RecordingNode:
    """Fake dpgate.exec.remote node: records argv, answers from a table of (prefix → stdout)."""

    def __init__(self, answers=None, fail=()):
        self.calls, self.inputs = [], []
        # a systemd host: `systemctl show -p InvocationID --value <unit>` names the unit's current run
        self.answers, self.fail = {**(answers or {}), "InvocationID": "5f2d0c1e9a7b4c3d"}, fail

    def run(self, argv, timeout=30.0, check=True, sudo=None, input=None):
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        self.inputs.append(input)
        joined = " ".join(argv)
        if any(f in joined for f in self.fail):
            raise RuntimeError("connection refused")
        out = next((v for k, v in self.answers.items() if k in joined), "")
        return Result(argv, 0, out, "")


SHOW_INT = """\
              Name               Idx    State  MTU (L3/IP4/IP6/MPLS)     Counter          Count
eth0                              1      up          9000/0/0/0     rx packets               1000
                                                                    rx bytes                64000
                                                                    tx packets                990
                                                                    drops                      10
eth1                              2      up          9000/0/0/0     rx-miss                     3
local0                            0     down          0/0/0/0
"""

SHOW_RUNTIME = """\
Thread 1 vpp_wk_0 (lcore 2)
Time 10.1, 10 sec internal node vector rate 42.00 loops/sec 12345.00
  vector rates in 1.0e6, out 1.0e6, drop 0.0e0, punt 0.0e0
             Name                 State         Calls          Vectors        Suspends         Clocks       Vectors/Call
dpdk-input                       polling          23810        1000000               0          3.10e1           42.00
l2-patch                         active           23810        1000000               0          5.00e0           42.00
"""


def test_startup_conf_has_cores_devices_queues_and_buffers():
    text = startup_conf(
        CORES, [("0000:18:00.0", "eth0"), ("0000:18:00.1", "eth1")], rx_queues=2, buffers_per_numa=100000
    )
    assert "main-core 1" in text and "corelist-workers 2,30" in text
    assert "dev 0000:18:00.0 { name eth0 num-rx-queues 2 }" in text
    assert "dev 0000:18:00.1 { name eth1 num-rx-queues 2 }" in text
    assert "buffers-per-numa 100000" in text
    assert text.count("{") == text.count("}")


def test_cli_l2patch_bridge_and_ip4_routes():
    assert cli_lines("l2patch", ["eth0", "eth1"]) == [
        "set interface state eth0 up",
        "set interface state eth1 up",
        # test l2patch leaves a NIC in L3 mode (MAC filter on): the profile's dst MACs would be dropped
        "set interface promiscuous on eth0",
        "set interface promiscuous on eth1",
        "test l2patch rx eth0 tx eth1",
        "test l2patch rx eth1 tx eth0",
    ]
    bd = cli_lines("l2bd", ["eth0", "eth1"])
    assert "set interface l2 bridge eth0 1" in bd and "set interface l2 bridge eth1 1" in bd
    ip4 = cli_lines(
        "ip4",
        ["eth0", "eth1"],
        ["10.10.10.1/24", "20.20.20.1/24"],
        [Neighbor("eth1", "20.20.20.2", "3c:fd:fe:00:00:02")],
        [Route("20.0.0.0", 62500, "eth1", "20.20.20.2")],
    )
    assert "set interface ip address eth0 10.10.10.1/24" in ip4
    assert "ip neighbor eth1 20.20.20.2 3c:fd:fe:00:00:02 static" in ip4
    assert "ip route add 20.0.0.0/32 count 62500 via 20.20.20.2 eth1" in ip4
    with pytest.raises(ConfigError):
        cli_lines("ip4", ["eth0", "eth1"])
    with pytest.raises(ConfigError, match="unknown VPP NF"):
        cli_lines("nat44", ["eth0", "eth1"])


def test_show_interface_runtime_and_version_parsing():
    s = parse_show_interface(SHOW_INT)
    assert s["eth0"] == {"rx packets": 1000, "rx bytes": 64000, "tx packets": 990, "drops": 10}
    assert s["eth1"]["rx-miss"] == 3 and s["local0"] == {}
    r = parse_show_runtime(SHOW_RUNTIME)
    assert r["1 vpp_wk_0"]["dpdk-input"]["vectors"] == 1000000
    assert r["1 vpp_wk_0"]["l2-patch"]["vectors_per_call"] == 42.0
    assert parse_version("vpp v23.10-release built by root on host at 2023-10-25") == "v23.10-release"


def test_driver_writes_conf_starts_unit_waits_and_configures_through_node():
    dut = load_topology(TOPO).dut
    node = RecordingNode({"show version": "vpp v24.02-release built by x"})
    vpp = Vpp(node, dut, CORES, nf="l2patch")
    vpp.configure()
    assert node.calls[0] == ["tee", "/etc/vpp/dpgate-startup.conf"] and "main-core 1" in node.inputs[0]
    vpp.start()
    assert VPP_UNIT_START in node.calls
    cli = [c[3:] for c in node.calls if c[:1] == ["vppctl"]]
    assert ["test", "l2patch", "rx", "eth0", "tx", "eth1"] in cli
    assert vpp.version() == "v24.02-release"


def test_not_ready_vpp_is_a_sut_error_with_log():
    dut = load_topology(TOPO).dut
    node = RecordingNode({"journalctl": "vpp[1]: dpdk: cannot bind 0000:18:00.0"}, fail=("show version",))
    vpp = Vpp(node, dut, CORES)
    t = [0.0]
    with pytest.raises(SutError, match="cannot bind"):
        vpp.ready(timeout_s=2, sleep=lambda s: t.__setitem__(0, t[0] + s), clock=lambda: t[0])


def test_vppctl_keeps_each_word_one_argument():
    node = RecordingNode()
    Vpp(node, load_topology(TOPO).dut, CORES).vppctl("show interface 'a b'")
    assert node.calls[-1][-1] == "a b" and shlex.join(node.calls[-1]).count("vppctl") == 1


def test_ip4_routing_from_topology_matches_the_traffic_profile():
    from dpgate.testbeds.lab.vpp import ip4_routing

    neighbors, routes = ip4_routing(load_topology(TOPO), 62500)
    assert Neighbor("eth1", "20.20.20.2", "3c:fd:fe:00:00:02") in neighbors
    assert routes == [
        Route("198.19.0.1", 62500, "eth1", "20.20.20.2"),
        Route("198.18.0.1", 62500, "eth0", "10.10.10.2"),
    ]
    lines = cli_lines("ip4", ["eth0", "eth1"], ["10.10.10.1/24", "20.20.20.1/24"], neighbors, routes)
    assert "ip route add 198.19.0.1/32 count 62500 via 20.20.20.2 eth1" in lines
