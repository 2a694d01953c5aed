"""Fault injection on the real embedded testbed (root): every fault ends with a clear
message, finished results kept, valid JUnit, and nothing of ours left behind."""

import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="fault injection needs root (network namespaces)")


def namespaces(prefix):
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.startswith(prefix)]


def our_processes(prefix):
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [
        line
        for line in out.splitlines()
        if f"dpgate-{prefix.rstrip('-')}" in line or f"{prefix}testpmd" in line
    ]


def env():
    e = dict(os.environ)
    e["PYTHONPATH"] = os.path.join(ROOT, "libraries") + os.pathsep + e.get("PYTHONPATH", "")
    return e


@pytest.mark.parametrize("generator", ["tcpreplay", "dpgen"])
def test_generator_killed_mid_trial_fails_that_trial_only(generator):
    from dpgate.model.errors import TrialError
    from dpgate.testbeds.embedded.session import EmbeddedSession
    from dpgate.traffic.dpgen import dpgen_binary

    if generator == "dpgen" and not dpgen_binary():
        pytest.skip("build/dpgen/dpgen is missing: run bash .ci/install")
    prefix = "ft1-"
    with EmbeddedSession(
        os.path.join(ROOT, "topologies/embedded.yaml"),
        "linux-xconnect",
        prefix=prefix,
        calibrate=False,
        generator=generator,
    ) as s:

        def killer():
            time.sleep(1.0)
            if generator == "dpgen":  # the session's one dpgen, by its pid
                os.kill(s.generator.proc.pid, signal.SIGKILL)
            else:
                subprocess.run(["pkill", "-KILL", "-f", f"tcpreplay.*dpgate-{prefix.rstrip('-')}"])

        threading.Thread(target=killer).start()
        with pytest.raises(TrialError, match=r"generator exited \(signal 9\) during trial at 50000 pps"):
            s.measure(50_000, 3.0)
        assert s.measure(20_000, 1.0).loss_packets == 0  # the next trial runs normally
    assert namespaces(prefix) == [] and our_processes(prefix) == []


def test_sut_killed_mid_suite_names_the_sut_and_its_log():
    from dpgate.model.errors import SutError
    from dpgate.testbeds.embedded.session import EmbeddedSession

    prefix = "ft2-"
    with pytest.raises(SutError) as err:
        with EmbeddedSession(
            os.path.join(ROOT, "topologies/embedded.yaml"), "testpmd-io", prefix=prefix, calibrate=False
        ) as s:
            assert s.measure(20_000, 1.0).loss_packets == 0
            os.kill(s.sut.proc.pid, signal.SIGKILL)
            time.sleep(0.5)
            s.measure(20_000, 1.0)
    msg = str(err.value)
    assert "testpmd-io is not running any more" in msg and "last log lines" in msg
    assert namespaces(prefix) == [] and our_processes(prefix) == []


def test_corrupt_topology_is_exit_2_with_the_file_and_nothing_created(tmp_path):
    bad = tmp_path / "topo.yaml"
    bad.write_text(
        open(os.path.join(ROOT, "topologies/embedded.yaml"))
        .read()
        .replace('mac: "02:00:00:00:00:11"', 'mac: "02:00:00:00:00"')
    )
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "dpgate.cli",
            "gate",
            "--topology",
            str(bad),
            "--prefix",
            "ft3-",
            "--outdir",
            str(tmp_path / "out"),
            os.path.join(ROOT, "suites/embedded"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env(),
        timeout=60,
    )
    assert res.returncode == 2
    assert f"{bad}: nodes.DUT1.interfaces.port0.mac: expected a MAC address" in res.stderr
    assert namespaces("ft3-") == []


def test_sigterm_to_a_running_gate_keeps_finished_tests(tmp_path):
    out = tmp_path / "out"
    th = tmp_path / "th.yaml"
    th.write_text("nfs: {linux-xconnect: {all: {ndr_min: 1kpps}}}\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dpgate.cli",
            "gate",
            "--outdir",
            str(out),
            "--prefix",
            "ft4-",
            "--thresholds",
            str(th),
            "--variable",
            "SEARCH_TIME_LIMIT:15",
            os.path.join(ROOT, "suites/embedded/linux-xconnect-ndrpdr.robot"),
        ],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    junit = out / "junit.xml"
    deadline = time.time() + 240
    while time.time() < deadline:
        if junit.exists() and "<testcase" in junit.read_text():
            break
        time.sleep(1)
    assert junit.exists(), "no test finished within 240 s"
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=120)
    assert proc.returncode == 143, output
    assert "interrupted by signal 15: finished tests kept, teardown ran" in output
    root = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    first = cases["64B-1c-linux-xconnect-ndrpdr"]
    assert first.find("failure") is None and first.find("error") is None
    assert any(p.get("name") == "ndr_pps" for p in first.iter("property"))
    for name, case in cases.items():  # those the signal cut or never started: not SUT failures
        assert case.find("failure") is None, (name, ET.tostring(case)[:300])
    assert namespaces("ft4-") == [] and our_processes("ft4-") == []
