"""Integration tests: real namespaces, veth links, tcpreplay and SUT software on this machine.

They need root and network namespaces. As root they always run (CI runs them as root);
without root every test here is skipped with that reason. Each module uses its own
namespace prefix so modules (and other developers' testbeds) never collide.

``Leftovers(prefix)`` is the check that nothing of ours survives a teardown: namespaces
named with the prefix, processes inside them (also processes that keep a deleted
namespace alive, found by its inode), our SUT/generator processes by command line, our
veths (by MAC) in the root namespace, and the scratch directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from typing import Dict, List, Set

import pytest

from dpgate.testbeds.embedded.testbed import run_dir

ROOT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPOLOGY = os.path.join(ROOT_DIR, "topologies", "embedded.yaml")
LIBRARIES = os.path.join(ROOT_DIR, "libraries")
NETNS_DIR = "/run/netns"
#: Programs dpgate starts; any of them mentioning our prefix or scratch dir is a leftover.
OUR_PROGRAMS = (
    "tcpreplay",
    "dpgen",
    "ovs-vswitchd",
    "ovsdb-server",
    "dpdk-testpmd",
    "sleep",
    "stdbuf",
    "taskset",
    "ip",
)
OUR_MACS = ("02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:11", "02:00:00:00:00:12")


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.root)
            if os.geteuid() != 0:
                item.add_marker(
                    pytest.mark.skip(
                        reason="needs root and network namespaces (creates netns/veth, runs tcpreplay/OVS/testpmd)"
                    )
                )


def _proc_cmdline(pid: str) -> List[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return [a.decode(errors="replace") for a in fh.read().split(b"\0") if a]
    except OSError:
        return []


def _is_zombie(pid: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(") ", 1)[1][0] in "ZX"
    except (OSError, IndexError):
        return True


def _netns_inode(pid: str):
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


class Leftovers:
    """Remembers what our testbed created (namespace inodes) and reports what survives."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.workdir = run_dir(prefix)
        self.inodes: Set[int] = set()

    def remember(self) -> Set[int]:
        """Call while the testbed is up: keep the inodes of our namespaces."""
        if os.path.isdir(NETNS_DIR):
            for name in os.listdir(NETNS_DIR):
                if name.startswith(self.prefix):
                    self.inodes.add(os.stat(os.path.join(NETNS_DIR, name)).st_ino)
        return self.inodes

    def namespaces(self) -> List[str]:
        out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        return [
            ln.split()[0] for ln in out.splitlines() if ln.split() and ln.split()[0].startswith(self.prefix)
        ]

    def processes(self) -> Dict[int, str]:
        marks = (self.prefix + "tg", self.prefix + "sut", self.workdir, f"--file-prefix={self.prefix}")
        found = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit() or int(pid) == os.getpid() or _is_zombie(pid):
                continue
            argv = _proc_cmdline(pid)
            if not argv:
                continue
            line = " ".join(argv)
            prog = os.path.basename(argv[0])
            if _netns_inode(pid) in self.inodes:
                found[int(pid)] = "in our namespace: " + line
            elif prog in OUR_PROGRAMS and any(m in line for m in marks) and "pytest" not in line:
                found[int(pid)] = line
        return found

    def root_ns_veths(self) -> List[str]:
        out = subprocess.run(["ip", "-j", "link"], capture_output=True, text=True).stdout
        try:
            links = json.loads(out or "[]")
        except ValueError:
            return []
        return [f"{x.get('ifname')} {x.get('address')}" for x in links if x.get("address") in OUR_MACS]

    def report(self) -> List[str]:
        problems = []
        for ns in self.namespaces():
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            problems.append(f"namespace {ns} remains (pids {pids})")
        if os.path.isdir(NETNS_DIR):
            problems += [
                f"{NETNS_DIR}/{n} remains" for n in os.listdir(NETNS_DIR) if n.startswith(self.prefix)
            ]
        problems += [f"process {pid}: {line}" for pid, line in sorted(self.processes().items())]
        problems += [f"veth in root namespace: {v}" for v in self.root_ns_veths()]
        if os.path.exists(self.workdir):
            problems.append(f"scratch directory {self.workdir} remains")
        return problems

    def assert_clean(self, timeout: float = 3.0) -> None:
        """Nothing of ours remains (polls briefly: killed processes take a moment to go)."""
        end = time.monotonic() + timeout
        problems = self.report()
        while problems and time.monotonic() < end:
            time.sleep(0.1)
            problems = self.report()
        assert not problems, "leftovers after teardown:\n  " + "\n  ".join(problems)


@pytest.fixture(scope="session")
def topology_path() -> str:
    return TOPOLOGY


@pytest.fixture(scope="session")
def leftovers():
    """``leftovers(prefix)`` -> a :class:`Leftovers` checker (test modules are not a package)."""
    return Leftovers


@pytest.fixture(scope="session")
def module_session(topology_path, leftovers):
    """``with module_session(sut, prefix) as s``: an EmbeddedSession up (no calibration) whose
    namespaces ``s.leftovers`` remembers, brought down at the end, for one module's tests."""

    @contextlib.contextmanager
    def up(sut: str, prefix: str):
        from dpgate.testbeds.embedded.session import EmbeddedSession

        left = leftovers(prefix)
        s = EmbeddedSession(topology_path, sut=sut, prefix=prefix, calibrate=False)
        s.up()
        left.remember()
        s.leftovers = left  # type: ignore[attr-defined]
        try:
            yield s
        finally:
            s.down()

    return up


@pytest.fixture(scope="session")
def dpgate_cmd():
    """(argv prefix, env) to run the dpgate command line from this checkout."""
    import sys

    return [sys.executable, "-m", "dpgate.cli"], dpgate_env()


def dpgate_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = LIBRARIES + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("DPGATE_PREFIX", None)
    return env


def generator_sending(prefix: str) -> bool:
    """True while the testbed ``prefix`` sends: a tcpreplay of ours runs, or our dpgen (alive for
    the whole session) sees a TG port's tx counter move off zero (its own /proc/<pid>/net/dev)."""
    from dpgate.traffic.nsdev import parse_net_dev

    tag = run_dir(prefix).encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        argv = [a.encode() for a in _proc_cmdline(pid)]
        if not argv or tag not in b" ".join(argv):
            continue
        name = os.path.basename(argv[0])
        if name == b"tcpreplay":
            return True
        if name == b"dpgen":
            try:
                with open(f"/proc/{pid}/net/dev") as fh:
                    ports = parse_net_dev(fh.read())
            except OSError:
                continue
            if any(c["tx_packets"] > 0 for n, c in ports.items() if n.startswith("tg")):
                return True
    return False


@pytest.fixture(scope="session")
def sending():
    """``sending(prefix)``: is that testbed's generator sending (tcpreplay or dpgen)?"""
    return generator_sending
