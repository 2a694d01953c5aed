"""dpgate.exec.remote.SshNode against a REAL sshd (tests/real_sshd.py, served by this directory's conftest.py): host keys, hostile
arguments, stdin, exit codes, timeouts, sudo -n, key files, a wrong password, and the DUT lock
between two pipelines. Nothing here is faked.

Needs root (useradd, sshd) and openssh-server + sudo (``bash .ci/install``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time

import pytest
from real_sshd import PW_ENV, node

from dpgate.exec.runner import CommandError
from dpgate.model.errors import DpgateError, EnvironmentProblem
from dpgate.testbeds.lab.service import write_file


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
