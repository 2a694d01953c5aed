"""testpmd / l3fwd argv builders and OVS-DPDK command lists, through a recording fake node."""

from __future__ import annotations

import dataclasses

import pytest
from helpers import ovs_vsctl_set
from test_lab_vpp import RecordingNode

from dpgate.config.topology import load_topology
from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.l3fwd import L3fwd, config_tuples, rule_file
from dpgate.testbeds.lab.ovs_dpdk import OvsDpdk, parse_dump_ports
from dpgate.testbeds.lab.testpmd import Testpmd, parse_dpdk_version, parse_port_stats

TOPO = "topologies/lab-2node.example.yaml"
C2 = CoreAllocation(main=1, workers=(2, 3), phy_cores=2, threads_per_core=1, numa=0)

TESTPMD_LOG = """\
EAL: RTE Version: 'DPDK 22.11.3'
  ######################## NIC statistics for port 0  ########################
  RX-packets: 1000       RX-missed: 5          RX-bytes:  64000
  RX-errors: 0
  TX-packets: 998        TX-errors: 0          TX-bytes:  63872
  ######################## NIC statistics for port 1  ########################
  RX-packets: 2000       RX-missed: 0          RX-bytes:  128000
  TX-packets: 1990       TX-errors: 1          TX-bytes:  127360
"""


def test_testpmd_argv_io_mode_cores_and_nics():
    argv = Testpmd(RecordingNode(), load_topology(TOPO).dut, C2, rxq=2).argv()
    assert argv[0] == "dpdk-testpmd"
    assert argv[argv.index("-l") + 1] == "1,2,3" and argv[argv.index("--main-lcore") + 1] == "1"
    assert ["-a", "0000:18:00.0"] == argv[argv.index("-a") : argv.index("-a") + 2]
    app = argv[argv.index("--") + 1 :]
    assert "--forward-mode=io" in app and "--nb-cores=2" in app and "--rxq=2" in app


def test_testpmd_stats_and_version_from_log():
    s = parse_port_stats(TESTPMD_LOG)
    assert s[0]["RX-packets"] == 1000 and s[0]["RX-missed"] == 5 and s[1]["TX-errors"] == 1
    assert parse_dpdk_version(TESTPMD_LOG) == "DPDK 22.11.3"


def test_testpmd_start_runs_a_unit_and_stop_stops_it():
    node = RecordingNode({"journalctl": TESTPMD_LOG})
    tp = Testpmd(node, load_topology(TOPO).dut, C2)
    tp.start(timeout_s=1)
    run = next(c for c in node.calls if c[0] == "systemd-run")
    assert run[:4] == ["systemd-run", "--unit=dpgate-testpmd", "--collect", "--"] and run[4] == "dpdk-testpmd"
    tp.stop()
    assert node.calls[-1] == ["systemctl", "stop", "dpgate-testpmd"]


def test_l3fwd_lpm_routes_config_and_eth_dest():
    assert rule_file([("20.0.0.0/8", 1), ("10.0.0.0/8", 0)]) == "R20.0.0.0/8 1\nR10.0.0.0/8 0\n"
    with pytest.raises(ValueError):
        rule_file([("20.0.0.1/8", 1)])  # host bits set: a typo, not a route
    assert config_tuples(C2) == "(0,0,2),(1,0,3)"
    assert config_tuples(dataclasses.replace(C2, workers=(2,))) == "(0,0,2),(1,0,2)"
    node = RecordingNode()
    l3 = L3fwd(
        node, load_topology(TOPO).dut, C2, routes=[("20.0.0.0/8", 1)], eth_dest={1: "3c:fd:fe:00:00:02"}
    )
    argv = l3.argv()
    assert "--lookup=lpm" in argv and "--config=(0,0,2),(1,0,3)" in argv and "-p" in argv
    assert argv[argv.index("-p") + 1] == "0x3" and "--eth-dest=1,3c:fd:fe:00:00:02" in argv
    l3.configure()
    i = node.calls.index(["tee", "/tmp/dpgate-l3fwd.rules"])
    assert node.inputs[i] == "R20.0.0.0/8 1\n"
    # DPDK 22.11 reads the rule files only when both are given (else its built-in table)
    assert "--rule_ipv4=/tmp/dpgate-l3fwd.rules" in argv and "--rule_ipv6=/tmp/dpgate-l3fwd.rules6" in argv
    v6 = node.inputs[node.calls.index(["tee", "/tmp/dpgate-l3fwd.rules6"])]
    assert v6.strip() and all(line.startswith("R2001:2:") for line in v6.splitlines())


def test_ovs_dpdk_pmd_mask_ports_and_xconnect_flows():
    ovs = OvsDpdk(RecordingNode(), load_topology(TOPO).dut, C2)
    cfg = ovs.configure_commands()
    assert ovs_vsctl_set("pmd-cpu-mask=0xc") in cfg
    assert ovs_vsctl_set("dpdk-init=true") in cfg
    start = ovs.start_commands()
    assert any("options:dpdk-devargs=0000:18:00.1" in c for c in start)
    assert ["ovs-ofctl", "add-flow", "dpgbr0", "in_port=dpdk0,actions=output:dpdk1"] in start
    assert ["ovs-ofctl", "add-flow", "dpgbr0", "in_port=dpdk1,actions=output:dpdk0"] in start


def test_ovs_dump_ports_parsing():
    text = (
        "OFPST_PORT reply (xid=0x2): 2 ports\n"
        '  port  "dpdk0": rx pkts=1000, bytes=64000, drop=3, errs=0, frame=0, over=0, crc=0\n'
        "           tx pkts=990, bytes=63360, drop=0, errs=0, coll=0\n"
    )
    p = parse_dump_ports(text)
    assert p["dpdk0"]["rx_pkts"] == 1000 and p["dpdk0"]["rx_drop"] == 3 and p["dpdk0"]["tx_pkts"] == 990


def test_missing_pci_is_a_config_error():
    dut = load_topology(TOPO).dut
    port0 = dataclasses.replace(dut.ports[0], pci=None)
    dut = dataclasses.replace(dut, interfaces={"port0": port0, "port1": dut.ports[1]})
    with pytest.raises(ConfigError, match="pci"):
        Testpmd(RecordingNode(), dut, C2).argv()


def test_lab_example_topology_validates_and_has_what_drivers_need():
    topo = load_topology(TOPO)
    assert topo.kind == "lab-2node" and topo.tg.trex.server and topo.tg.trex.client_path
    assert all(p.pci and p.pps_limit and p.numa is not None for p in topo.tg.ports)
    assert topo.dut.ssh.password_env and topo.dut.main_cpu not in topo.dut.cpus
    assert all(p.pci and p.numa == topo.dut.numa for p in topo.dut.ports)
