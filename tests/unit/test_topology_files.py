"""Topology files: YAML syntax errors and tab indents name the line, a missing or empty file
is named, and a bad field read from a file names the file and the field's path."""

from __future__ import annotations

import os

import pytest
import yaml

from dpgate.config.topology import load_topology
from dpgate.model.errors import ConfigError

EMBEDDED = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "topologies",
    "embedded.yaml",
)


@pytest.fixture(autouse=True)
def _no_env_prefix(monkeypatch):
    monkeypatch.delenv("DPGATE_PREFIX", raising=False)


def test_yaml_syntax_error_names_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("name: x\nkind: embedded\nnodes:\n  TG: {type: TG\n  DUT1: [\n")
    with pytest.raises(ConfigError) as ei:
        load_topology(str(p))
    err = ei.value
    assert err.source == str(p)
    assert err.path.startswith("line ") and ", column " in err.path
    line = int(err.path.split()[1].rstrip(","))
    assert 4 <= line <= 6
    assert "not valid YAML" in err.reason


def test_yaml_tab_indent_error_line(tmp_path):
    p = tmp_path / "tabs.yaml"
    p.write_text("name: x\nkind: embedded\nnodes:\n\tTG: 1\n")
    with pytest.raises(ConfigError) as ei:
        load_topology(str(p))
    assert ei.value.path.startswith("line 4")


def test_file_not_found(tmp_path):
    missing = str(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError) as ei:
        load_topology(missing)
    assert ei.value.source == missing and "file not found" in str(ei.value)


def test_error_from_file_names_file_and_path(tmp_path):
    with open(EMBEDDED, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    data["nodes"]["TG"]["interfaces"]["port0"]["mac"] = "02:00:00:00:00:0g"
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError) as ei:
        load_topology(str(p))
    assert str(ei.value).startswith(f"{p}: nodes.TG.interfaces.port0.mac: expected a MAC address")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.yaml"
    p.write_text("")
    with pytest.raises(ConfigError) as ei:
        load_topology(str(p))
    assert ei.value.source == str(p)
