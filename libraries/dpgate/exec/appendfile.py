"""Append-only line files shared by concurrent processes (the history store's ``*.jsonl``).

Appends take an exclusive flock of the file itself and write the whole line at once; a line
torn by a writer that died mid-write is cut before the next append. Reads take a shared
flock and return complete lines only, so a reader never sees half an entry.

    append_line("history/embedded/x.jsonl", json.dumps(entry))
    [json.loads(x) for x in read_lines("history/embedded/x.jsonl")]
"""

from __future__ import annotations

import fcntl
import os
from typing import List


def append_line(path: str, line: str) -> None:
    """Append one line atomically: exclusive flock, torn tail of a dead writer cut, one write."""
    data = (line.rstrip("\n") + "\n").encode()
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            head = os.pread(fd, size, 0)
            os.ftruncate(fd, head.rfind(b"\n") + 1)  # a line torn by a writer that died
            size = head.rfind(b"\n") + 1
        done = 0
        while done < len(data):  # a regular file takes it in one write; loop all the same
            done += os.pwrite(fd, data[done:], size + done)
        os.fsync(fd)
    finally:
        os.close(fd)  # drops the flock


def read_lines(path: str) -> List[str]:
    """Complete lines of ``path`` under a shared flock (an unfinished last line is left out)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return []
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        with os.fdopen(os.dup(fd), "rb") as fh:
            data = fh.read()
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace")
    return text[: text.rfind("\n") + 1].splitlines()
