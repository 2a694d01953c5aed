"""Nodes that run argv commands: locally, in a network namespace, or over SSH.

Commands are always argv lists. For SSH the remote side gets ``shlex.join(argv)``, so
every topology value (an interface name, a path) stays one quoted argument; no shell
string is ever built from topology data. Secrets come only from the environment variable
named by ``ssh.password_env`` or from ``ssh.key_file``; they are masked in every error.

Example::

    node = node_for(topo.nodes["DUT1"])          # SshNode for a lab DUT
    out = node.run(["vppctl", "show", "version"], timeout=10).stdout
    LocalNode(ns="dpg0-sut").run(["ip", "-j", "link"])

Tests use a recording fake with the same ``run(argv, timeout, check, sudo)`` method.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Sequence

from dpgate.exec import runner
from dpgate.model.errors import ConfigError, DpgateError, EnvironmentProblem


@dataclass(frozen=True)
class Result:
    """Outcome of one command: ``argv`` as run, exit code and output."""

    argv: List[str]
    returncode: int
    stdout: str
    stderr: str


def with_sudo(argv: Sequence[str], sudo: bool) -> List[str]:
    """``sudo -n`` (never prompt) in front of argv when ``sudo``.

    >>> with_sudo(["vppctl", "show", "version"], True)
    ['sudo', '-n', 'vppctl', 'show', 'version']
    """
    out = [str(a) for a in argv]
    return ["sudo", "-n"] + out if sudo else out


def remote_command(argv: Sequence[str], sudo: bool = False) -> str:
    """The command line sent over SSH: each argument quoted with shlex.

    >>> remote_command(["ip", "link", "set", "x; rm -rf /", "up"])
    "ip link set 'x; rm -rf /' up"
    """
    if not argv:
        raise ConfigError("empty command")
    return shlex.join(with_sudo(argv, sudo))


def mask(text: str, secrets: Sequence[str]) -> str:
    """Replace every secret in ``text`` by ``***``.

    >>> mask("auth failed for pw hunter2", ["hunter2"])
    'auth failed for pw ***'
    """
    for s in secrets:
        if s:
            text = text.replace(s, "***")
    return text


class LocalNode:
    """Runs argv on this machine, optionally inside network namespace ``ns`` (dpgate.exec.runner).

    ``cpus``: where the long-running processes it starts as console services are pinned
    (``dpgate.testbeds.lab.console``); its short commands are not pinned.
    """

    def __init__(
        self,
        ns: Optional[str] = None,
        sudo: bool = False,
        name: str = "local",
        cpus: Optional[Sequence[int]] = None,
    ):
        self.ns, self.sudo, self.name = ns, sudo, name
        self.cpus = list(cpus) if cpus else None

    def run(
        self,
        argv: Sequence[str],
        timeout: float = 30.0,
        check: bool = True,
        sudo: Optional[bool] = None,
        input: Optional[str] = None,
    ) -> Result:
        full = with_sudo(argv, self.sudo if sudo is None else sudo)
        res = runner.run(full, ns=self.ns, timeout=timeout, check=check, input=input)
        return Result(list(res.args), res.returncode, res.stdout or "", res.stderr or "")

    def close(self) -> None:
        pass


class SshNode:
    """Runs argv on a lab host over SSH (paramiko, imported on first connect).

    ``ssh`` is a ``dpgate.config.topology.Ssh``; ``env`` defaults to ``os.environ`` (tests pass a
    dict); ``client_factory`` builds the paramiko-like client (tests pass a fake).
    """

    def __init__(
        self,
        ssh: Any,
        name: str = "",
        env: Optional[dict] = None,
        client_factory: Optional[Callable[[], Any]] = None,
        log: Optional[Callable[[str], None]] = None,
    ):
        self.ssh = ssh
        self.name = name or ssh.host
        self.env = os.environ if env is None else env
        self.client_factory = client_factory
        self.log = log or (lambda msg: None)
        self._client: Any = None

    # -- credentials ------------------------------------------------------------------
    def _password(self) -> Optional[str]:
        var = self.ssh.password_env
        if not var:
            return None
        value = self.env.get(var)
        if not value:
            raise EnvironmentProblem(
                f"{self.name}: environment variable {var} (ssh.password_env) is not set: export it, or use ssh.key_file"
            )
        return value

    @property
    def _secrets(self) -> List[str]:
        var = self.ssh.password_env
        return [self.env.get(var, "")] if var else []

    def _factory(self) -> Any:
        if self.client_factory is not None:
            return self.client_factory()
        try:
            import paramiko  # lazy: only lab runs need it
        except ImportError:
            raise EnvironmentProblem("SSH to lab nodes needs paramiko: pip install paramiko") from None
        client = paramiko.SSHClient()
        client.load_system_host_keys()  # ~/.ssh/known_hosts
        known = getattr(self.ssh, "known_hosts", None)
        if known:  # a lab on one machine writes its DUT's generated host key there
            if not os.path.isfile(os.path.expanduser(known)):
                raise ConfigError(
                    f"ssh.known_hosts {known!r} does not exist", path=f"{self.name}.ssh.known_hosts"
                )
            client.load_host_keys(os.path.expanduser(known))
        # Unknown host keys are refused (no silent trust on first use): see the connect error.
        # DPGATE_SSH_ACCEPT_NEW_HOST=1 is the explicit, logged opt-in to trust new keys.
        if self.env.get("DPGATE_SSH_ACCEPT_NEW_HOST") == "1":
            self.log(
                f"{self.name}: DPGATE_SSH_ACCEPT_NEW_HOST=1: accepting an unknown host key for {self.ssh.host}"
            )
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        else:
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        return client

    def connect(self) -> Any:
        if self._client is not None:
            return self._client
        password = self._password()
        key = os.path.expanduser(self.ssh.key_file) if self.ssh.key_file else None
        if key and not os.path.isfile(key):
            raise ConfigError(
                f"ssh.key_file {self.ssh.key_file!r} does not exist", path=f"{self.name}.ssh.key_file"
            )
        client = self._factory()
        self.log(
            f"ssh {self.ssh.user}@{self.ssh.host}:{self.ssh.port} "
            f"({'key ' + key if key else 'password from $' + str(self.ssh.password_env) if password else 'agent'})"
        )
        try:
            client.connect(
                self.ssh.host,
                port=self.ssh.port,
                username=self.ssh.user,
                password=password,
                key_filename=key,
                timeout=self.ssh.timeout_s,
                allow_agent=password is None and key is None,
                look_for_keys=password is None and key is None,
            )
        except Exception as err:
            raise EnvironmentProblem(
                f"{self.name}: cannot SSH to {self.ssh.user}@{self.ssh.host}:{self.ssh.port}: "
                f"{mask(str(err), self._secrets)}"
                + (
                    f". If the host key is unknown, check it and add it: ssh-keyscan -p {self.ssh.port} "
                    f"{self.ssh.host} >> ~/.ssh/known_hosts"
                    if "known_hosts" in str(err) or "host key" in str(err).lower()
                    else ""
                )
            ) from None
        self._client = client
        return client

    def run(
        self,
        argv: Sequence[str],
        timeout: float = 30.0,
        check: bool = True,
        sudo: Optional[bool] = None,
        input: Optional[str] = None,
    ) -> Result:
        cmd = remote_command(argv, self.ssh.sudo if sudo is None else sudo)
        self.log(f"{self.name}$ {mask(cmd, self._secrets)}")
        client = self.connect()
        try:
            stdin, stdout, stderr = client.exec_command(cmd, timeout=timeout)
            if input is not None:
                stdin.write(input)
                stdin.channel.shutdown_write()
            out = stdout.read().decode("utf-8", "replace")
            err = stderr.read().decode("utf-8", "replace")
            code = stdout.channel.recv_exit_status()
        except DpgateError:
            raise
        except Exception as exc:  # socket.timeout, paramiko.SSHException, EOFError (often no text)
            get = getattr(client, "get_transport", None)
            transport = get() if get else None
            lost = get is not None and (transport is None or not transport.is_active())
            if lost:  # the next command connects again: teardown must still reach the node
                self.close()
            where = f"over SSH to {self.ssh.user}@{self.ssh.host}:{self.ssh.port}"
            raise DpgateError(
                f"{self.name}: {mask(cmd, self._secrets)!r} {where} "
                + (
                    "failed: the SSH connection was lost"
                    if lost
                    else f"failed or timed out after {timeout:g} s"
                )
                + f" ({mask(str(exc), self._secrets) or type(exc).__name__})"
            ) from None
        res = Result(with_sudo(argv, self.ssh.sudo if sudo is None else sudo), code, out, err)
        if check and code != 0:
            raise runner.CommandError(res.argv, code, mask(err or out, self._secrets))
        return res

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def node_for(node: Any, **kwargs: Any):
    """The right node for a topology node: SSH if it has ``ssh``, else local (in its namespace)."""
    if getattr(node, "ssh", None) is not None:
        return SshNode(node.ssh, **kwargs)
    return LocalNode(ns=getattr(node, "namespace", None))
