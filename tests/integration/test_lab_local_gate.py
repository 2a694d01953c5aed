"""The lab gate end to end on the lab on one machine: the 64B 1T1C case of all six NFs through
``dpgate gate --topology topologies/lab-local.yaml suites/lab`` with the real TRex v3.08, VPP,
DPDK testpmd/l3fwd and OVS-DPDK: each testcase has ``ndr_pps`` > 0 measured by TRex, latency
properties, ``tg`` naming TRex and ``host_cpu_model``/``host_cpu_id`` read on the DUT (over its
sshd: this machine's CPU) in the JUnit, and nothing of ours is left afterwards.

Searches are bounded (SEARCH_TIME_LIMIT 30 s) to keep CI short. Without TRex/VPP/l3fwd the
module skips with one line naming what is missing.
"""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET

import pytest
from helpers import assert_lab_local_clean, gate_argv, local_topology

from dpgate.exec.hostcpu import cpu_facts
from dpgate.testbeds.lab import vendor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = os.environ.get("DPGATE_LAB_GATE_PREFIX", "dplg-")
_missing = vendor.missing("TRex", "VPP", "l3fwd")
pytestmark = pytest.mark.skipif(bool(_missing), reason="lab on one machine: " + "; ".join(_missing))


def test_lab_gate_64b_1t1c_all_six_nfs(tmp_path):
    out = str(tmp_path / "results")
    topo = local_topology(tmp_path, "198.19.255.58", "198.19.255.62")
    argv = gate_argv(topo, PREFIX, out, "64B AND 1T1C", 30, "suites/lab")
    res = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=1500)
    junit = os.path.join(out, "junit.xml")
    assert os.path.exists(junit), res.stdout[-3000:] + res.stderr[-2000:]
    cases = ET.parse(junit).getroot().iter("testcase")
    seen = {}
    for tc in cases:
        props = {p.get("name"): p.get("value") for p in tc.iter("property")}
        seen[tc.get("name")] = props
        assert float(props.get("ndr_pps", 0)) > 0, (tc.get("name"), res.stdout[-2000:])
        assert props.get("tg", "").startswith("TRex v3.08"), props.get("tg")
        assert {k: props.get(k) for k in cpu_facts()} == cpu_facts(), props
        assert any(k.startswith("latency_50pdr_0to1_") and k.endswith("_us") for k in props), sorted(props)
    assert len(seen) == 6, sorted(seen)
    assert_lab_local_clean(PREFIX)
