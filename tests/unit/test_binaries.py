"""Choosing the build a SUT runs (``--sut-binary``, ``--baseline-binary``): parsing, the
drivers' argv, the embedded SUTs that take it, and the gate's command line."""

from __future__ import annotations

import os
import types

import pytest
from test_lab_vpp import RecordingNode

from dpgate.cli.main import build_parser
from dpgate.config.binaries import PROGRAMS, joined, parse_binaries
from dpgate.config.topology import load_topology
from dpgate.model.errors import ConfigError
from dpgate.testbeds.embedded.suts.base import sut_class
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.nfs import make_sut
from dpgate.testbeds.lab.testpmd import Testpmd

ONE_CPU = CoreAllocation(main=1, workers=(1,), phy_cores=1, threads_per_core=1, numa=0)


@pytest.fixture
def build(tmp_path):
    """A "built" program: an executable file (what a build directory holds)."""
    path = tmp_path / "app" / "dpdk-testpmd"
    path.parent.mkdir()
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


def test_an_entry_names_the_program_and_a_path_made_absolute(build, monkeypatch):
    monkeypatch.chdir(os.path.dirname(os.path.dirname(build)))
    got = parse_binaries("dpdk-testpmd=app/dpdk-testpmd", "sut_binary")
    assert got == {"dpdk-testpmd": build}
    assert parse_binaries(joined(got), "x") == got


@pytest.mark.parametrize(
    "text, says",
    [
        ("dpdk-testpmd", "must be NAME=PATH"),
        ("dpdk-testpmd=", "must be NAME=PATH"),
        ("vpp=/usr/bin/vpp", "not a program an embedded SUT runs"),
        ("dpdk-testpmd=/nonexistent/dpdk-testpmd", "no executable file there"),
    ],
)
def test_bad_entries_name_the_field_and_the_fix(text, says):
    with pytest.raises(ConfigError, match=says) as err:
        parse_binaries(text, "--sut-binary")
    assert err.value.path == "--sut-binary"


def test_a_file_that_is_not_executable_and_a_program_given_twice_are_refused(build):
    plain = build + ".txt"
    open(plain, "w").close()
    with pytest.raises(ConfigError, match="no executable file there"):
        parse_binaries(f"dpdk-testpmd={plain}", "f")
    with pytest.raises(ConfigError, match="given twice"):
        parse_binaries(f"dpdk-testpmd={build},dpdk-testpmd={build}", "f")


def test_lab_testpmd_runs_the_build_given_else_the_installed_one(build):
    dut = load_topology("topologies/lab-2node.example.yaml").dut
    assert Testpmd(RecordingNode(), dut, ONE_CPU).argv()[0] == "dpdk-testpmd"
    assert Testpmd(RecordingNode(), dut, ONE_CPU, binary=build).argv()[0] == build


def test_l3fwd_takes_the_build_as_its_only_driver_option(monkeypatch, build):
    topo = load_topology("topologies/lab-local.yaml", prefix="zz-")
    monkeypatch.setenv("DPGATE_L3FWD", "/bin/true")
    assert make_sut("l3fwd-ip4", RecordingNode(), topo, ONE_CPU).argv()[0] == "/bin/true"
    l3 = make_sut("l3fwd-ip4", RecordingNode(), topo, ONE_CPU, options={"binary": build})
    assert l3.argv()[0] == build
    with pytest.raises(ConfigError, match="takes no driver options"):
        make_sut("l3fwd-ip4", RecordingNode(), topo, ONE_CPU, options={"mode": "mac"})


@pytest.mark.parametrize("program, suts", sorted(PROGRAMS.items()))
def test_the_embedded_suts_running_a_program_take_its_build_and_no_other(program, suts, build):
    tb = types.SimpleNamespace(workdir="/tmp", sut_ns="x", sut_cpus=[1])
    for name in suts:
        sut = sut_class(name)(tb)
        assert sut.use_binaries({program: build}) == build and sut.binary == build
        other = next(p for p in PROGRAMS if p != program)
        assert sut.use_binaries({other: build}) is None and sut.binary is None
    kernel = sut_class("linux-xconnect")(tb)
    assert not hasattr(kernel, "use_binaries")  # the kernel's build is not ours to choose


def test_gate_command_line_passes_the_builds_checked(build):
    from dpgate.cli.gate import robot_argv
    from dpgate.cli.trial import check_binary_options

    p = build_parser()
    args = p.parse_args(
        [
            "gate",
            "--paired",
            "--sut-binary",
            f"dpdk-testpmd={build}",
            "--baseline-binary",
            f"dpdk-testpmd={build}",
        ]
    )
    check_binary_options(args, "embedded")
    argv = robot_argv(args)
    assert f"SUT_BINARY:dpdk-testpmd={build}" in argv and f"BASELINE_BINARY:dpdk-testpmd={build}" in argv
    assert not any("BINARY" in a for a in robot_argv(p.parse_args(["gate"])))
    with pytest.raises(ConfigError, match="add --paired") as err:
        check_binary_options(p.parse_args(["gate", "--baseline-binary", f"dpdk-testpmd={build}"]), "embedded")
    assert err.value.path == "--baseline-binary"
    with pytest.raises(ConfigError, match="set on its DUT"):
        check_binary_options(p.parse_args(["gate", "--sut-binary", f"dpdk-testpmd={build}"]), "lab")
    with pytest.raises(ConfigError, match="no executable file") as err:
        check_binary_options(p.parse_args(["gate", "--sut-binary", "dpdk-testpmd=/nope"]), "embedded")
    assert err.value.path == "--sut-binary"


def test_trial_command_line_takes_a_build(build):
    from dpgate.cli.trial import binaries_of

    args = build_parser().parse_args(
        ["trial", "--sut", "testpmd-io", "--rate", "50kpps", "--sut-binary", f"dpdk-testpmd={build}"]
    )
    assert binaries_of(args) == {"dpdk-testpmd": build}
