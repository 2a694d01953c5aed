"""Exclusive use of a lab node (a DUT) by one run: a lock directory on the node, over SSH.

A flock cannot outlive an SSH command, so a lab DUT is locked the portable way, with argv
commands only (``node.run(argv)``: ``dpgate.remote.SshNode`` or ``LocalNode``):

* acquire: ``mkdir <path>`` (atomic: one run wins), then the owner record (pid, command,
  start time, controller host, token, lease) into ``<path>/owner``;
* while held, a heartbeat thread touches ``<path>/owner`` every ``lease_s / 4`` seconds;
* the holder is dead when the record was not renewed for ``lease_s`` seconds by the DUT's
  own clock (a killed run or a lost controller), or at once when the record names this
  machine and its pid is gone; a dead holder's directory is moved aside (atomic ``mv``) and
  the lock taken;
* release: stop the heartbeat and remove the directory if the record is still ours.

The TG side of a lab testbed is TRex's own port ownership (ports acquired without force,
``dpgate.trex``). Example::

    lock = NodeLock(node_for(topo.dut), "DUT DUT1").acquire(wait=600, progress=print)
    try:
        ...
    finally:
        lock.release()
"""

from __future__ import annotations

import json
import posixpath
import random
import socket
import threading
import time
from dataclasses import asdict
from typing import Any, Callable, Optional

from dpgate.exec.lock import Busy, Owner, format_wait, me, pid_alive
from dpgate.model.errors import EnvironmentProblem

#: /tmp: writable by a DUT user without root (sudo is for the SUT's commands, not ours)
DEFAULT_PATH = "/tmp/dpgate-locks/dut.lock"
DEFAULT_LEASE_S = 120.0
#: A lock directory without an owner record this old is a run that died between mkdir and write.
NO_RECORD_GRACE_S = 30.0
LAB_HINT = "another pipeline is using this lab DUT: wait, or run on another lab testbed (topology)"


