"""Thresholds with a core-tag dimension (lab cases) and compatibility with embedded files."""

from __future__ import annotations

import os

import pytest

from dpgate.config.thresholds import core_tag, load_thresholds
from dpgate.model.errors import ConfigError
from dpgate.robotlib import Gates

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")

TEXT = """
defaults: {cpp_max: 900}
nfs:
  vpp-l2patch:
    all: {ndr_min: 1 Mpps}
    IMIX: {ndr_min: 5 Mpps}
    all-2T1C: {pdr_min: 2 Mpps}
    64B-1T1C: {ndr_min: 13 Mpps, cpp_max: 190}
    64b-2t1c: {ndr_min: 15.8 Mpps}
"""


@pytest.fixture
def th(tmp_path):
    p = tmp_path / "lab.yaml"
    p.write_text(TEXT)
    return load_thresholds(str(p))


def test_core_tag_entries_override_size_entries_in_order(th):
    t = th.lookup("vpp-l2patch", "64B", "1T1C")
    assert t.rate("ndr_min") == 13e6 and t.cpp_max == 190 and t.pdr_min is None
    t = th.lookup("vpp-l2patch", "64B", "2t1c")  # keys and argument are case-insensitive
    assert t.rate("ndr_min") == pytest.approx(15.8e6) and t.rate("pdr_min") == 2e6 and t.cpp_max == 900
    t = th.lookup("vpp-l2patch", "IMIX", "2T1C")  # size entry, then all-<tag>
    assert t.rate("ndr_min") == 5e6 and t.rate("pdr_min") == 2e6
    t = th.lookup("vpp-l2patch", "1518B", "8T4C")  # nothing tagged for 8T4C: all
    assert t.rate("ndr_min") == 1e6 and t.pdr_min is None


def test_without_cores_tagged_entries_do_not_apply(th):
    t = th.lookup("vpp-l2patch", "64B")
    assert t.rate("ndr_min") == 1e6 and t.cpp_max == 900 and t.pdr_min is None


def test_embedded_file_still_loads_and_looks_up_the_same_way():
    f = load_thresholds(os.path.join(ROOT, "variables", "embedded.yaml"))
    assert f.lookup("linux-ip4", "64B").rate("ndr_min") == f.lookup("linux-ip4", "64B", "1T1C").rate(
        "ndr_min"
    )
    assert f.lookup("linux-ip4", "64B").rate("ndr_min") > 0


def test_bad_cores_argument_names_it(th):
    with pytest.raises(ConfigError, match="core tag '2 cores' is not like 1T1C"):
        th.lookup("vpp-l2patch", "64B", "2 cores")
    assert core_tag("8t4c") == "8T4C"


def test_gates_keyword_passes_the_core_tag(tmp_path):
    p = tmp_path / "lab.yaml"
    p.write_text(TEXT)
    g = Gates(str(p))
    assert g.thresholds_for("vpp-l2patch", "64B", cores="1T1C").cpp_max == 190
    assert g.thresholds_for("vpp-l2patch", "64B").cpp_max == 900
