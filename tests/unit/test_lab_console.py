"""The console service mode (a SUT that is our child, driven through its stdin) and the lab
testpmd driver's interactive options, which the embedded testpmd-io/testpmd-mac SUTs use.

The console tests run a real small interactive program (python3 printing a prompt), so
what a real child does (prints, dies with a signal, ignores a closed stdin) is real.
"""

from __future__ import annotations

import os
import signal
import sys

import pytest
from test_lab_vpp import RecordingNode

from dpgate.config.topology import load_topology
from dpgate.exec.remote import LocalNode
from dpgate.model.errors import ConfigError, SutError
from dpgate.testbeds.lab import console, service
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.testpmd import Testpmd

LOCAL = os.path.join(os.path.dirname(__file__), "..", "..", "topologies", "lab-local.yaml")
ONE_CPU = CoreAllocation(main=1, workers=(1,), phy_cores=1, threads_per_core=1, numa=0)
#: prints a prompt, answers each line with "got <line>" and a new prompt, exits on "quit"
SHELL = (
    "import sys\n"
    "print('ready> ', end='', flush=True)\n"
    "for line in sys.stdin:\n"
    "    if line.strip() == 'quit':\n"
    "        break\n"
    "    print('got ' + line.strip()); print('ready> ', end='', flush=True)\n"
)


def test_interactive_testpmd_argv_mac_peers_by_dpdk_port_id():
    dut = load_topology(LOCAL, prefix="zz-").dut
    peers = ["02:00:00:00:00:11", "02:00:00:00:00:12"]
    tp = Testpmd(RecordingNode(), dut, ONE_CPU, mode="mac", eth_peers=peers, interactive=True)
    app = tp.argv()[tp.argv().index("--") + 1 :]
    assert app[:2] == ["-i", "--record-core-cycles"] and "--stats-period=1" not in app
    assert "--forward-mode=mac" in app
    assert [a for a in app if a.startswith("--eth-peer=")] == [
        f"--eth-peer=0,{peers[0]}",
        f"--eth-peer=1,{peers[1]}",
    ]
    lab = Testpmd(RecordingNode(), dut, ONE_CPU).argv()
    assert "-i" not in lab and lab[-1] == "--stats-period=1" and "--forward-mode=io" in lab


def test_noisy_engine_is_io_only_and_modes_are_checked():
    dut = load_topology(LOCAL, prefix="zz-").dut
    argv = Testpmd(RecordingNode(), dut, ONE_CPU, noise_reads=5, interactive=True).argv()
    assert "--forward-mode=noisy" in argv and "--noisy-lkup-num-reads=5" in argv
    with pytest.raises(ConfigError, match="io forwarding"):
        Testpmd(RecordingNode(), dut, ONE_CPU, mode="mac", noise_reads=5)
    with pytest.raises(ConfigError, match="rxonly"):
        Testpmd(RecordingNode(), dut, ONE_CPU, mode="rxonly")


def test_console_commands_exit_status_and_stop(tmp_path):
    node = LocalNode()
    node._dpgate_service_mode = "console"  # type: ignore[attr-defined]
    log = str(tmp_path / "shell.log")
    console.start_console(node, "zz-shell", [sys.executable, "-u", "-c", SHELL], log)
    assert service.unit_active(node, "zz-shell") == "active"
    out = service.unit_command(node, "zz-shell", "show", until="ready>", timeout=10)
    assert "got show" in out and "ready>" in out
    with pytest.raises(SutError, match="'never' not seen"):
        service.unit_command(node, "zz-shell", "x", until="never", timeout=0.2)
    proc = console.console_process(node, "zz-shell")
    assert proc is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(5)
    assert service.unit_active(node, "zz-shell") == "dead (signal 9)"
    with pytest.raises(SutError, match=r"not running \(dead \(signal 9\)\)"):
        service.unit_command(node, "zz-shell", "show", until="ready>")
    service.stop_unit(node, "zz-shell")
    assert service.unit_active(node, "zz-shell") == "not started"
    service.stop_unit(node, "zz-shell")  # idempotent


def test_console_quit_is_asked_first(tmp_path):
    node = LocalNode()
    log = str(tmp_path / "shell.log")
    console.start_console(node, "zz-shell", [sys.executable, "-u", "-c", SHELL], log)
    proc = console.console_process(node, "zz-shell")
    console.stop_console(node, "zz-shell")
    assert proc is not None and proc.returncode == 0  # it quit on its own: no signal needed


def test_console_refuses_a_remote_node_and_a_missing_program(tmp_path):
    with pytest.raises(SutError, match="LocalNode"):
        console.start_console(RecordingNode(), "zz-x", ["dpdk-testpmd"], str(tmp_path / "x.log"))
    with pytest.raises(Exception, match="not found"):
        console.start_console(LocalNode(), "zz-x", ["no-such-program-zz"], str(tmp_path / "x.log"))
    node = RecordingNode()
    node._dpgate_service_mode = "daemon"
    with pytest.raises(SutError, match="console service only"):
        service.unit_command(node, "zz-x", "show", until=">")
