"""Virtual ports (af_packet, memif) in the topology and the SUT drivers; the lab on one machine's
model; what the real software refuses (VPP CLI errors read from the output, l3fwd's rule files,
DPDK port order, OVS-DPDK without hugepages) against fakes that refuse the same.

Real outputs used here were captured from the real programs in the local lab
(tests/fixtures/lab/: DPDK 22.11.11 testpmd and l3fwd on af_packet; VPP 26.10 CLI errors).
"""

from __future__ import annotations

import os
import subprocess

import pytest
import yaml
from helpers import ovs_vsctl_set

from dpgate.config.topology import Interface, Memif, load_topology, topology_from_data
from dpgate.exec.remote import LocalNode, Result
from dpgate.model.errors import ConfigError, SutError
from dpgate.testbeds.lab import ports, service
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.nfs import make_sut
from dpgate.testbeds.lab.ovs_dpdk import OvsDpdk, socket_mem
from dpgate.testbeds.lab.vpp import Vpp, check_cli_output, cli_lines, create_lines, startup_conf, vpp_ifname

HERE = os.path.dirname(__file__)
ROOT = os.path.join(HERE, "..", "..")
LOCAL = os.path.join(ROOT, "topologies", "lab-local.yaml")
EXAMPLE = os.path.join(ROOT, "topologies", "lab-2node.example.yaml")
FIX = os.path.join(HERE, "..", "fixtures", "lab")
ONE_CPU = CoreAllocation(main=1, workers=(1,), phy_cores=1, threads_per_core=1, numa=0)


