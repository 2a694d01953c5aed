"""A REAL private sshd for the integration tests of dpgate.exec.remote (OpenSSH, paramiko client).

It runs as root on 127.0.0.1 at a random high port with a temporary host key and config
(password and public-key auth) for a throwaway local user created here; a sudoers drop-in lets
that user run only /usr/bin/id without a password. Teardown stops sshd by its pid and removes
the user, the drop-in and the temp files, also after failures. ``HOME`` points at a temporary
directory, so ``~/.ssh/known_hosts`` is a temp file that starts empty (SshNode refuses unknown
host keys). Used by tests/integration/ssh/ (its conftest.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time

import pytest

from dpgate.config.topology import Ssh
from dpgate.exec.remote import SshNode

SSHD = "/usr/sbin/sshd"
PW_ENV = "DPGATE_TEST_SSH_PW"


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


def serving(tmp_path_factory):
    """The ``sshd`` fixture's body: a started server, gone (user, drop-in) after the module."""
    server = Sshd(str(tmp_path_factory.mktemp("sshd")))
    try:
        yield server.start()
    finally:
        server.close()
    assert subprocess.run(["id", server.user], capture_output=True).returncode != 0, (
        "throwaway user left behind"
    )
    assert not os.path.exists(server.sudoers)


def client_env(sshd, monkeypatch):
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
