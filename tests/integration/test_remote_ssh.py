"""dpgate.exec.remote.SshNode against a REAL sshd (OpenSSH, paramiko client), and the secrets check
of the lab keyword library: nothing here is faked.

A private sshd runs as root on 127.0.0.1 at a random high port with a temporary host key
and config (password and public-key auth) for a throwaway local user created here; a
sudoers drop-in lets that user run only /usr/bin/id without a password. Teardown stops
sshd by its pid and removes the user, the drop-in and the temp files, also after failures.
``HOME`` points at a temporary directory, so ``~/.ssh/known_hosts`` is a temp file that
starts empty (SshNode refuses unknown host keys).

Needs root (useradd, sshd) and openssh-server + sudo (``bash .ci/install``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time

import pytest

from dpgate.config.topology import Ssh
from dpgate.exec.remote import SshNode
from dpgate.exec.runner import CommandError
from dpgate.model.errors import DpgateError, EnvironmentProblem
from dpgate.testbeds.lab.service import write_file

SSHD = "/usr/sbin/sshd"
PW_ENV = "DPGATE_TEST_SSH_PW"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, proc: subprocess.Popen, log: str, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}: {open(log).read()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"sshd did not listen on 127.0.0.1:{port} within {timeout:g} s")


class Sshd:
    """A private sshd and a throwaway user; ``close()`` undoes everything that was done."""

    def __init__(self, tmp: str):
        self.tmp = tmp
        self.user = "dpgssh" + secrets.token_hex(3)
        self.password = "dpgPW" + secrets.token_hex(16)
        self.port = _free_port()
        self.proc = None
        self.user_created = False
        self.sudoers = f"/etc/sudoers.d/dpgate-test-{self.user}"
        self.made_run_sshd = False
        self.home = os.path.join(tmp, "home")  # HOME of the client side (known_hosts)

    def start(self) -> Sshd:
        for tool in (SSHD, "/usr/bin/sudo"):
            if not os.path.exists(tool):
                pytest.fail(f"{tool} missing: run 'bash .ci/install' (installs openssh-server and sudo)")
        subprocess.run(["useradd", "-m", "-s", "/bin/bash", self.user], check=True, capture_output=True)
        self.user_created = True
        subprocess.run(
            ["chpasswd"], input=f"{self.user}:{self.password}\n", text=True, check=True, capture_output=True
        )
        with open(self.sudoers, "w") as fh:
            fh.write(f"{self.user} ALL=(root) NOPASSWD: /usr/bin/id\n")
        os.chmod(self.sudoers, 0o440)
        subprocess.run(["visudo", "-cf", self.sudoers], check=True, capture_output=True)
        hostkey = os.path.join(self.tmp, "hostkey")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey], check=True)
        self.client_key = os.path.join(self.tmp, "client_key")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", self.client_key], check=True)
        ssh_dir = f"/home/{self.user}/.ssh"  # the user's own: sshd reads it as the user
        os.makedirs(ssh_dir, mode=0o700)
        shutil.copy(self.client_key + ".pub", os.path.join(ssh_dir, "authorized_keys"))
        for path in (ssh_dir, os.path.join(ssh_dir, "authorized_keys")):
            shutil.chown(path, self.user, self.user)
        self.config = os.path.join(self.tmp, "sshd_config")
        with open(self.config, "w") as fh:
            fh.write(
                "\n".join(
                    [
                        f"Port {self.port}",
                        "ListenAddress 127.0.0.1",
                        f"HostKey {hostkey}",
                        f"PidFile {os.path.join(self.tmp, 'sshd.pid')}",
                        "UsePAM no",
                        "PasswordAuthentication yes",
                        "KbdInteractiveAuthentication no",
                        "PubkeyAuthentication yes",
                        "AuthorizedKeysFile .ssh/authorized_keys",
                        f"AllowUsers {self.user}",
                        "PermitRootLogin no",
                        "LogLevel VERBOSE",
                        "MaxStartups 50",
                        "",
                    ]
                )
            )
        if not os.path.isdir("/run/sshd"):  # privilege separation directory
            os.makedirs("/run/sshd", mode=0o755)
            self.made_run_sshd = True
        subprocess.run([SSHD, "-t", "-f", self.config], check=True, capture_output=True)
        self.log = os.path.join(self.tmp, "sshd.log")
        self.proc = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", self.config], stdout=open(self.log, "w"), stderr=subprocess.STDOUT
        )
        _wait_listening(self.port, self.proc, self.log)
        os.makedirs(os.path.join(self.home, ".ssh"), exist_ok=True)
        self.known_hosts = os.path.join(self.home, ".ssh", "known_hosts")
        open(self.known_hosts, "w").close()
        self.host_line = (
            f"[127.0.0.1]:{self.port} " + " ".join(open(hostkey + ".pub").read().split()[:2]) + "\n"
        )
        return self

    def trust_host_key(self) -> None:
        with open(self.known_hosts, "w") as fh:
            fh.write(self.host_line)

    def ssh(self, **kw) -> Ssh:
        args = dict(host="127.0.0.1", port=self.port, user=self.user, password_env=PW_ENV, timeout_s=10.0)
        args.update(kw)
        return Ssh(**args)

    def close(self) -> None:
        errors = []
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if os.path.exists(self.sudoers):
            os.remove(self.sudoers)
        if self.user_created:
            # -f: a remote 'sleep' of the timeout test may still run for a few seconds
            res = subprocess.run(["userdel", "-f", "-r", self.user], capture_output=True, text=True)
            if res.returncode not in (0, 12):  # 12: home removal warning only
                errors.append(f"userdel {self.user}: {res.stderr.strip()}")
        if self.made_run_sshd:
            shutil.rmtree("/run/sshd", ignore_errors=True)
        assert not errors, errors


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    server = Sshd(str(tmp_path_factory.mktemp("sshd")))
    try:
        yield server.start()
    finally:
        server.close()
    assert subprocess.run(["id", server.user], capture_output=True).returncode != 0, (
        "throwaway user left behind"
    )
    assert not os.path.exists(server.sudoers)


@pytest.fixture
def env(sshd, monkeypatch):
    """Client environment: HOME with the temp known_hosts, the password in PW_ENV."""
    monkeypatch.setenv("HOME", sshd.home)
    monkeypatch.setenv(PW_ENV, sshd.password)
    monkeypatch.delenv("DPGATE_SSH_ACCEPT_NEW_HOST", raising=False)
    sshd.trust_host_key()
    return {**os.environ}


def node(sshd, **kw) -> SshNode:
    lines = []
    n = SshNode(sshd.ssh(**kw), name="DUT1", log=lines.append)
    n.lines = lines
    return n


def test_unknown_host_key_is_refused_then_accepted_once_known(sshd, monkeypatch):
    monkeypatch.setenv("HOME", sshd.home)
    monkeypatch.setenv(PW_ENV, sshd.password)
    monkeypatch.delenv("DPGATE_SSH_ACCEPT_NEW_HOST", raising=False)
    open(sshd.known_hosts, "w").close()
    with pytest.raises(EnvironmentProblem) as err:
        node(sshd).run(["true"])
    assert f"ssh-keyscan -p {sshd.port} 127.0.0.1" in str(err.value) and sshd.password not in str(err.value)
    sshd.trust_host_key()
    n = node(sshd)
    assert n.run(["id", "-un"]).stdout.strip() == sshd.user
    n.close()


def test_hostile_arguments_stay_single_arguments(sshd, env, tmp_path):
    marker = f"/tmp/dpgate-ssh-marker-{secrets.token_hex(4)}"
    os.makedirs(marker)
    try:
        n = node(sshd)
        args = [
            f"; rm -rf {marker}",
            "$(touch /tmp/dpgate-pwned)",
            "`id`",
            "a b  c",
            "it's",
            'say "hi"',
            "line1\nline2",
            "*",
            "&& true",
            "| cat",
        ]
        out = n.run(["printf", r"%s\0"] + args).stdout
        assert out.split("\0")[:-1] == args
        assert os.path.isdir(marker) and not os.path.exists("/tmp/dpgate-pwned")
        assert any(f"'; rm -rf {marker}'" in line for line in n.lines)  # logged quoted, as sent
        n.close()
    finally:
        shutil.rmtree(marker, ignore_errors=True)


def test_stdin_content_goes_through_tee_not_argv(sshd, env):
    n = node(sshd)
    path = f"/home/{sshd.user}/conf.txt"
    text = "unix {\n  nodaemon\n}\n$(not run) ; `nor this`\n"
    write_file(n, path, text)
    assert n.run(["cat", path]).stdout == text
    assert not any("nodaemon" in line for line in n.lines)  # content is not on the command line
    n.close()


def test_exit_codes_and_check(sshd, env):
    n = node(sshd)
    with pytest.raises(CommandError) as err:
        n.run(["ls", "/nonexistent-dpgate"])
    assert err.value.code == 2 and "nonexistent-dpgate" in str(err.value)
    assert n.run(["false"], check=False).returncode == 1
    assert n.run(["dpgate-no-such-tool"], check=False).returncode == 127
    n.close()


def test_timeout_is_enforced_and_named(sshd, env):
    n = node(sshd)
    t0 = time.monotonic()
    with pytest.raises(DpgateError) as err:
        n.run(["sleep", "5"], timeout=1)
    elapsed = time.monotonic() - t0
    assert elapsed < 4.0, elapsed
    assert (
        "DUT1" in str(err.value) and "sleep 5" in str(err.value) and "timed out after 1 s" in str(err.value)
    )
    n.close()


def test_sudo_n_never_prompts(sshd, env):
    n = node(sshd, sudo=True)
    assert n.run(["id", "-u"]).stdout.strip() == "0"  # allowed by the drop-in, no password
    t0 = time.monotonic()
    with pytest.raises(CommandError) as err:
        n.run(["cat", "/etc/shadow"], timeout=10)  # not allowed: fails at once, no prompt
    assert time.monotonic() - t0 < 5 and "password is required" in str(err.value)
    assert err.value.argv[:2] == ["sudo", "-n"]
    assert n.run(["id", "-u"], sudo=False).stdout.strip() != "0"  # per-call override
    n.close()


def test_key_file_auth_without_password(sshd, env, monkeypatch):
    monkeypatch.delenv(PW_ENV)
    n = node(sshd, password_env=None, key_file=sshd.client_key)
    assert n.run(["id", "-un"]).stdout.strip() == sshd.user
    assert any(f"key {sshd.client_key}" in line for line in n.lines)
    n.close()


def test_wrong_password_is_a_clear_masked_error(sshd, env, monkeypatch):
    wrong = "dpgWRONG" + secrets.token_hex(8)
    monkeypatch.setenv(PW_ENV, wrong)
    with pytest.raises(EnvironmentProblem) as err:
        node(sshd).run(["true"])
    msg = str(err.value)
    assert f"cannot SSH to {sshd.user}@127.0.0.1:{sshd.port}" in msg and wrong not in msg


# -- secrets never reach Robot's outputs, JUnit or the result records --------------------------
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


def test_dut_lock_over_real_ssh_between_two_pipelines(sshd, env):
    """dpgate.exec.nodelock over two SSH sessions (two pipelines): the second is refused naming
    the first, a dead first (no heartbeat past its lease) is taken over, release frees it."""
    from dpgate.exec.lock import Busy, me
    from dpgate.exec.nodelock import NodeLock

    path = f"/home/{sshd.user}/dpgate-locks/dut.lock"
    first_owner = me("dpgate gate")
    first_owner.host = "ci-runner-1"  # another machine: only the lease can tell it is dead
    a, b = node(sshd), node(sshd)
    first = NodeLock(a, "DUT DUT1", path, lease_s=2.0, owner=first_owner).acquire()
    try:
        time.sleep(3.0)  # past the lease: the heartbeat keeps it
        with pytest.raises(
            Busy, match=r"^DUT DUT1 is in use by pid \d+, `dpgate gate`, since .* on ci-runner-1; "
        ):
            NodeLock(b, "DUT DUT1", path).acquire(wait=0)
        first._stop.set()  # the first pipeline dies: no more renewals
        first._beat.join(5)
        time.sleep(3.5)
        second = NodeLock(b, "DUT DUT1", path, command="dpgate gate").acquire(wait=10, poll=0.5)
        assert second.record.token in b.run(["cat", f"{path}/owner"]).stdout
        second.release()
        assert b.run(["test", "-e", path], check=False).returncode == 1
        assert all("sh -c" not in line for line in a.lines + b.lines)
    finally:
        first.release()
        a.close()
        b.close()
