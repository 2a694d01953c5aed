"""Exclusive ownership between processes: testbeds, output directories, append-only files.

A lock is a file held with ``flock(2)`` plus a JSON owner record written into it (pid,
command, argv, start time, host, token). The kernel drops a flock when the last process
holding the open file dies, so "the owner is dead" is decided by trying the lock, never by
trusting a pid: a record whose flock is free is stale and is simply overwritten.

Testbed locks live in ``/run/dpgate/locks/<prefix>.lock`` (``DPGATE_LOCK_DIR`` moves
them). Two prefixes of which one starts with the other (``dpg`` and ``dpg0-``) name
overlapping namespaces, so holding one of them also excludes the other.

    lock = testbed_lock("dpg0-").acquire(wait=600, progress=print, command="dpgate gate")
    try:
        ...                          # nobody else runs on dpg0- meanwhile
    finally:
        lock.release()

    holder("dpg0-").describe()       # 'pid 1234, `dpgate gate`, since 12:03:11'

A lock is re-entrant inside one process, and a parent hands it to a child process (the
gate's robot) with :func:`inherit`: the child's own acquire of the same testbed then
succeeds without waiting, and the child keeps the flock alive while it runs.

Append-only files (the history store) are ``dpgate.exec.appendfile``; the owner record,
``Busy`` and the pid helpers are ``dpgate.exec.lockowner`` (re-exported here).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import random
import re
import sys
import time
from dataclasses import asdict
from typing import Callable, Dict, List, MutableMapping, Optional, Tuple

from dpgate.model.errors import ConfigError, EnvironmentProblem

from .lockowner import Busy, Owner, format_wait, me, parse_wait, pid_alive, pids_holding

__all__ = [
    "Busy",
    "Owner",
    "me",
    "pid_alive",
    "pids_holding",
    "parse_wait",
    "format_wait",
    "FileLock",
    "default_wait",
    "to_stderr",
    "hold_testbed",
    "testbed_lock",
    "holder",
    "live_testbeds",
    "outdir_lock",
    "inherit",
    "lock_dir",
    "testbed_lock_path",
]


LOCK_DIR_ENV = "DPGATE_LOCK_DIR"
DEFAULT_LOCK_DIR = "/run/dpgate/locks"
#: ``name=token;name=token``: locks a parent holds on behalf of this process (see inherit()).
INHERIT_ENV = "DPGATE_LOCKS_HELD"
#: Default bound of the wait for a busy testbed (``--wait-testbed``), seconds.
DEFAULT_WAIT_S = 600.0
PROGRESS_EVERY_S = 30.0
BUSY_HINT = "use --prefix for a second embedded testbed or wait"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def lock_dir() -> str:
    return os.environ.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR


def testbed_lock_path(prefix: str) -> str:
    if not _NAME.match(prefix):
        raise ConfigError(
            f"expected a prefix of letters, digits, '-', '.', '_', got {prefix!r}", path="--prefix"
        )
    return os.path.join(lock_dir(), f"{prefix}.lock")


#: Locks this process holds: realpath -> [lock, count] (re-entrant acquire).
_HELD: Dict[str, List] = {}


def _inherited(env: Optional[MutableMapping[str, str]] = None) -> Dict[str, str]:
    raw = (os.environ if env is None else env).get(INHERIT_ENV, "")
    return dict(item.split("=", 1) for item in raw.split(";") if "=" in item)


class FileLock:
    """One lock file. ``what`` names the thing in messages (``testbed dpg0-``)."""

    def __init__(self, path: str, what: str, hint: str = BUSY_HINT, overlap_dir: Optional[str] = None):
        self.path = os.path.abspath(path)
        self.what, self.hint = what, hint
        self.overlap_dir = overlap_dir
        self.fd: Optional[int] = None
        self.owner: Optional[Owner] = None
        self.inherited = False
        self.passed_on = False  # inherit() gave it to a child: keep the record on release
        self._key = os.path.realpath(self.path)

    # -- reading -----------------------------------------------------------------------
    def holder(self) -> Optional[Owner]:
        """The live holder, or None when the lock is free (a stale record is ignored)."""
        if self._key in _HELD:
            return _HELD[self._key][0].owner
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return None  # nobody holds it: whatever the record says is stale
            except OSError as err:
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
            owner = None
            for _ in range(20):  # the holder may be writing its record right now
                owner = Owner.from_json(os.pread(fd, 65536, 0).decode("utf-8", "replace"))
                if owner:
                    break
                time.sleep(0.01)
            owner = owner or Owner(0, "unknown (no owner record)")
            if owner.pid and not pid_alive(owner.pid):
                kids = [p for p in pids_holding(self.path) if p != os.getpid()]
                owner.note = "exited; " + (
                    f"pid {', '.join(map(str, kids))} it started still holds the lock"
                    if kids
                    else "a process it started still holds the lock"
                )
            return owner
        finally:
            os.close(fd)

    # -- acquiring ---------------------------------------------------------------------
    def try_acquire(self, command: Optional[str] = None) -> Optional[Owner]:
        """Take the lock now: None when taken, else the live holder."""
        held = _HELD.get(self._key)
        if held:
            held[1] += 1
            self.owner, self.inherited = held[0].owner, True
            return None
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as err:
            raise EnvironmentProblem(
                f"cannot create the lock file {self.path} of {self.what}: {err.strerror}; "
                f"run as root, or point {LOCK_DIR_ENV} at a writable directory"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            holder = self.holder()
            token = _inherited().get(os.path.basename(self.path))
            if holder is not None and token and holder.token == token:
                self.owner, self.inherited = holder, True  # our parent holds it for us
                return None
            return holder or Owner(0, "unknown", note="released while we looked; retrying")
        owner = me(command)
        data = json.dumps(asdict(owner)).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        self.fd, self.owner, self.inherited = fd, owner, False
        _HELD[self._key] = [self, 1]
        other = self._overlapping_holder()
        if other is not None:
            self.release()
            return other
        return None

    def _overlapping_holder(self) -> Optional[Owner]:
        """A live holder of an overlapping testbed prefix (``dpg`` vs ``dpg0-``), if any."""
        if not self.overlap_dir or not os.path.isdir(self.overlap_dir):
            return None
        mine = os.path.basename(self.path)[: -len(".lock")]
        for name in sorted(os.listdir(self.overlap_dir)):
            other = name[: -len(".lock")] if name.endswith(".lock") else None
            if not other or other == mine or not (other.startswith(mine) or mine.startswith(other)):
                continue
            lk = FileLock(os.path.join(self.overlap_dir, name), f"testbed {other}")
            if lk._key in _HELD or _inherited().get(name):
                continue
            h = lk.holder()
            if h is not None:
                h.note = (h.note + "; " if h.note else "") + f"on the overlapping testbed {other}"
                return h
        return None

    def acquire(
        self,
        wait: float = 0.0,
        progress: Optional[Callable[[str], None]] = None,
        command: Optional[str] = None,
        poll: float = 0.5,
    ) -> FileLock:
        """Take the lock, waiting up to ``wait`` s (a progress line every 30 s), else raise Busy."""
        start = time.monotonic()
        next_note = start
        while True:
            holder = self.try_acquire(command)
            if holder is None:
                return self
            now = time.monotonic()
            if now - start >= wait:
                waited = f" (waited {format_wait(now - start)})" if wait > 0 else ""
                raise Busy(f"{self.what} is in use by {holder.describe()}{waited}; {self.hint}", holder)
            if progress is not None and now >= next_note:
                progress(
                    f"dpgate: {self.what} is in use by {holder.describe()}; waiting "
                    f"({format_wait(now - start)} of at most {format_wait(wait)})"
                )
                next_note = now + PROGRESS_EVERY_S
            time.sleep(min(poll + random.uniform(0, poll / 4), max(0.01, wait - (now - start))))

    def release(self) -> None:
        """Give the lock back (a nested hold only drops its count; the last one closes it)."""
        if self.owner is None and self.fd is None:
            return
        held = _HELD.get(self._key)
        self.owner = None
        if self.inherited and not (held and held[0] is not self):
            self.inherited = False  # held by our parent process: nothing of ours to drop
            return
        self.inherited = False
        if not held:
            return
        held[1] -= 1
        if held[1] > 0:
            return
        del _HELD[self._key]
        primary = held[0]
        fd, primary.fd, primary.owner = primary.fd, None, None
        if fd is not None:
            try:
                if not primary.passed_on:
                    os.ftruncate(fd, 0)  # no stale record is left behind
            finally:
                os.close(fd)  # closing drops the flock

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


WAIT_ENV = "DPGATE_WAIT_TESTBED"


def default_wait() -> float:
    """The busy-testbed wait of library users (Robot, pabot): ``DPGATE_WAIT_TESTBED`` or 10 min."""
    raw = os.environ.get(WAIT_ENV)
    return parse_wait(raw) if raw else DEFAULT_WAIT_S


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def hold_testbed(prefix: str, wait: Optional[float] = None, command: Optional[str] = None) -> FileLock:
    """Acquire testbed ``prefix`` for this process, waiting with progress lines on stderr."""
    return testbed_lock(prefix).acquire(default_wait() if wait is None else wait, to_stderr, command)


def testbed_lock(prefix: str) -> FileLock:
    """The lock of the embedded testbed with namespace prefix ``prefix``."""
    return FileLock(testbed_lock_path(prefix), f"testbed {prefix}", overlap_dir=lock_dir())


def holder(prefix: str) -> Optional[Owner]:
    """Who holds testbed ``prefix`` now (None when free)."""
    return testbed_lock(prefix).holder()


def live_testbeds(prefix: str) -> List[Tuple[str, Owner]]:
    """Held testbed locks that overlap ``prefix`` (for ``dpgate cleanup``)."""
    d = lock_dir()
    out = []
    if os.path.isdir(d):
        for name in sorted(os.listdir(d)):
            p = name[: -len(".lock")] if name.endswith(".lock") else None
            if p and (p.startswith(prefix) or prefix.startswith(p)):
                h = FileLock(os.path.join(d, name), f"testbed {p}").holder()
                if h is not None and os.path.realpath(os.path.join(d, name)) not in _HELD:
                    out.append((p, h))
    return out


def outdir_lock(outdir: str) -> FileLock:
    """The lock of a results directory: two live runs never write into one."""
    return FileLock(
        os.path.join(outdir, ".dpgate.lock"),
        f"output directory {outdir}",
        hint="pass another --outdir, or wait for that run to end",
    )


def inherit(env: MutableMapping[str, str], *locks: FileLock) -> Tuple[int, ...]:
    """Let a child process (started with ``env`` and ``pass_fds=`` the result) use ``locks``.

    The child finds their tokens in ``DPGATE_LOCKS_HELD`` and keeps the flocks alive while it
    runs, so a parent that dies first does not free the testbed under a running child.
    """
    items = _inherited(env)
    fds = []
    for lk in locks:
        if lk.owner is None:
            continue
        items[os.path.basename(lk.path)] = lk.owner.token
        if lk.fd is not None:
            fds.append(lk.fd)
            lk.passed_on = True
    env[INHERIT_ENV] = ";".join(f"{k}={v}" for k, v in items.items())
    return tuple(fds)
