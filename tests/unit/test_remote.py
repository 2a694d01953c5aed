"""dpgate.exec.remote: argv quoting for SSH, sudo, secrets masked, local/namespace runs."""

from __future__ import annotations

import shlex

import pytest

from dpgate.config.topology import Ssh
from dpgate.exec.remote import LocalNode, SshNode, remote_command
from dpgate.exec.runner import CommandError
from dpgate.model.errors import EnvironmentProblem

SECRET = "s3cr3t-Pa55"


class _Chan:
    def __init__(self, code):
        self.code = code

    def recv_exit_status(self):
        return self.code

    def shutdown_write(self):
        pass


class _Stream:
    def __init__(self, data=b"", code=0):
        self.data, self.channel = data, _Chan(code)

    def read(self):
        return self.data

    def write(self, data):
        self.data = data


class FakeSshClient:
    """Fake paramiko.SSHClient: records connect/exec_command calls."""

    def __init__(self, code=0, fail_connect=None, err=b""):
        self.code, self.fail_connect, self.err = code, fail_connect, err
        self.connects, self.commands = [], []

    def connect(self, host, **kw):
        self.connects.append((host, kw))
        if self.fail_connect:
            raise self.fail_connect

    def exec_command(self, cmd, timeout=None):
        self.commands.append((cmd, timeout))
        return _Stream(), _Stream(b"ok\n", self.code), _Stream(self.err)

    def close(self):
        pass


def test_hostile_interface_name_stays_one_argument():
    cmd = remote_command(["ip", "link", "set", "x; rm -rf /", "up"])
    assert shlex.split(cmd) == ["ip", "link", "set", "x; rm -rf /", "up"]
    assert "'x; rm -rf /'" in cmd


def test_ssh_run_sends_quoted_sudo_command_with_timeout():
    fake = FakeSshClient()
    node = SshNode(Ssh(host="10.0.0.2", user="u", sudo=True), client_factory=lambda: fake, env={})
    res = node.run(["vppctl", "set", "int", "state", "$(reboot)", "up"], timeout=7)
    cmd, timeout = fake.commands[0]
    assert shlex.split(cmd) == ["sudo", "-n", "vppctl", "set", "int", "state", "$(reboot)", "up"]
    assert timeout == 7 and res.stdout == "ok\n" and res.returncode == 0


def test_password_comes_from_env_and_never_appears_in_logs_or_errors():
    logs = []
    fake = FakeSshClient(fail_connect=RuntimeError(f"Authentication failed for password {SECRET}"))
    node = SshNode(
        Ssh(host="h", user="u", password_env="DUT_PW"),
        env={"DUT_PW": SECRET},
        client_factory=lambda: fake,
        log=logs.append,
    )
    with pytest.raises(EnvironmentProblem) as exc:
        node.run(["true"])
    assert fake.connects[0][1]["password"] == SECRET  # it was used...
    assert SECRET not in str(exc.value)  # ...but never shown
    assert all(SECRET not in line for line in logs) and logs


def test_failing_remote_command_error_is_masked():
    fake = FakeSshClient(code=3, err=f"bad pw {SECRET}".encode())
    node = SshNode(Ssh(host="h", password_env="PW"), env={"PW": SECRET}, client_factory=lambda: fake)
    with pytest.raises(CommandError) as exc:
        node.run(["false"])
    assert exc.value.code == 3 and SECRET not in str(exc.value)


def test_missing_password_variable_is_a_clear_error():
    node = SshNode(Ssh(host="h", password_env="NOPE_PW"), env={}, client_factory=FakeSshClient)
    with pytest.raises(EnvironmentProblem, match="NOPE_PW"):
        node.run(["true"])


def test_local_node_runs_argv_without_a_shell():
    res = LocalNode().run(["echo", "a;b", "$HOME"])
    assert res.stdout == "a;b $HOME\n"


def test_unknown_host_key_error_says_how_to_trust_it():
    fake = FakeSshClient(fail_connect=RuntimeError("Server 'h' not found in known_hosts"))
    node = SshNode(Ssh(host="h", port=2222), env={}, client_factory=lambda: fake)
    with pytest.raises(EnvironmentProblem, match="ssh-keyscan -p 2222 h"):
        node.run(["true"])


def test_real_paramiko_client_refuses_unknown_host_keys():
    import paramiko

    client = SshNode(Ssh(host="h"), env={})._factory()
    assert isinstance(client._policy, paramiko.RejectPolicy)


class _TimeoutClient(FakeSshClient):
    def exec_command(self, cmd, timeout=None):
        self.commands.append((cmd, timeout))
        raise TimeoutError("timed out")


def test_timeout_error_names_host_and_command():
    fake = _TimeoutClient()
    node = SshNode(Ssh(host="dut1.lab"), env={}, client_factory=lambda: fake)
    with pytest.raises(Exception) as exc:
        node.run(["vppctl", "show", "version"], timeout=2)
    msg = str(exc.value)
    assert "dut1.lab" in msg and "vppctl show version" in msg and "2 s" in msg


class _Transport:
    def __init__(self, active):
        self.active = active

    def is_active(self):
        return self.active


class _DroppedClient(FakeSshClient):
    """The session's sshd killed mid-command: paramiko raises with no text, transport dead."""

    def exec_command(self, cmd, timeout=None):
        self.commands.append((cmd, timeout))
        if len(self.commands) == 1:
            raise EOFError()
        return super().exec_command(cmd, timeout)

    def get_transport(self):
        return _Transport(active=len(self.commands) != 1)


def test_a_dropped_ssh_session_is_named_and_the_next_command_connects_again():
    fake = _DroppedClient()
    node = SshNode(Ssh(host="dut1.lab"), env={}, client_factory=lambda: fake)
    with pytest.raises(Exception) as exc:
        node.run(["cat", "/proc/5512/stat"], timeout=15)
    msg = str(exc.value)
    assert "SSH connection was lost" in msg and "dut1.lab" in msg and "EOFError" in msg, msg
    assert node.run(["true"]).returncode == 0 and len(fake.connects) == 2


def test_password_not_in_repr_or_str_of_node():
    node = SshNode(Ssh(host="h", password_env="PW"), env={"PW": SECRET}, client_factory=FakeSshClient)
    node.run(["true"])
    assert SECRET not in repr(node) and SECRET not in str(node)


def test_accept_new_host_only_with_explicit_opt_in():
    import paramiko

    logs = []
    client = SshNode(Ssh(host="h"), env={"DPGATE_SSH_ACCEPT_NEW_HOST": "1"}, log=logs.append)._factory()
    assert isinstance(client._policy, paramiko.AutoAddPolicy)
    assert any("DPGATE_SSH_ACCEPT_NEW_HOST" in line for line in logs)
    client = SshNode(Ssh(host="h"), env={"DPGATE_SSH_ACCEPT_NEW_HOST": "yes"})._factory()
    assert isinstance(client._policy, paramiko.RejectPolicy)
