"""TRex server config and command line (no TRex needed; the real server runs in
tests/integration/test_tx_trex.py)."""

from __future__ import annotations

import pytest
import yaml

from dpgate.config.topology import load_topology
from dpgate.model.errors import ConfigError, EnvironmentProblem
from dpgate.traffic.trex.install import trex_dir
from dpgate.traffic.trex.server import TrexPort, TrexServer, ports_from_topology, render_config

A = TrexPort("af_packet", "02:00:00:00:00:01", "02:00:00:00:00:11", iface="tx-t0")
M = TrexPort("memif", "02:00:00:00:00:02", "02:00:00:00:00:12", memif_socket="/tmp/x/memif.sock", memif_id=1)


def test_af_packet_and_memif_ports_give_vdevs_low_end_and_port_info():
    cfg = yaml.safe_load(render_config([A, M], core=0))[0]
    assert cfg["interfaces"] == [
        "--vdev=net_af_packet0,iface=tx-t0,blocksz=4096,framesz=2048,framecnt=8192,qdisc_bypass=1",
        "--vdev=net_memif1,role=server,id=1,socket-abstract=no,socket=/tmp/x/memif.sock",
    ]
    assert cfg["low_end"] is True and cfg["low_end_core"] == 0 and cfg["port_limit"] == 2
    assert cfg["port_info"][1] == {"src_mac": "02:00:00:00:00:02", "dest_mac": "02:00:00:00:00:12"}


def test_pci_ports_are_addresses_without_low_end():
    p = TrexPort("pci", "3c:fd:fe:00:00:01", "3c:fd:fe:00:01:01", pci="0000:86:00.0")
    cfg = yaml.safe_load(render_config([p, p], core=3))[0]
    assert cfg["interfaces"] == ["0000:86:00.0", "0000:86:00.0"] and "low_end" not in cfg


def test_bad_kind_and_no_ports_are_refused():
    with pytest.raises(ConfigError, match="kind must be one of af_packet, memif, pci"):
        render_config([TrexPort("tap", "a", "b")], 0)
    with pytest.raises(ConfigError, match="at least one TG port"):
        render_config([], 0)


def test_lab_topology_ports_and_dest_macs_from_the_dut_side():
    topo = load_topology("topologies/lab-2node.example.yaml")
    ports = ports_from_topology(topo)
    assert [p.kind for p in ports] == ["pci", "pci"] and ports[0].pci == "0000:86:00.0"
    assert ports[0].dest_mac == "3c:fd:fe:00:01:01" and ports[1].dest_mac == "3c:fd:fe:00:01:02"


def test_argv_is_a_list_in_the_namespace_with_hdrh():
    srv = TrexServer([A], "tx-tg", 0, "/tmp/dpgate-tx-unit", trex="/opt/trex")
    argv = srv.argv()
    assert argv[:5] == ["ip", "netns", "exec", "tx-tg", "/opt/trex/trex-sw-server"]
    assert argv[5:] == [
        "-i",
        "--cfg",
        "/tmp/dpgate-tx-unit/trex/trex_cfg.yaml",
        "-c",
        "1",
        "--software",
        "--no-key",
        "--iom",
        "0",
        "--hdrh",
    ]


def test_missing_trex_says_how_to_provide_it(tmp_path):
    with pytest.raises(
        EnvironmentProblem, match=r"TRex not found at .*: set DPGATE_TREX=<dir> or run .ci/install"
    ):
        trex_dir({"DPGATE_TREX": str(tmp_path)})
    (tmp_path / "trex-sw-server").write_text("#!/bin/sh\n")
    assert trex_dir({"DPGATE_TREX": str(tmp_path)}) == tmp_path


def test_wait_ready_reports_a_dead_server_with_its_log(tmp_path):
    import subprocess
    import sys

    srv = TrexServer([A], None, 0, str(tmp_path), trex=str(tmp_path), server="127.0.0.1", sync_port=1)
    srv.dir.mkdir(parents=True)
    srv.log_path.write_text("EAL: core 2 unavailable\nEAL: Invalid 'command line' arguments.\n")
    srv.proc = subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"])
    srv.proc.wait()
    with pytest.raises(EnvironmentProblem, match="exited with code 1 while starting.*core 2 unavailable"):
        srv.wait_ready(5)


def test_trex_swapping_yaml_in_sys_modules_is_undone(tmp_path):
    """What trex/__init__.py does (bundled PyYAML 3.11 replaces ours), simulated."""
    import sys
    import types

    import yaml as ours

    from dpgate.traffic.trex.install import import_trex_api

    def importer(name):
        bundled = types.ModuleType("yaml")
        bundled.__path__ = ["/trex/external_libs/pyyaml-3.11/python3/yaml"]
        for k in [k for k in sys.modules if k == "yaml" or k.startswith("yaml.")]:
            del sys.modules[k]
        sys.modules["yaml"] = bundled
        sys.modules["yaml.bundled_only"] = types.ModuleType("yaml.bundled_only")
        return "API"

    before = {k: v for k, v in sys.modules.items() if k == "yaml" or k.startswith("yaml.")}
    try:
        assert import_trex_api(str(tmp_path), importer) == "API"
    finally:
        sys.path.remove(str(tmp_path))
    after = {k: v for k, v in sys.modules.items() if k == "yaml" or k.startswith("yaml.")}
    assert after == before and sys.modules["yaml"] is ours


def test_a_server_started_by_another_process_is_watched_by_its_pid_file(tmp_path):
    import subprocess
    import sys

    from dpgate.traffic.trex.server import RunningTrex

    assert RunningTrex.attach(str(tmp_path)) is None and RunningTrex.attach(None) is None
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    (tmp_path / "trex").mkdir()
    (tmp_path / "trex" / "server.pid").write_text(f"{proc.pid}\n")
    handle = RunningTrex.attach(str(tmp_path))
    assert handle is not None and handle.alive()
    proc.kill()
    proc.wait()
    assert not handle.alive() and f"pid {proc.pid} is gone" in handle.describe_exit()
    assert RunningTrex.attach(str(tmp_path)) is None
