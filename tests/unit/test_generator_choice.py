"""Which generator a run uses: dpgen when built, tcpreplay when asked for or when dpgen is not
built; the command line over the topology's ``generator``; an unknown one refused by name."""

from __future__ import annotations

import argparse

import pytest

from dpgate.config.topology import load_topology
from dpgate.model.errors import ConfigError, EnvironmentProblem
from dpgate.traffic import choice


def test_generator_choice(monkeypatch, tmp_path):
    monkeypatch.setenv("DPGATE_DPGEN", str(tmp_path / "missing"))
    assert choice.generator_kind(None) == "tcpreplay" and choice.generator_kind("auto") == "tcpreplay"
    with pytest.raises(EnvironmentProblem, match=r"dpgen not found .*run 'bash .ci/install'"):
        choice.generator_kind("dpgen")
    with pytest.raises(ConfigError, match="generator: expected 'dpgen' or 'tcpreplay'"):
        choice.generator_kind("trafgen")
    exe = tmp_path / "dpgen"
    exe.write_text("#!/bin/sh\necho dpgen 9.9\n")
    exe.chmod(0o755)
    monkeypatch.setenv("DPGATE_DPGEN", str(exe))
    assert choice.generator_kind(None) == "dpgen"
    choice._NAMES.pop("dpgen", None)
    assert choice.generator_name("dpgen") == "dpgen 9.9"
    choice._NAMES.pop("dpgen", None)


def test_generator_option_reaches_robot(tmp_path):
    from dpgate.cli.gate import robot_argv
    from dpgate.cli.main import build_parser

    args = build_parser().parse_args(["gate", "--outdir", str(tmp_path), "--generator", "tcpreplay"])
    assert "GENERATOR:tcpreplay" in robot_argv(args)
    args = build_parser().parse_args(["gate", "--outdir", str(tmp_path)])
    assert not any(a.startswith("GENERATOR:") for a in robot_argv(args))
    t = build_parser().parse_args(["trial", "--sut", "linux-ip4", "--rate", "1kpps", "--generator", "dpgen"])
    assert t.generator == "dpgen"
    with pytest.raises(SystemExit):
        with pytest.MonkeyPatch.context() as m:
            m.setattr(argparse.ArgumentParser, "exit", lambda *a, **k: (_ for _ in ()).throw(SystemExit(2)))
            build_parser().parse_args(["trial", "--sut", "x", "--rate", "1", "--generator", "pktgen"])


def _topology_with(tmp_path, generator: str) -> str:
    text = (
        open("topologies/embedded.yaml")
        .read()
        .replace("    generator: auto\n", f"    generator: {generator}\n")
    )
    path = tmp_path / "topo.yaml"
    path.write_text(text)
    return str(path)


def test_topology_generator_is_used_unless_the_command_line_names_one(tmp_path, monkeypatch):
    from dpgate.testbeds.embedded.session import EmbeddedSession

    monkeypatch.setattr(choice, "dpgen_binary", lambda: "/usr/bin/true")  # "built"
    monkeypatch.setattr(choice, "require_dpgen", lambda: "/usr/bin/true")
    topo = _topology_with(tmp_path, "tcpreplay")
    assert EmbeddedSession(topo, "linux-xconnect").generator_kind == "tcpreplay"
    assert EmbeddedSession(topo, "linux-xconnect", generator="auto").generator_kind == "tcpreplay"
    assert EmbeddedSession(topo, "linux-xconnect", generator="dpgen").generator_kind == "dpgen"
    assert EmbeddedSession("topologies/embedded.yaml", "linux-xconnect").generator_kind == "dpgen"


def test_topology_generator_must_be_a_known_one(tmp_path):
    with pytest.raises(ConfigError) as err:
        load_topology(_topology_with(tmp_path, "pktgen"))
    assert "generator" in str(err.value) and "pktgen" in str(err.value)
