"""Running commands: always argv lists, never shell strings; locally or in a namespace.

Example::

    r = run(["ip", "-j", "link"], ns="dpg0-sut", timeout=5)
    p = spawn(["tcpreplay", "-i", "tg0", "f.pcap"], ns="dpg0-tg", cpus=[0], log=path)
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from typing import IO, List, Optional, Sequence

from dpgate.exec.tools import PACKAGES
from dpgate.model.errors import DpgateError, EnvironmentProblem


class CommandError(DpgateError):
    def __init__(self, argv: Sequence[str], code: int, stderr: str):
        self.argv, self.code, self.stderr = list(argv), code, stderr
        tail = stderr.strip().splitlines()[-3:]
        super().__init__(f"command {' '.join(argv)!r} failed with exit code {code}: {' | '.join(tail)}")


def require_tool(name: str) -> str:
    path = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)), None
    )
    if not path:
        pkg = PACKAGES.get(name, name)
        raise EnvironmentProblem(f"required tool {name!r} not found: install it with 'apt-get install {pkg}'")
    return path


def ns_argv(argv: Sequence[str], ns: Optional[str] = None, cpus: Optional[Sequence[int]] = None) -> List[str]:
    """Wrap argv to run inside netns ``ns`` and/or pinned to ``cpus``."""
    out = [str(a) for a in argv]
    if cpus:
        out = ["taskset", "-c", ",".join(str(c) for c in cpus)] + out
    if ns:
        out = ["ip", "netns", "exec", ns] + out
    return out


def run(
    argv: Sequence[str],
    ns: Optional[str] = None,
    cpus: Optional[Sequence[int]] = None,
    timeout: float = 30.0,
    check: bool = True,
    input: Optional[str] = None,
    env: Optional[dict] = None,
) -> subprocess.CompletedProcess:
    full = ns_argv(argv, ns, cpus)
    try:
        res = subprocess.run(
            full, input=input, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        raise DpgateError(f"command {' '.join(full)!r} did not finish within {timeout:g} s") from None
    except FileNotFoundError:
        require_tool(full[0])
        raise
    if check and res.returncode != 0:
        raise CommandError(full, res.returncode, res.stderr or res.stdout)
    return res


def spawn(
    argv: Sequence[str],
    ns: Optional[str] = None,
    cpus: Optional[Sequence[int]] = None,
    log: Optional[str] = None,
    env: Optional[dict] = None,
    stdin: Optional[int] = subprocess.DEVNULL,
) -> subprocess.Popen:
    """Start a long-running process in its own process group, output to ``log``."""
    full = ns_argv(argv, ns, cpus)
    out: Optional[IO] = open(log, "ab") if log else subprocess.DEVNULL  # type: ignore[assignment]
    try:
        return subprocess.Popen(
            full, stdout=out, stderr=subprocess.STDOUT, stdin=stdin, env=env, start_new_session=True
        )
    finally:
        if log:
            out.close()  # type: ignore[union-attr]


def stop_process(proc: subprocess.Popen, timeout: float = 5.0) -> Optional[int]:
    """SIGTERM the process group, then SIGKILL after ``timeout``; returns the exit code."""
    if proc.poll() is not None:
        return proc.returncode
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    return proc.poll()


def kill_pids(pids: Sequence[int], timeout: float = 3.0) -> None:
    """SIGTERM then SIGKILL a set of pids (e.g. everything left in a namespace)."""
    live = [p for p in pids if _alive(p)]
    for p in live:
        _signal(p, signal.SIGTERM)
    end = time.monotonic() + timeout
    while live and time.monotonic() < end:
        live = [p for p in live if _alive(p)]
        time.sleep(0.05)
    for p in live:
        _signal(p, signal.SIGKILL)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # zombies count as gone
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors="replace") as fh:
            return "".join(fh.readlines()[-lines:])
    except OSError:
        return ""
