"""The six lab NFs for real on the lab on one machine, with traffic we control (tcpreplay).

Brings up ``topologies/lab-local.yaml`` (TG and DUT namespaces, veths, sshd in the DUT
namespace), reaches the DUT over real SSH with the generated key, starts each NF through its
driver (pinned to the DUT CPU), replays frames from the TG namespace out of TG port 0 (then
port 1) and counts what arrives on the OTHER TG port and what comes back on the sender's
(a frame back on the wrong port is lost, not delivered). Teardown leaves nothing.

Needs the VPP build (DPGATE_VPP or .vendor/ from .ci/install) and the l3fwd build; without
them the whole module skips with one line naming what is missing.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from helpers import local_topology

from dpgate.config.topology import load_topology
from dpgate.exec.remote import SshNode
from dpgate.testbeds.lab import vendor
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.local import LocalLab
from dpgate.testbeds.lab.nfs import LAB_NFS, lab_nf, make_sut
from dpgate.traffic.pcap import build_frame, write_pcap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = os.environ.get("DPGATE_LAB_TEST_PREFIX", "dpli-")
ONE_CPU = CoreAllocation(main=1, workers=(1,), phy_cores=1, threads_per_core=1, numa=0)
FRAMES, PPS = 6000, 20000

_missing = vendor.missing("VPP", "l3fwd")
pytestmark = pytest.mark.skipif(bool(_missing), reason="lab on one machine: " + "; ".join(_missing))


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    topo = load_topology(
        local_topology(tmp_path_factory.mktemp("topo"), "198.19.255.66", "198.19.255.70"), prefix=PREFIX
    )
    lab = LocalLab(topo)
    lab.up()
    node = SshNode(topo.dut.ssh)
    try:
        yield topo, node
    finally:
        node.close()
        assert lab.down() == []
        _assert_nothing_left(topo)


def _assert_nothing_left(topo) -> None:
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert topo.tg.namespace not in names and topo.dut.namespace not in names
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f" {topo.prefix}m" not in links and f" {topo.prefix}t0" not in links
    assert not os.path.exists(topo.run_dir)
    ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    ours = [line for line in ps.splitlines() if topo.run_dir in line and not line.startswith("Z")]
    assert ours == []


def _rx(topo, ifname: str) -> int:
    out = subprocess.run(
        ["ip", "netns", "exec", topo.tg.namespace, "cat", f"/sys/class/net/{ifname}/statistics/rx_packets"],
        capture_output=True,
        text=True,
    )
    return int(out.stdout)


def _send(topo, tmp_path, out_if: str, frames) -> int:
    pcap = str(tmp_path / f"{out_if}.pcap")
    write_pcap(pcap, frames)
    loops = FRAMES // len(frames)
    subprocess.run(
        [
            "ip",
            "netns",
            "exec",
            topo.tg.namespace,
            "taskset",
            "-c",
            "0",
            "tcpreplay",
            "-q",
            "-K",
            "-i",
            out_if,
            f"--pps={PPS}",
            f"--loop={loops}",
            pcap,
        ],
        check=True,
        capture_output=True,
    )
    return loops * len(frames)


@pytest.mark.parametrize("nf", list(LAB_NFS))
def test_nf_forwards_each_direction_to_the_other_port(lab, nf, tmp_path):
    topo, node = lab
    spec = lab_nf(nf)
    sut = make_sut(nf, node, topo, ONE_CPU, flows=16)
    (tg0, d0), (tg1, d1) = topo.pairs()
    try:
        sut.configure()
        sut.start()
        assert sut.alive() == "active"
        pid = node.run(["cat", f"/run/dpgate/{sut.unit}.pid"]).stdout.strip()
        allowed = node.run(["taskset", "-pc", pid]).stdout
        assert allowed.strip().endswith(": 1"), allowed  # the SUT runs on the DUT CPU only
        time.sleep(1)
        for a_tg, a_d, b_tg, src, dst in (
            (tg0, d0, tg1, "198.18.0.", "198.19.0."),
            (tg1, d1, tg0, "198.19.0.", "198.18.0."),
        ):
            dmac = b_tg.mac if spec.traffic == "l2" else a_d.mac
            frames = [build_frame(a_tg.mac, dmac, f"{src}{i + 1}", f"{dst}{i + 1}", 64) for i in range(16)]
            before_b, before_a = _rx(topo, b_tg.name), _rx(topo, a_tg.name)
            sent = _send(topo, tmp_path, a_tg.name, frames)
            time.sleep(0.5)
            got, back = _rx(topo, b_tg.name) - before_b, _rx(topo, a_tg.name) - before_a
            assert back == 0, f"{nf}: {back} frames came back on {a_tg.name}"
            assert got >= 0.99 * sent, f"{nf}: {a_tg.name} -> {b_tg.name}: {got} of {sent}"
            assert got <= sent
    finally:
        sut.stop()
    assert sut.alive() != "active"
