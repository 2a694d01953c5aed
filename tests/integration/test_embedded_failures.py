"""Teardown after failures: an exception in the middle of a trial inside
``with EmbeddedSession(...)``, and leftovers of a crashed run with the same prefix, which
the next ``up()`` must remove. After each, nothing of ours may remain."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from dpgate.config.topology import load_topology
from dpgate.testbeds.embedded.session import EmbeddedSession
from dpgate.testbeds.embedded.testbed import NamespaceTestbed, run_dir

PREFIX = os.environ.get("DPGATE_FAILURES_TEST_PREFIX", "it2-")
CRASH_PREFIX = "it3-"


class Boom(Exception):
    pass


def _boom(signum, frame):
    raise Boom("test failed in the middle of a trial")


def _tcpreplay_running(prefix: str) -> bool:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = fh.read().split(b"\0")
            except OSError:
                continue
            if (
                argv
                and os.path.basename(argv[0]) == b"tcpreplay"
                and run_dir(prefix).encode() in b" ".join(argv)
            ):
                return True
    return False


@pytest.mark.parametrize("sut", ["linux-bridge", "ovs-xconnect", "testpmd-io"])
def test_exception_mid_trial_inside_with_block(sut, topology_path, leftovers):
    left = leftovers(PREFIX)
    seen = {}
    old = signal.signal(signal.SIGALRM, _boom)
    try:
        with pytest.raises(Boom):
            with EmbeddedSession(topology_path, sut=sut, prefix=PREFIX, calibrate=False) as s:
                left.remember()
                seen["namespaces"] = left.namespaces()
                seen["sut_alive"] = s.sut.alive()
                signal.setitimer(signal.ITIMER_REAL, 0.8)  # fires while tcpreplay sends
                s.measure(20_000, 3.0)
                seen["finished"] = True  # must not get here
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert sorted(seen["namespaces"]) == [PREFIX + "sut", PREFIX + "tg"]
    assert seen["sut_alive"] is True
    assert "finished" not in seen
    assert len(left.inodes) == 2
    assert not _tcpreplay_running(PREFIX)
    left.assert_clean()


def test_failed_assertion_after_trial_inside_with_block(topology_path, leftovers):
    left = leftovers(PREFIX)
    with pytest.raises(AssertionError, match="deliberate"):
        with EmbeddedSession(topology_path, sut="testpmd-mac", prefix=PREFIX, calibrate=False) as s:
            left.remember()
            r = s.measure(10_000, 0.5)
            assert r.rx_packets == 5_000
            assert r.rx_packets == -1, "deliberate failure inside the session"
    left.assert_clean()


def test_crashed_run_leftovers_removed_by_next_up(topology_path, leftovers):
    """A run killed with SIGKILL leaves its namespaces, veths, processes and scratch files;
    the next up() with the same prefix removes them and builds a fresh testbed."""
    left = leftovers(CRASH_PREFIX)
    topo = load_topology(topology_path, prefix=CRASH_PREFIX)
    tg, sut = topo.tg.namespace, topo.dut.namespace
    NamespaceTestbed(topo).down()  # start from nothing
    sleeper = None
    try:
        for ns in (tg, sut):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(
            ["ip", "link", "add", "tg0", "netns", tg, "type", "veth", "peer", "name", "sut0", "netns", sut],
            check=True,
        )
        subprocess.run(
            ["ip", "-n", sut, "link", "add", "crash0", "type", "veth", "peer", "name", "crash1"], check=True
        )
        sleeper = subprocess.Popen(["ip", "netns", "exec", sut, "sleep", "600"], start_new_session=True)
        os.makedirs(run_dir(CRASH_PREFIX), exist_ok=True)
        stale = os.path.join(run_dir(CRASH_PREFIX), "stale.pcap")
        with open(stale, "w") as fh:
            fh.write("left by a crashed run")
        end = time.monotonic() + 5
        while time.monotonic() < end and sleeper.pid not in _ns_pids(sut):
            time.sleep(0.05)
        left.remember()
        # the checker sees the crash leftovers (so it can fail)
        problems = "\n".join(left.report())
        assert f"namespace {sut} remains" in problems and f"namespace {tg} remains" in problems
        assert "sleep 600" in problems
        assert "scratch directory" in problems

        tb = NamespaceTestbed(topo)
        tb.up()
        try:
            assert sleeper.wait(5) is not None  # the crashed run's process was killed
            assert not os.path.exists(stale)
            assert _ns_pids(sut) == []
            assert sorted(left.namespaces()) == [sut, tg]
            # fresh namespaces, not the crashed ones (inode numbers may be reused: look inside)
            links = subprocess.run(["ip", "-n", sut, "-o", "link"], capture_output=True, text=True).stdout
            assert "crash0" not in links and "sut0" in links
            left.inodes |= {os.stat(f"/run/netns/{n}").st_ino for n in (tg, sut)}
            # and it works: both links up with the topology's MACs
            for t, s in topo.pairs():
                assert tb.link_state(tg, t.name) == "UP"
                out = subprocess.run(
                    ["ip", "netns", "exec", sut, "cat", f"/sys/class/net/{s.name}/address"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.strip()
                assert out == s.mac
        finally:
            tb.down()
        left.assert_clean()
    finally:
        if sleeper is not None and sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait(5)
        NamespaceTestbed(topo).down()


def _ns_pids(ns: str):
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]
