"""The lab keyword library's secrets check over a REAL sshd (tests/real_sshd.py, served by this directory's conftest.py): the password
reaches no Robot output, JUnit or record; the leak scan finds one logged on purpose; a pabot
pool hands out a lab topology. Nothing here is faked.

Needs root (useradd, sshd) and openssh-server + sudo (``bash .ci/install``).
"""

from __future__ import annotations

import os
import subprocess
import sys

from real_sshd import PW_ENV

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


SUITE = """\
*** Settings ***
Library           dpgate.labrobot.LabTestbed    ${TOPOLOGY}    telemetry=False
Suite Teardown    Tear Down Lab Testbed

*** Test Cases ***
Run On DUT Over SSH
    ${out}=    Run On DUT    id    -un
    Should Be Equal    ${out.strip()}    ${USER}

Allocate Cores From The DUT's lscpu
    ${tag}=    Allocate DUT Cores    cores=1    ht=off
    Should Be Equal    ${tag}    1T1C

Failing Command Is Reported
    Run Keyword And Expect Error    *exit code 2*    Run On DUT    ls    /nonexistent-dpgate
"""

LEAK_CONTROL = """\
*** Test Cases ***
Leaks On Purpose
    Log    %{DPGATE_TEST_SSH_PW}
"""


def _topology(sshd, path: str) -> str:
    import yaml

    def iface(name, mac, pci, link):
        return {
            "name": name,
            "mac": mac,
            "pci": pci,
            "speed": "10Gbps",
            "link": link,
        }

    topo = {
        "name": "ssh-loopback",
        "kind": "lab-2node",
        "prefix": "lab9-",
        "nodes": {
            "TG": {
                "type": "TG",
                "generator": "trex",
                "trex": {"server": "127.0.0.1"},
                "interfaces": {
                    "port0": iface("trex0", "02:00:00:00:09:01", "0000:86:00.0", "l1"),
                    "port1": iface("trex1", "02:00:00:00:09:02", "0000:86:00.1", "l2"),
                },
            },
            "DUT1": {
                "type": "DUT",
                "main_cpu": 0,
                "cpus": [1],
                "numa": 0,
                "ssh": {
                    "host": "127.0.0.1",
                    "port": sshd.port,
                    "user": sshd.user,
                    "password_env": PW_ENV,
                    "timeout_s": 10,
                },
                "interfaces": {
                    "port0": iface("eth0", "02:00:00:00:09:11", "0000:18:00.0", "l1"),
                    "port1": iface("eth1", "02:00:00:00:09:12", "0000:18:00.1", "l2"),
                },
            },
        },
    }
    with open(path, "w") as fh:
        yaml.safe_dump(topo, fh)
    return path


def _robot(outdir: str, suite: str, env: dict, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "robot",
            "--loglevel",
            "TRACE",
            "--listener",
            "dpgate.listener.DpgateListener",
            "--outputdir",
            outdir,
            *options,
            suite,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


def _files_containing(outdir: str, secret: str) -> list:
    hits = []
    for base, _, files in os.walk(outdir):
        for f in files:
            path = os.path.join(base, f)
            with open(path, "rb") as fh:
                if secret.encode() in fh.read():
                    hits.append(os.path.relpath(path, outdir))
    return hits


def test_password_absent_from_robot_outputs_junit_and_records(sshd, env, tmp_path):
    suite = tmp_path / "ssh-secrets.robot"
    suite.write_text(SUITE)
    topo = _topology(sshd, str(tmp_path / "topo.yaml"))
    out = str(tmp_path / "out")
    proc = _robot(out, str(suite), env, "--variable", f"TOPOLOGY:{topo}", "--variable", f"USER:{sshd.user}")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    produced = sorted(os.path.relpath(os.path.join(b, f), out) for b, _, fs in os.walk(out) for f in fs)
    for name in ("output.xml", "log.html", "report.html", "junit.xml"):
        assert name in produced, produced
    records = [p for p in produced if p.startswith("dpgate/") and p.endswith(".json")]
    assert len(records) == 3, produced
    # the SSH connection really was made and logged, with the password's source only
    assert f"password from ${PW_ENV}" in open(os.path.join(out, "output.xml")).read()
    assert _files_containing(out, sshd.password) == []
    assert sshd.password not in proc.stdout + proc.stderr


def test_leak_scan_finds_a_password_logged_on_purpose(sshd, env, tmp_path):
    """Control for the test above: the same scan does find the password when a suite logs it."""
    suite = tmp_path / "leak.robot"
    suite.write_text(LEAK_CONTROL)
    out = str(tmp_path / "leak")
    proc = _robot(out, str(suite), env)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "output.xml" in _files_containing(out, sshd.password)


POOL_SUITE = """\
*** Settings ***
Library           dpgate.labrobot.LabTestbed    telemetry=False
Suite Setup       Acquire Lab Testbed From Pool    lab
Suite Teardown    Run Keywords    Tear Down Lab Testbed    AND    Release Lab Testbed To Pool

*** Test Cases ***
DUT Of The Acquired Lab Testbed
    ${out}=    Run On DUT    id    -un
    Should Be Equal    ${out.strip()}    ${USER}
"""


def test_pabot_pool_hands_out_a_lab_topology(sshd, env, tmp_path):
    """The lab pool keywords under real pabot: the suite gets its topology from the pool."""
    import shutil as _shutil

    pabot = _shutil.which("pabot", path=os.path.dirname(sys.executable)) or _shutil.which("pabot")
    assert pabot, "pabot is installed with dpgate (robotframework-pabot)"
    topo = _topology(sshd, str(tmp_path / "topo.yaml"))
    pool = tmp_path / "lab-pool.dat"
    pool.write_text(f"[lab-a]\ntags=lab\ntopology={topo}\n")
    suite = tmp_path / "pool.robot"
    suite.write_text(POOL_SUITE)
    out = str(tmp_path / "pool")
    proc = subprocess.run(
        [
            pabot,
            "--processes",
            "1",
            "--resourcefile",
            str(pool),
            "--outputdir",
            out,
            "--variable",
            f"USER:{sshd.user}",
            str(suite),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={**env, "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 tests, 1 passed" in proc.stdout or "1 test, 1 passed" in proc.stdout, proc.stdout[-2000:]
    assert _files_containing(out, sshd.password) == []
