"""Faults on the TRex path against the REAL TRex v3.08 server (prefix ``txf-``): TRex killed
mid-trial, TRex ports held by another client. Each ends with one clear message, finished
results kept, JUnit written, nothing of ours left. Skips in one line without root or TRex."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from dpgate.traffic.trex.install import trex_missing

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "trex")
if os.geteuid() != 0:
    pytest.skip("TRex fault injection needs root (network namespaces)", allow_module_level=True)
if trex_missing():
    pytest.skip(trex_missing(), allow_module_level=True)


def _ours(prefix: str):
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in ns.splitlines() if line.startswith(prefix)] + [
        line for line in ps.splitlines() if f"dpgate-{prefix.rstrip('-')}" in line
    ]


def test_trex_killed_mid_trial_and_port_held_by_another_client(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "libraries") + os.pathsep + HERE)
    junit = tmp_path / "junit.xml"
    res = subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore",
            "-m",
            "robot",
            "--outputdir",
            str(tmp_path),
            "--console",
            "dotted",
            "--listener",
            f"dpgate.listener.DpgateListener:{junit}",
            os.path.join(HERE, "trex_faults.robot"),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    ok = cases["64B-trex-loop-ndrpdr"]
    props = {p.get("name"): p.get("value") for p in ok.iter("property")}
    assert ok.find("failure") is None and float(props["ndr_pps"]) > 0 and props["tg"] == "TRex v3.08", (
        res.stdout
    )
    busy = cases["64B-trex-port-held-by-another-client"].find("failure").get("message")
    assert "TRex port busy on 198.19.255.14: port 0 is held by 'alice'" in busy, busy
    assert "another client acquired it" in busy and "lost its ports" not in busy  # never taken by force
    killed = cases["64B-trex-killed-mid-trial"].find("failure").get("message")
    assert "TRex server 198.19.255.14 died during the trial" in killed and "killed by signal 9" in killed, (
        killed
    )
    assert "search aborted after" in killed and "trial(s)" in killed
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr[-2000:])  # two failed tests
    assert _ours("txf-") == []
