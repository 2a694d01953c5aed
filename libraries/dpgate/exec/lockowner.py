"""Who holds a lock and the process helpers around it, for ``dpgate.exec.lock``: the JSON
owner record written into a lock file (:class:`Owner`), the :class:`Busy` error naming it,
whether a pid is alive, which pids keep a file open, and the ``--wait-testbed`` durations.

    >>> Owner.from_json('{"pid": 7, "command": "dpgate trial"}').command
    'dpgate trial'
    >>> pid_alive(0)
    False
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import List, Optional

from dpgate.model.errors import ConfigError, EnvironmentProblem


class Busy(EnvironmentProblem):
    """The thing is held by another live process; ``holder`` says who."""

    def __init__(self, message: str, holder: Owner):
        super().__init__(message)
        self.holder = holder


@dataclass
class Owner:
    """Who holds a lock.

    >>> Owner(1234, "dpgate gate", started=0.0).describe().startswith("pid 1234, `dpgate gate`, since ")
    True
    """

    pid: int
    command: str
    argv: List[str] = field(default_factory=list)
    started: float = 0.0
    host: str = ""
    token: str = ""
    note: str = ""

    def describe(self) -> str:
        since = time.strftime("%H:%M:%S", time.localtime(self.started)) if self.started else "an unknown time"
        text = f"pid {self.pid}, `{self.command}`, since {since}"
        return f"{text} ({self.note})" if self.note else text

    @classmethod
    def from_json(cls, text: str) -> Optional[Owner]:
        try:
            d = json.loads(text)
            return cls(
                int(d["pid"]),
                str(d.get("command", "?")),
                [str(a) for a in d.get("argv", [])],
                float(d.get("started", 0.0)),
                str(d.get("host", "")),
                str(d.get("token", "")),
            )
        except (ValueError, KeyError, TypeError):
            return None


def me(command: Optional[str] = None) -> Owner:
    """An owner record for this process (``command`` is the short label, e.g. ``dpgate trial``)."""
    label = command or _short_command(sys.argv)
    return Owner(os.getpid(), label, list(sys.argv), time.time(), socket.gethostname(), uuid.uuid4().hex)


def _short_command(argv: List[str]) -> str:
    words = [os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:4])]
    return " ".join(words)[:80] or "?"


def pid_alive(pid: int) -> bool:
    """Is ``pid`` a live (non-zombie) process on this machine?"""
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(") ", 1)[1][0] not in "ZX"
    except (OSError, IndexError):
        return False


def pids_holding(path: str) -> List[int]:
    """Live pids that have ``path`` open (to name who keeps an inherited lock alive)."""
    try:
        target = os.stat(path)
    except OSError:
        return []
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
                found.append(int(pid))
                break
    return found


def parse_wait(text: str) -> float:
    """``--wait-testbed`` values: seconds, or a number with s/m/h.

    >>> parse_wait("10m"), parse_wait("90"), parse_wait("1.5h"), parse_wait("0")
    (600.0, 90.0, 5400.0, 0.0)
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)?\s*", str(text))
    if not m:
        raise ConfigError(
            f"expected a duration like 10m, 90s or 0 (do not wait), got {text!r}", path="--wait-testbed"
        )
    unit = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[m.group(2) or "s"]
    return float(m.group(1)) * unit


def format_wait(seconds: float) -> str:
    """A wait for messages.

    >>> format_wait(600), format_wait(45), format_wait(90)
    ('10 min', '45 s', '1 min 30 s')
    """
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    return f"{s // 60} min" + (f" {s % 60} s" if s % 60 else "")