def local_data():
    with open(LOCAL, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def err_of(data) -> ConfigError:
    with pytest.raises(ConfigError) as ei:
        topology_from_data(data, source="lab.yaml")
    assert "\n" not in str(ei.value)
    return ei.value


# -- topology -----------------------------------------------------------------


def test_lab_local_expands_prefix_and_run_dir():
    topo = load_topology(LOCAL, prefix="zz-")
    assert (topo.tg.namespace, topo.dut.namespace) == ("zz-tg", "zz-dut")
    assert [p.name for p in topo.dut.ports] == ["zz-d0", "zz-d1"] and topo.dut.ports[
        0
    ].port_kind == "af_packet"
    assert topo.dut.ssh.key_file == "/tmp/dpgate-zz/ssh/id_ed25519" == topo.run_dir + "/ssh/id_ed25519"
    assert topo.dut.ssh.known_hosts == "/tmp/dpgate-zz/ssh/known_hosts"
    # traffic and link addresses stay in the RFC 2544 range, away from the profiles' flows
    for p in topo.tg.ports + topo.dut.ports:
        assert p.ip4.startswith("198.18.24")


@pytest.mark.parametrize(
    "edit, path, words",
    [
        (lambda p: p.update(kind="memif"), "memif", "kind memif needs memif"),
        (lambda p: p.update(memif={"socket": "/tmp/x.sock"}), "memif", "need kind: memif"),
        (lambda p: p.update(kind="pci"), "pci", "kind pci needs a PCI address"),
        (lambda p: p.update(pci="0000:18:00.0"), "pci", "has no PCI address"),
        (lambda p: p.update(kind="vhost"), "kind", "one of 'pci', 'af_packet', 'memif'"),
        (
            lambda p: p.update(kind="memif", memif={"socket": "rel.sock"}),
            "memif.socket",
            "absolute socket path",
        ),
        (
            lambda p: p.update(kind="memif", memif={"socket": "/s", "role": "master"}),
            "memif.role",
            "'server', 'client'",
        ),
    ],
)
def test_bad_port_kinds_name_the_field(edit, path, words):
    d = local_data()
    edit(d["nodes"]["DUT1"]["interfaces"]["port0"])
    err = err_of(d)
    assert err.path == f"nodes.DUT1.interfaces.port0.{path}" and words in err.reason


def test_memif_port_loads():
    d = local_data()
    d["nodes"]["DUT1"]["interfaces"]["port0"].update(
        kind="memif", memif={"socket": "{run_dir}/memif/l1.sock", "id": 2}
    )
    port = topology_from_data(d, prefix="zz-").dut.ports[0]
    assert port.memif == Memif("/tmp/dpgate-zz/memif/l1.sock", 2, "client")


# -- DPDK EAL -----------------------------------------------------------------


def test_eal_for_af_packet_ports_without_pci_or_hugepages():
    topo = load_topology(LOCAL, prefix="zz-")
    argv = ports.eal_args(ONE_CPU, topo.dut.ports, "zz-testpmd")
    assert argv[:3] == ["--lcores=0@1,1@1", "--main-lcore", "0"]  # testpmd never forwards on its main lcore
    assert "--no-pci" in argv and argv[argv.index("--no-huge") + 1 : argv.index("--no-huge") + 3] == [
        "-m",
        "1024",
    ]
    assert (
        "--vdev=net_af_packet0,iface=zz-d0,blocksz=131072,framesz=2048,framecnt=4096,qdisc_bypass=1" in argv
    )
    assert not any(a == "-a" for a in argv)


def test_eal_for_pci_ports_is_unchanged():
    topo = load_topology(EXAMPLE)
    argv = ports.eal_args(CoreAllocation(1, (2, 3), 2, 1, 0), topo.dut.ports, "p")
    assert (
        argv[:4] == ["-l", "1,2,3", "--main-lcore", "1"]
        and "--no-huge" not in argv
        and "--no-pci" not in argv
    )
    assert argv[-4:] == ["-a", "0000:18:00.0", "-a", "0000:18:00.1"]


def test_port_without_pci_or_kind_is_one_clear_error():
    with pytest.raises(ConfigError, match="no pci address and no kind"):
        ports.eal_args(ONE_CPU, [Interface("eth0", "02:00:00:00:00:01", "l1")], "p")


def test_dpdk_numbers_pci_ports_in_bus_order_and_the_log_check_catches_a_swap():
    a = Interface("a", "02:00:00:00:00:01", "l1", pci="0000:86:00.0")
    b = Interface("b", "02:00:00:00:00:02", "l2", pci="0000:18:00.0")
    assert ports.dpdk_port_ids([a, b]) == {1: 0, 0: 1}
    ports.check_port_macs("Port 0: 02:00:00:00:00:02\nPort 1: 02:00:00:00:00:01\n", [a, b], "testpmd")
    with pytest.raises(SutError, match="DPDK port 0 has MAC 02:00:00:00:00:01"):
        ports.check_port_macs("Port 0: 02:00:00:00:00:01\nPort 1: 02:00:00:00:00:02\n", [b, a], "x")


@pytest.mark.parametrize("log", ["testpmd-af_packet.log", "l3fwd-af_packet.log"])
def test_real_dpdk_logs_confirm_the_port_order(log):
    text = open(os.path.join(FIX, log)).read()
    topo = load_topology(LOCAL, prefix="lb-")  # the run that wrote the fixtures
    ports.check_port_macs(text, topo.dut.ports, log)
    swapped = [topo.dut.ports[1], topo.dut.ports[0]]
    with pytest.raises(SutError, match="another order"):
        ports.check_port_macs(text, swapped, log)


def test_l3fwd_runs_on_one_lcore_and_writes_both_rule_files(monkeypatch):
    from test_lab_vpp import RecordingNode

    topo = load_topology(LOCAL, prefix="zz-")
    node = RecordingNode()
    monkeypatch.setenv("DPGATE_L3FWD", "/bin/true")  # make_sut asks for the binary of a local lab
    l3 = make_sut("l3fwd-ip4", node, topo, ONE_CPU)
    argv = l3.argv()
    assert argv[1:5] == ["-l", "1", "--main-lcore", "1"] and "--config=(0,0,1),(1,0,1)" in argv
    l3.configure()
    files = {c[1]: node.inputs[i] for i, c in enumerate(node.calls) if c[0] == "tee"}
    assert files["/tmp/dpgate-zz/dut/l3fwd.rules"] == "R198.19.0.0/16 1\nR198.18.0.0/16 0\n"
    assert files["/tmp/dpgate-zz/dut/l3fwd.rules6"].startswith("R2001:2:")
    assert l3.unit == "zz-dpgate-l3fwd"


# -- VPP ----------------------------------------------------------------------


class VppCli:
    """FAKE vppctl: accepts the lines the real VPP 26.10 accepted in the local lab, answers every
    other line with the real error texts (vppctl exits 0 either way)."""

    ERRORS = {
        "frob": "unknown input `frobnicate'\r\n",
        "host-nope": "set interface state: unknown interface `host-nope up'\r\n",
        "tx nope": "test l2patch: tx interface not set\r\n",
        "bridge host-zz-d0 x": "set interface l2 bridge: expected bridge domain ID `x'\r\n",
    }

    def __init__(self):
        self.calls = []

    def run(self, argv, timeout=30.0, check=True, sudo=None, input=None):
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        line = " ".join(argv[3:]) if "vppctl" in argv[0] else ""
        out = next((v for k, v in self.ERRORS.items() if k in line), "")
        if line.startswith("show version"):
            out = "vpp v26.10-rc0~374-gb575ec2c5 built by root\r\n"
        if argv[:2] == ["systemctl", "show"]:
            out = "5f2d0c1e\n"
        return Result(argv, 0, out, "")


def test_vppctl_errors_are_read_from_the_output():
    for text in VppCli.ERRORS.values():
        with pytest.raises(SutError, match="VPP refused"):
            check_cli_output("x", text)
    assert check_cli_output("create bridge-domain 1", "bridge-domain 1\r\n") == "bridge-domain 1\r\n"
    assert check_cli_output("create host-interface name zz-d0", "host-zz-d0\r\n")


def test_vpp_local_lab_creates_host_interfaces_and_stops_at_a_refused_line(monkeypatch):
    topo = load_topology(LOCAL, prefix="zz-")
    monkeypatch.setattr("dpgate.testbeds.lab.vendor.vpp_dir", lambda: "/opt/vpp")
    node = VppCli()
    vpp = make_sut("vpp-l2bd", node, topo, ONE_CPU)
    assert isinstance(vpp, Vpp) and vpp.unit == "zz-dpgate-vpp"
    vpp.configure()
    vpp.start(timeout_s=1)
    lines = [" ".join(c[3:]) for c in node.calls if c[0] == "/opt/vpp/bin/vppctl"]
    assert "create host-interface name zz-d0 hw-addr 02:fe:00:00:00:20" in lines
    assert "set interface promiscuous on host-zz-d0" in lines
    assert "l2fib add 02:fe:00:00:00:11 1 host-zz-d1 static" in lines  # TG port 1's MAC behind DUT port 1
    assert "set interface rx-mode host-zz-d1 polling" in lines
    vpp.routes, vpp.nf = [], "l2patch"
    node.ERRORS = {**VppCli.ERRORS, "test l2patch": "test l2patch: tx interface not set\r\n"}
    with pytest.raises(SutError, match="VPP refused 'test l2patch rx host-zz-d0 tx host-zz-d1'"):
        vpp.start(timeout_s=1)


def test_vpp_startup_conf_without_hugepages_for_virtual_ports():
    text = startup_conf(ONE_CPU, [], runtime_dir="/tmp/dpgate-zz/dut/vpp")
    for stanza in (
        "main-heap-page-size 4k",
        "page-size 4k",
        "plugin af_packet_plugin.so { enable }",
        "socket-name /tmp/dpgate-zz/dut/vpp/api.sock",
        "runtime-dir /tmp/dpgate-zz/dut/vpp",
    ):
        assert stanza in text
    assert "dpdk" not in text and "corelist-workers" not in text  # the worker is the main thread
    assert text.count("{") == text.count("}")


def test_vpp_names_and_creates_memif_ports():
    m = Interface("m0", "02:fe:00:00:00:20", "l1", kind="memif", memif=Memif("/tmp/m.sock", 0))
    n = Interface("m1", "02:fe:00:00:00:21", "l2", kind="memif", memif=Memif("/tmp/m.sock", 1))
    assert [vpp_ifname(m), vpp_ifname(n)] == ["memif1/0", "memif1/1"]
    assert create_lines([m, n]) == [
        "create memif socket id 1 filename /tmp/m.sock",
        "create interface memif id 0 socket-id 1 slave hw-addr 02:fe:00:00:00:20",
        "create interface memif id 1 socket-id 1 slave hw-addr 02:fe:00:00:00:21",
    ]
    assert cli_lines("l2patch", ["memif1/0", "memif1/1"])[-1] == "test l2patch rx memif1/1 tx memif1/0"


# -- OVS-DPDK -----------------------------------------------------------------


def test_ovs_socket_mem_covers_the_ports_numa_node():
    assert socket_mem(0) == "1024" and socket_mem(1) == "0,1024" and socket_mem(2, 512) == "0,0,512"
    topo = load_topology(EXAMPLE)
    ovs = OvsDpdk(None, topo.dut, CoreAllocation(1, (2,), 1, 1, 1))
    assert ovs_vsctl_set("dpdk-socket-mem=1024") in ovs.configure_commands()  # the example DUT says numa: 0


def test_ovs_private_instance_for_virtual_ports():
    topo = load_topology(LOCAL, prefix="zz-")
    ovs = OvsDpdk(None, topo.dut, ONE_CPU, state_dir="/tmp/dpgate-zz/dut/ovs")
    cfg = ovs.configure_commands()
    # --no-huge implies legacy memory; without --legacy-mem OVS adds --in-memory, which EAL refuses with it
    assert (
        cfg[-1][-1]
        == "other_config:dpdk-extra=--no-huge --legacy-mem -m 1024 --no-pci --file-prefix dpgate-ovs"
    )
    assert all(c[1] == "--db=unix:/tmp/dpgate-zz/dut/ovs/db.sock" for c in cfg)
    start = ovs.start_commands()
    assert not any(c[0] == "systemctl" for c in start)  # the shared host's OVS service is never touched
    add = [c for c in start if "add-port" in c]
    assert (
        "options:dpdk-devargs=net_af_packet0,iface=zz-d0,blocksz=131072,framesz=2048,framecnt=4096,qdisc_bypass=1"
        in add[0]
        and "options:dpdk-devargs=net_af_packet1,iface=zz-d1" in add[1][add[1].index("type=dpdk") + 1]
    )
    assert start[-1] == [
        "ovs-ofctl",
        "add-flow",
        "unix:/tmp/dpgate-zz/dut/ovs/dpgbr0.mgmt",
        "in_port=dpdk1,actions=output:dpdk0",
    ]


def test_ovs_service_stop_turns_dpdk_off_and_restarts():
    from test_lab_vpp import RecordingNode

    node = RecordingNode()
    OvsDpdk(node, load_topology(EXAMPLE).dut, CoreAllocation(1, (2,), 1, 1, 0)).stop()
    assert ovs_vsctl_set("dpdk-init=false") in node.calls
    assert node.calls[-1] == ["systemctl", "restart", "openvswitch-switch"]


# -- services without systemd ---------------------------------------------------


class NoSystemd:
    """FAKE node without systemd: `test -d /run/systemd/system` fails; /proc/<pid>/stat as given."""

    def __init__(self, stat):
        self.calls, self.stat = [], stat

    def run(self, argv, timeout=30.0, check=True, sudo=None, input=None):
        argv = [str(a) for a in argv]
        self.calls.append(argv)
        if argv[:2] == ["test", "-d"]:
            return Result(argv, 1, "", "")
        if argv[0] == "which":
            return Result(argv, 0, "/usr/bin/dpdk-testpmd\n", "")
        if argv[:2] == ["cat", "/run/dpgate/u.pid"]:
            return Result(argv, 0, "4242\n", "")
        if argv[:2] == ["cat", "/proc/4242/stat"]:
            return Result(argv, 0 if self.stat else 1, self.stat, "")
        return Result(argv, 0, "", "")


def test_a_local_daemons_liveness_reads_its_files_in_place(tmp_path, monkeypatch):
    """On this machine (a LocalNode, any network namespace) the pid file and /proc/<pid>/stat
    are read directly, with no process per check; a remote node still gets ``cat``."""
    monkeypatch.setattr(service, "STATE_DIR", str(tmp_path))
    ran = []
    node = LocalNode(ns="no-such-ns")  # a namespace that does not exist: any command would fail
    node._dpgate_service_mode = "daemon"  # as the embedded lab-driver SUTs set it
    monkeypatch.setattr(node, "run", lambda argv, **kw: ran.append(argv))
    assert service.unit_active(node, "u") == "not started"
    child = subprocess.Popen(["sleep", "30"])
    try:
        (tmp_path / "u.pid").write_text(f"{child.pid}\n")
        assert service.unit_active(node, "u") == "active"
        child.kill()
        child.wait()
        assert service.unit_active(node, "u") == "dead"  # reaped: its /proc entry is gone
    finally:
        child.kill()
    assert ran == []
    remote = NoSystemd("4242 (dpdk-testpmd) R 1 4242 ...")
    assert service.read_text(remote, "/run/dpgate/u.pid") == "4242\n"
    assert remote.calls == [["cat", "/run/dpgate/u.pid"]]


def test_start_stop_daemon_without_systemd_and_zombies_are_dead():
    node = NoSystemd("4242 (dpdk-testpmd) R 1 4242 ...")
    service.start_unit(node, "u", ["dpdk-testpmd", "-v"])
    start = node.calls[-1]
    assert start[:2] == ["start-stop-daemon", "--start"] and start[start.index("--exec") + 1 :] == [
        "/usr/bin/dpdk-testpmd",
        "--",
        "-v",
    ]
    assert ["truncate", "-s", "0", "/run/dpgate/u.log"] in node.calls  # one run per log
    assert service.unit_active(node, "u") == "active"
    node.stat = "4242 (dpdk-testpmd) Z 1 4242 ..."  # PID 1 that does not reap
    assert service.unit_active(node, "u") == "dead (zombie)"
    node.stat = ""
    assert service.unit_active(node, "u") == "dead"
    service.stop_unit(node, "u")
    assert node.calls[-1][:4] == ["start-stop-daemon", "--stop", "--pidfile", "/run/dpgate/u.pid"]


def test_systemd_log_is_filtered_to_the_current_invocation():
    from test_lab_vpp import RecordingNode

    node = RecordingNode()
    service.start_unit(node, "dpgate-vpp", ["vpp", "-c", "x"])
    service.unit_log(node, "dpgate-vpp")
    assert node.calls[-1][:4] == ["journalctl", "-u", "dpgate-vpp", "_SYSTEMD_INVOCATION_ID=5f2d0c1e9a7b4c3d"]


def test_a_unit_without_invocation_id_is_refused():
    class NoId:
        def run(self, argv, **kw):
            return Result(list(argv), 0, "", "")

    with pytest.raises(SutError, match="no InvocationID"):
        service.start_unit(NoId(), "dpgate-vpp", ["vpp"])


def test_missing_vendor_tools_are_one_line_each(monkeypatch, tmp_path):
    from dpgate.testbeds.lab import vendor

    monkeypatch.setenv("DPGATE_VPP", str(tmp_path))
    monkeypatch.setenv("DPGATE_TREX", str(tmp_path))
    lines = vendor.missing("VPP", "TRex")
    assert len(lines) == 2 and all("\n" not in x for x in lines)
    assert "DPGATE_VPP" in lines[0] and "DPGATE_VENDOR" in lines[0] and "DPGATE_TREX" in lines[1]
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "vpp").write_text("")
    assert vendor.missing("VPP") == []
