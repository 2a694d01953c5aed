"""A lab on one machine: TG and DUT namespaces, veth links, a real sshd in the DUT namespace.

``topologies/lab-local.yaml`` describes it. :class:`LocalLab` brings it up and down:

* namespaces ``{prefix}tg`` (the TRex server runs there; started by ``dpgate.trex``'s server
  module, not here) and ``{prefix}dut`` (sshd and the SUT);
* one veth pair per link between af_packet ports (TG end in the TG namespace, DUT end in the
  DUT namespace, MACs from the topology, IPv6 off); memif links need only the socket
  directory, which both namespaces see (a network namespace does not separate files);
* a management veth per namespace (root end ``{prefix}m<node>``), the namespace end holds the
  address the topology names (``trex.server``, the DUT's ``ssh.host``), the root end the
  other host address of that /30: only SSH and the TRex RPC use them;
* ``sshd -f <run_dir>/ssh/sshd_config -D`` inside the DUT namespace, pinned to the DUT's CPUs
  (so is everything it starts), with a generated host key and client key in the run dir and a
  ``known_hosts`` the controller's SSH client checks the host key against.

Teardown kills every process left in our namespaces (by pid), deletes the namespaces (that
removes the veths) and the run dir, each step even when an earlier one fails. Start-up
removes leftovers of a dead run of the same prefix only; a live one is refused.

Example::

    lab = LocalLab(load_topology("topologies/lab-local.yaml", prefix="lb-"))
    with lab:                                     # up() ... down()
        SshNode(lab.topo.dut.ssh).run(["ip", "-br", "link"])
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import time
from typing import Any, List, Optional

from dpgate.exec import runner
from dpgate.model.errors import ConfigError, EnvironmentProblem

OWNER = "owner.pid"


def _ip(argv: List[str], ns: Optional[str] = None, check: bool = True) -> Any:
    return runner.run(["ip"] + argv, ns=ns, timeout=30, check=check)


class LocalLab:
    """Bring-up and teardown of the lab on one machine described by ``topo``."""

    def __init__(self, topo: Any, log: Any = None):
        if not topo.tg.namespace or not topo.dut.namespace:
            raise ConfigError(
                "a lab on one machine needs namespace: on the TG and DUT nodes, like '{prefix}tg'",
                topo.source,
                "nodes",
            )
        if topo.dut.ssh is None or not topo.dut.ssh.key_file or not topo.dut.ssh.known_hosts:
            raise ConfigError(
                "the local lab DUT needs ssh: {host, key_file, known_hosts} (files in {run_dir}/ssh)",
                topo.source,
                "nodes.DUT1.ssh",
            )
        self.topo, self.log = topo, log or (lambda msg: None)
        self.run_dir = topo.run_dir
        self.ssh_dir = os.path.join(self.run_dir, "ssh")
        self.namespaces = [topo.tg.namespace, topo.dut.namespace]
        self.sshd: Optional[subprocess.Popen] = None

    # -- context manager ------------------------------------------------------------------
    def __enter__(self) -> LocalLab:
        self.up()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.down()

    # -- addresses ----------------------------------------------------------------------
    def mgmt(self) -> List[tuple]:
        """[(namespace, root veth, namespace address/30, root address/30)] for TG and DUT."""
        out = []
        for node, addr, tag in (
            (self.topo.tg, self.topo.tg.trex.server if self.topo.tg.trex else None, "mtg"),
            (self.topo.dut, self.topo.dut.ssh.host, "mdut"),
        ):
            if not addr:
                continue
            try:
                ip = ipaddress.IPv4Address(addr)
            except ValueError:
                raise ConfigError(
                    f"a lab on one machine needs an IPv4 address here, got {addr!r}",
                    self.topo.source,
                    f"nodes.{node.type}",
                ) from None
            net = ipaddress.IPv4Network(f"{ip}/30", strict=False)
            peer = next(h for h in net.hosts() if h != ip)
            out.append((node.namespace, f"{self.topo.prefix}{tag}", f"{ip}/30", f"{peer}/30"))
        return out

    # -- up -----------------------------------------------------------------------------
    def up(self) -> None:
        if os.geteuid() != 0:
            raise EnvironmentProblem("a lab on one machine needs root (network namespaces, veths, sshd)")
        for tool in ("ip", "ssh-keygen", "/usr/sbin/sshd", "taskset"):
            if shutil.which(tool) is None:
                raise EnvironmentProblem(
                    f"{tool} not found: apt-get install iproute2 openssh-server util-linux"
                )
        self._clear_leftovers()
        try:
            os.makedirs(self.ssh_dir, mode=0o700)
            with open(os.path.join(self.run_dir, OWNER), "w") as fh:
                fh.write(str(os.getpid()))
            os.makedirs(os.path.join(self.run_dir, "memif"), exist_ok=True)
            for ns in self.namespaces:
                _ip(["netns", "add", ns])
                _ip(["link", "set", "lo", "up"], ns=ns)
            self._links()
            self._mgmt()
            self._sshd()
        except BaseException:
            self.down()
            raise
        self.log(f"local lab {self.topo.prefix}: up ({', '.join(self.namespaces)})")

    def _clear_leftovers(self) -> None:
        owner = os.path.join(self.run_dir, OWNER)
        if os.path.exists(owner):
            try:
                pid = int(open(owner).read().strip() or 0)
            except ValueError:
                pid = 0
            if pid and pid != os.getpid() and _alive(pid):
                raise EnvironmentProblem(
                    f"a local lab with prefix {self.topo.prefix!r} is running (pid {pid}): "
                    "stop it or use another prefix (DPGATE_PREFIX)"
                )
        existing = set(runner.run(["ip", "netns", "list"], timeout=30).stdout.split())
        if os.path.exists(self.run_dir) or existing & set(self.namespaces):
            self.log(f"local lab {self.topo.prefix}: removing leftovers of a dead run")
            self.down()
        for _, veth, _, root_addr in self.mgmt():
            ip = root_addr.split("/")[0]
            used = runner.run(["ip", "-o", "-4", "addr", "show"], timeout=30).stdout
            if f" {ip}/" in used and veth not in used:
                raise EnvironmentProblem(
                    f"{ip} is already on an interface of this machine (another lab?): "
                    "use a topology copy with other trex.server / ssh.host addresses"
                )

    def _links(self) -> None:
        tg_ns, dut_ns = self.namespaces
        for tg, dut in self.topo.pairs():
            kinds = {tg.port_kind, dut.port_kind}
            if kinds == {"memif"}:
                for p in (tg, dut):
                    if os.path.exists(p.memif.socket):
                        os.unlink(p.memif.socket)
                    os.makedirs(os.path.dirname(p.memif.socket), exist_ok=True)
                continue
            if kinds != {"af_packet"}:
                raise ConfigError(
                    f"link {tg.link}: a lab on one machine joins af_packet to af_packet (veth) or "
                    f"memif to memif, got {tg.port_kind} and {dut.port_kind}",
                    self.topo.source,
                    "nodes",
                )
            _ip(
                [
                    "link",
                    "add",
                    tg.name,
                    "netns",
                    tg_ns,
                    "address",
                    tg.mac,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    dut.name,
                    "netns",
                    dut_ns,
                    "address",
                    dut.mac,
                ]
            )
            for ns, name in ((tg_ns, tg.name), (dut_ns, dut.name)):
                runner.run(["sysctl", "-q", "-w", f"net.ipv6.conf.{name}.disable_ipv6=1"], ns=ns, timeout=30)
                _ip(["link", "set", name, "up"], ns=ns)

    def _mgmt(self) -> None:
        for ns, veth, ns_addr, root_addr in self.mgmt():
            _ip(["link", "add", veth, "type", "veth", "peer", "name", "mgmt", "netns", ns])
            _ip(["addr", "add", root_addr, "dev", veth])
            _ip(["link", "set", veth, "up"])
            _ip(["addr", "add", ns_addr, "dev", "mgmt"], ns=ns)
            _ip(["link", "set", "mgmt", "up"], ns=ns)

    def _sshd(self) -> None:
        d, ssh = self.ssh_dir, self.topo.dut.ssh
        host_key, client_key = os.path.join(d, "host_ed25519"), os.path.expanduser(ssh.key_file)
        for path in (host_key, client_key):
            runner.run(
                [
                    "ssh-keygen",
                    "-q",
                    "-t",
                    "ed25519",
                    "-N",
                    "",
                    "-C",
                    f"dpgate-{self.topo.prefix}lab",
                    "-f",
                    path,
                ],
                timeout=30,
            )
        shutil.copyfile(client_key + ".pub", os.path.join(d, "authorized_keys"))
        host_pub = open(host_key + ".pub").read().split()
        name = ssh.host if ssh.port == 22 else f"[{ssh.host}]:{ssh.port}"
        with open(os.path.expanduser(ssh.known_hosts), "w") as fh:
            fh.write(f"{name} {host_pub[0]} {host_pub[1]}\n")
        cfg = os.path.join(d, "sshd_config")
        with open(cfg, "w") as fh:
            fh.write(
                "\n".join(
                    [
                        f"ListenAddress {ssh.host}",
                        f"Port {ssh.port}",
                        f"HostKey {host_key}",
                        f"AuthorizedKeysFile {d}/authorized_keys",
                        f"PidFile {d}/sshd.pid",
                        "PermitRootLogin prohibit-password",
                        "PasswordAuthentication no",
                        "KbdInteractiveAuthentication no",
                        "UsePAM no",
                        "StrictModes no",
                        "X11Forwarding no",
                        "AllowTcpForwarding no",
                        "PrintMotd no",
                        "LogLevel ERROR",
                        "",
                    ]
                )
            )
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir (Debian sshd)
        cpus = ",".join(str(c) for c in (self.topo.dut.cpus or [self.topo.dut.main_cpu or 0]))
        log = open(os.path.join(d, "sshd.log"), "w")
        self.sshd = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                self.topo.dut.namespace,
                "taskset",
                "-c",
                cpus,
                "/usr/sbin/sshd",
                "-f",
                cfg,
                "-D",
                "-e",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        end = time.monotonic() + 15
        while True:
            if self.sshd.poll() is not None:
                raise EnvironmentProblem(
                    f"sshd in {self.topo.dut.namespace} exited: "
                    + open(os.path.join(d, "sshd.log")).read().strip()[-300:]
                )
            try:
                with socket.create_connection((ssh.host, ssh.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > end:
                    raise EnvironmentProblem(
                        f"sshd in {self.topo.dut.namespace} not listening on {ssh.host}:{ssh.port} within 15 s"
                    ) from None
                time.sleep(0.2)

    # -- down ---------------------------------------------------------------------------
    def down(self) -> List[str]:
        """Remove everything of this prefix; returns the problems met (each step still runs)."""
        problems: List[str] = []
        if self.sshd is not None and self.sshd.poll() is None:
            self.sshd.terminate()
            try:
                self.sshd.wait(5)
            except subprocess.TimeoutExpired:
                self.sshd.kill()
        existing = set(runner.run(["ip", "netns", "list"], timeout=30, check=False).stdout.split())
        for ns in self.namespaces:
            if ns not in existing:
                continue
            for sig in (signal.SIGTERM, signal.SIGKILL):
                pids = runner.run(["ip", "netns", "pids", ns], timeout=30, check=False).stdout.split()
                for pid in pids:
                    try:
                        os.kill(int(pid), sig)
                    except (ProcessLookupError, ValueError):
                        pass
                if pids and sig == signal.SIGTERM:
                    _wait_gone(ns, 10)
            res = runner.run(["ip", "netns", "del", ns], timeout=30, check=False)
            if res.returncode != 0:
                problems.append(f"ip netns del {ns}: {res.stderr.strip()}")
        for _, veth, _, _ in self.mgmt():  # gone with its peer's namespace; this catches a half-made one
            runner.run(["ip", "link", "del", veth], timeout=30, check=False)
        for tg, _ in self.topo.pairs():
            if tg.port_kind == "af_packet":
                runner.run(["ip", "link", "del", tg.name], timeout=30, check=False)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        from dpgate.testbeds.lab.service import (
            STATE_DIR,  # pid and log files of the SUT units of this lab (named after the prefix)
        )

        if os.path.isdir(STATE_DIR):
            for name in os.listdir(STATE_DIR):
                if name.startswith(self.topo.prefix):
                    os.unlink(os.path.join(STATE_DIR, name))
        for p in problems:
            self.log(p)
        return problems


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _wait_gone(ns: str, timeout_s: float) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        pids = runner.run(["ip", "netns", "pids", ns], timeout=30, check=False).stdout.split()
        if not [p for p in pids if _alive(int(p))]:
            return
        time.sleep(0.2)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m dpgate.testbeds.lab.local up|down [--topology F] [--prefix P]``: for manual runs."""
    import argparse

    from dpgate.config.topology import load_topology

    ap = argparse.ArgumentParser(prog="python -m dpgate.testbeds.lab.local")
    ap.add_argument("action", choices=["up", "down"])
    ap.add_argument("--topology", default="topologies/lab-local.yaml")
    ap.add_argument("--prefix", default=None)
    args = ap.parse_args(argv)
    lab = LocalLab(load_topology(args.topology, prefix=args.prefix), log=print)
    if args.action == "up":
        lab.up()
        # the sshd must outlive this command: detach it (down kills it by namespace)
        print(
            f"up: ssh -i {lab.topo.dut.ssh.key_file} -o UserKnownHostsFile={lab.topo.dut.ssh.known_hosts} "
            f"root@{lab.topo.dut.ssh.host}"
        )
        return 0
    return 1 if lab.down() else 0


if __name__ == "__main__":
    raise SystemExit(main())