class NodeLock:
    """The lock of one lab node; ``what`` names it in messages (``DUT DUT1``)."""

    def __init__(
        self,
        node: Any,
        what: str = "DUT",
        path: str = DEFAULT_PATH,
        lease_s: float = DEFAULT_LEASE_S,
        command: Optional[str] = None,
        hint: str = LAB_HINT,
        owner: Optional[Owner] = None,
    ):
        self.node, self.what, self.path, self.lease_s, self.hint = node, what, path, float(lease_s), hint
        self.record = owner or me(command)
        self.held = False
        self.lost = False  # the heartbeat found another run's record: we were declared dead
        self._stop = threading.Event()
        self._beat: Optional[threading.Thread] = None

    @property
    def owner_path(self) -> str:
        return posixpath.join(self.path, "owner")

    def _run(self, *argv: str, input: Optional[str] = None):
        return self.node.run(list(argv), timeout=30.0, check=False, input=input)

    # -- reading -------------------------------------------------------------------------
    def _read(self, path: str) -> tuple[Optional[Owner], float]:
        """(owner record, lease) of a lock directory; (None, 0) when it has none (yet)."""
        res = self._run("cat", posixpath.join(path, "owner"))
        owner = Owner.from_json(res.stdout) if res.returncode == 0 else None
        try:
            lease = float(json.loads(res.stdout).get("lease_s", DEFAULT_LEASE_S)) if owner else 0.0
        except (ValueError, AttributeError):
            lease = DEFAULT_LEASE_S
        return owner, lease

    def _age(self, path: str) -> Optional[float]:
        """Seconds since ``path`` was modified, by the node's clock (None: it does not exist)."""
        st = self._run("stat", "-c", "%Y", path)
        now = self._run("date", "+%s")
        try:
            return float(now.stdout.strip()) - float(st.stdout.strip())
        except ValueError:
            return None

    def holder(self) -> tuple[Optional[Owner], bool]:
        """(holder, alive). (None, False) when the lock is free; a dead holder comes with False."""
        owner, lease = self._read(self.path)
        if owner is None:
            age = self._age(self.path)
            if age is None:
                return None, False  # no lock directory: free
            unknown = Owner(0, "unknown (lock directory without owner record)")
            return unknown, age < NO_RECORD_GRACE_S
        if owner.host == socket.gethostname() and not pid_alive(owner.pid):
            owner.note = "exited"
            return owner, False
        age = self._age(self.owner_path)
        if age is None:
            return None, False  # released while we looked
        if age > lease:
            owner.note = f"not renewed for {format_wait(age)}"
            return owner, False
        return owner, True

    # -- acquiring -----------------------------------------------------------------------
    def try_acquire(self) -> Optional[Owner]:
        """Take the lock now: None when taken, else the live holder."""
        parent = posixpath.dirname(self.path)
        node = getattr(self.node, "name", "the node")
        # 1777 like /tmp: runs of other users (root locally, an SSH user on the same host)
        # must be able to create their locks beside ours (the mode applies when we create it)
        made = self._run("mkdir", "-p", "-m", "1777", parent)
        if made.returncode != 0:  # e.g. an SSH user without write access there: never wait on it
            raise EnvironmentProblem(
                f"cannot create the {self.what} lock directory {parent} on {node}"
                f" ({(made.stderr or made.stdout or '').strip()[:200]}): give the SSH user write access there"
            )
        refused = 0
        for _ in range(3):
            made = self._run("mkdir", self.path)
            if made.returncode == 0:
                self._take()
                return None
            owner, alive = self.holder()
            if alive and owner is not None:
                return owner
            if owner is not None:
                self._break(owner)
            elif self._age(self.path) is None:  # mkdir failed and nothing is there: not a holder
                refused += 1
        if refused == 3:  # never "in use": waiting on it would wait forever
            raise EnvironmentProblem(
                f"cannot create the {self.what} lock {self.path} on {node}"
                f" ({(made.stderr or made.stdout or '').strip()[:200]}): give the SSH user write access to"
                f" {parent} (e.g. chmod 1777 {parent})"
            )
        return Owner(0, "unknown", note="the lock changed hands while we looked; retrying")

    def _take(self) -> None:
        rec = dict(asdict(self.record), lease_s=self.lease_s)
        rec.pop("note", None)
        self._run("tee", self.owner_path, input=json.dumps(rec) + "\n")
        self.held, self.lost = True, False
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, name=f"lock-{self.what}", daemon=True)
        self._beat.start()

    def _break(self, dead: Owner) -> None:
        """Move a dead holder's directory aside, unless someone else took the lock meanwhile."""
        aside = f"{self.path}.dead-{self.record.token}"
        if self._run("mv", "-T", self.path, aside).returncode != 0:
            return  # another run broke it first
        moved, _ = self._read(aside)
        if (moved.token if moved else "") != dead.token:
            self._run("mv", "-T", aside, self.path)  # a live run's fresh lock: put it back
            return
        self._run("rm", "-rf", aside)

    def acquire(
        self, wait: float = 0.0, progress: Optional[Callable[[str], None]] = None, poll: float = 2.0
    ) -> NodeLock:
        """Take the lock, waiting up to ``wait`` s (a progress line every 30 s), else raise Busy."""
        start = time.monotonic()
        next_note = start
        while True:
            holder = self.try_acquire()
            if holder is None:
                return self
            now = time.monotonic()
            if now - start >= wait:
                waited = f" (waited {format_wait(now - start)})" if wait > 0 else ""
                raise Busy(
                    f"{self.what} is in use by {holder.describe()}"
                    f"{' on ' + holder.host if holder.host else ''}{waited}; {self.hint}",
                    holder,
                )
            if progress is not None and now >= next_note:
                progress(
                    f"dpgate: {self.what} is in use by {holder.describe()}; waiting "
                    f"({format_wait(now - start)} of at most {format_wait(wait)})"
                )
                next_note = now + 30.0
            time.sleep(min(poll + random.uniform(0, poll / 4), max(0.01, wait - (now - start))))

    def _ours(self) -> bool:
        owner, _ = self._read(self.path)
        return owner is not None and owner.token == self.record.token

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease_s / 4):
            try:
                if not self._ours():
                    self.lost = True
                    return
                self._run("touch", "-c", self.owner_path)
            except Exception:  # an SSH hiccup: the next beat tries again, the lease covers 3 misses
                continue

    def release(self) -> None:
        """Stop renewing and remove the lock directory if it is still ours. Idempotent."""
        if not self.held:
            return
        self.held = False
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=35)
            self._beat = None
        if self._ours():
            self._run("rm", "-rf", self.path)

    def __enter__(self) -> NodeLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def lab_dut_lock(node: Any, dut: str, prefix: str, in_namespace: bool) -> NodeLock:
    """The lock of a lab run's DUT (``LabTestbed`` takes it when it opens the DUT session), so
    a second pipeline waits instead of reconfiguring the SUT under this one. A DUT in a
    namespace of this machine shares the controller's filesystem: its lock is named by the
    lab's prefix, so two labs on one machine do not wait on each other.

    >>> lab_dut_lock(None, "DUT1", "dpl-", in_namespace=True).path
    '/tmp/dpgate-locks/dut-dpl.lock'
    >>> lab_dut_lock(None, "DUT1", "lab1-", in_namespace=False).what
    'DUT DUT1'
    """
    path = f"/tmp/dpgate-locks/dut-{prefix.rstrip('-')}.lock" if in_namespace else DEFAULT_PATH
    return NodeLock(node, f"DUT {dut}", path=path)
