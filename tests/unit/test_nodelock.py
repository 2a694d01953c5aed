"""dpgate.exec.nodelock: the lab DUT lock, driven through a real LocalNode (argv commands run
for real on this machine, in a temporary directory standing for the DUT's /run/dpgate/locks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from dpgate.exec.lock import Busy, Owner, me
from dpgate.exec.nodelock import NodeLock
from dpgate.exec.remote import LocalNode
from dpgate.model.errors import EnvironmentProblem


class RecordingNode(LocalNode):
    """A LocalNode that keeps every argv (to check nothing but argv lists reach the node)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def run(self, argv, timeout=30.0, check=True, sudo=None, input=None):
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
        self.calls.append(argv)
        return super().run(argv, timeout=timeout, check=check, sudo=sudo, input=input)


def other_run(host="ci-runner-2", pid=4242, command="dpgate gate") -> Owner:
    o = me(command)
    o.host, o.pid = host, pid
    return o


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "dut" / "dut.lock")


def test_second_run_is_refused_naming_the_holder_and_gets_it_after_release(path):
    a = NodeLock(RecordingNode(), "DUT DUT1", path, owner=other_run()).acquire()
    try:
        with pytest.raises(Busy) as err:
            NodeLock(LocalNode(), "DUT DUT1", path).acquire(wait=0)
        msg = str(err.value)
        assert msg.startswith("DUT DUT1 is in use by pid 4242, `dpgate gate`, since ")
        assert "on ci-runner-2" in msg and msg.endswith("wait, or run on another lab testbed (topology)")
        assert json.load(open(os.path.join(path, "owner")))["token"] == a.record.token
    finally:
        a.release()
    assert not os.path.exists(path)
    b = NodeLock(LocalNode(), "DUT DUT1", path).acquire(wait=0)
    b.release()
    assert all(
        c[0] in ("mkdir", "tee", "cat", "stat", "date", "touch", "rm", "mv", "rmdir") for c in a.node.calls
    )


def test_heartbeat_keeps_a_live_run_past_its_lease(path):
    a = NodeLock(LocalNode(), "DUT", path, lease_s=1.0, owner=other_run()).acquire()
    try:
        time.sleep(2.5)
        with pytest.raises(Busy, match="in use by pid 4242"):
            NodeLock(LocalNode(), "DUT", path).acquire(wait=0)
    finally:
        a.release()


def test_a_run_that_stopped_renewing_is_dead_after_its_lease(path):
    a = NodeLock(LocalNode(), "DUT", path, lease_s=1.0, owner=other_run()).acquire()
    a._stop.set()  # the controller died: no more heartbeats, no release
    a._beat.join(5)
    time.sleep(2.5)
    b = NodeLock(LocalNode(), "DUT", path).acquire(wait=0)
    try:
        assert json.load(open(os.path.join(path, "owner")))["token"] == b.record.token
        assert [n for n in os.listdir(os.path.dirname(path))] == ["dut.lock"]  # the dead one is gone
    finally:
        b.release()
    a.release()  # the dead run coming back must not remove b's (already released) or any lock
    assert not os.path.exists(path)


def test_holder_on_this_machine_whose_pid_is_gone_is_dead_at_once(path):
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    dead = me("dpgate trial")
    dead.pid = int(gone)
    a = NodeLock(LocalNode(), "DUT", path, owner=dead).acquire()
    a._stop.set()
    b = NodeLock(LocalNode(), "DUT", path).acquire(wait=0)  # no lease wait: the pid is gone
    assert json.load(open(os.path.join(path, "owner")))["token"] == b.record.token
    b.release()


def test_lock_directory_without_record_is_busy_briefly_then_dead(path):
    os.makedirs(path)  # a run died between mkdir and writing its record
    with pytest.raises(Busy, match="unknown \\(lock directory without owner record\\)"):
        NodeLock(LocalNode(), "DUT", path).acquire(wait=0)
    old = time.time() - 120
    os.utime(path, (old, old))
    b = NodeLock(LocalNode(), "DUT", path).acquire(wait=0)
    b.release()


def test_release_leaves_a_lock_that_is_no_longer_ours(path):
    a = NodeLock(LocalNode(), "DUT", path, owner=other_run()).acquire()
    a._stop.set()
    with open(os.path.join(path, "owner"), "w") as fh:  # declared dead and taken over meanwhile
        json.dump({"pid": 1, "command": "dpgate gate", "token": "someone-else"}, fh)
    a.release()
    assert os.path.isdir(path)


def test_waits_then_takes_the_lock_when_it_is_released(path):
    import threading

    a = NodeLock(LocalNode(), "DUT", path, owner=other_run()).acquire()
    threading.Timer(1.0, a.release).start()
    lines = []
    t0 = time.monotonic()
    b = NodeLock(LocalNode(), "DUT", path).acquire(wait=30, progress=lines.append, poll=0.2)
    assert time.monotonic() - t0 < 10
    assert lines and lines[0].startswith("dpgate: DUT is in use by pid 4242")
    b.release()


def test_a_lock_directory_others_cannot_write_is_an_error_not_a_wait(tmp_path):
    """Seen in CI: root had created the lock directory 0755, the SSH user's mkdir of its lock
    failed, and acquire took that for a holder that had just left, retrying for ever."""
    parent = tmp_path / "locks"
    parent.mkdir(mode=0o755)

    class Refusing(RecordingNode):  # the same argv, run as if by a user without write access
        def run(self, argv, timeout=30.0, check=True, sudo=None, input=None):
            if argv[0] == "mkdir" and argv[-1] == str(parent / "dut.lock"):
                argv = [
                    "sh",
                    "-c",
                    'echo "mkdir: cannot create directory $1: Permission denied" >&2; exit 1',
                    "mkdir",
                    argv[-1],
                ]
            return super().run(argv, timeout=timeout, check=check, sudo=sudo, input=input)

    start = time.monotonic()
    with pytest.raises(EnvironmentProblem) as err:
        NodeLock(Refusing(), "DUT DUT1", str(parent / "dut.lock")).acquire(wait=60)
    assert time.monotonic() - start < 10
    msg = str(err.value)
    assert "Permission denied" in msg and f"chmod 1777 {parent}" in msg


def test_the_lock_directory_is_created_writable_for_every_user(path):
    lock = NodeLock(LocalNode(), "DUT DUT1", path).acquire(wait=0)
    lock.release()
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o7777) == "0o1777"
