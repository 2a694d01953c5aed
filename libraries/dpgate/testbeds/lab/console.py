"""Console services: a SUT process on this machine that dpgate starts as its own child and
drives through its stdin (``dpdk-testpmd -i``), the third way ``dpgate.testbeds.lab.service``
runs a unit beside systemd and start-stop-daemon.

A daemon's stdin is ``/dev/null``, so an interactive SUT could not be asked anything after
it started; as our child with a pipe on its stdin it can (``show fwd stats all`` per trial,
without stopping forwarding), and its exit status is known exactly (``signal 9``), not only
``dead``. The node must be a :class:`dpgate.exec.remote.LocalNode`: the process runs in its
namespace, pinned to its ``cpus``, with stdout and stderr in a log file emptied at each start.

Example::

    node = LocalNode(ns="tp0-sut", cpus=[1])
    start_console(node, "tp0-dpgate-testpmd", ["dpdk-testpmd", ..., "--", "-i"], "/run/dpgate/tp0.log")
    console_command(node, "tp0-dpgate-testpmd", "start", until="testpmd>")
    console_state(node, "tp0-dpgate-testpmd")        # 'active', or e.g. 'dead (signal 9)'
    stop_console(node, "tp0-dpgate-testpmd")          # 'quit', then SIGTERM/SIGKILL
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence

from dpgate.exec import runner
from dpgate.exec.remote import LocalNode
from dpgate.model.errors import SutError


@dataclass
class Console:
    """One running console service: the process (our child) and its log file."""

    proc: subprocess.Popen
    log: str


def _consoles(node: Any) -> Dict[str, Console]:
    found = getattr(node, "_dpgate_consoles", None)
    if found is None:
        found = {}
        node._dpgate_consoles = found
    return found


def console_process(node: Any, unit: str) -> Optional[subprocess.Popen]:
    """The process of ``unit`` (None when it was never started or was stopped)."""
    c = _consoles(node).get(unit)
    return c.proc if c else None


def start_console(node: Any, unit: str, argv: Sequence[str], log: str) -> None:
    """Start ``argv`` as our child in the node's namespace, line-buffered, stdin a pipe."""
    if not isinstance(node, LocalNode):
        raise SutError(
            f"{unit}: a console service runs on this machine only (a LocalNode), "
            f"not on {getattr(node, 'name', node)!r}: use the systemd or daemon service mode there"
        )
    stop_console(node, unit)
    os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
    open(log, "wb").close()  # one run per log, as the other service modes
    argv = [str(a) for a in argv]
    runner.require_tool(argv[0])  # one error naming the package to install
    proc = runner.spawn(
        ["stdbuf", "-oL", "-eL"] + argv, ns=node.ns, cpus=node.cpus, log=log, stdin=subprocess.PIPE
    )
    _consoles(node)[unit] = Console(proc, log)


def console_state(node: Any, unit: str) -> str:
    """``active`` while the process runs, else ``not started`` or ``dead (<exit status>)``."""
    c = _consoles(node).get(unit)
    if c is None:
        return "not started"
    code = c.proc.poll()
    if code is None:
        return "active"
    return f"dead (signal {-code})" if code < 0 else f"dead (exit code {code})"


def console_log(node: Any, unit: str, lines: int = 200) -> str:
    c = _consoles(node).get(unit)
    return runner.tail(c.log, lines) if c else ""


def _since(path: str, mark: int) -> str:
    with open(path, "rb") as fh:
        fh.seek(mark)
        return fh.read().decode(errors="replace")


def console_command(node: Any, unit: str, line: str, until: str, timeout: float = 10.0) -> str:
    """Send ``line`` and return the output it printed up to ``until`` (e.g. the prompt).

    SutError when the process is not running, dies, or does not print ``until`` in time.
    """
    c = _consoles(node).get(unit)
    if c is None or c.proc.poll() is not None or c.proc.stdin is None:
        raise SutError(f"{unit} is not running ({console_state(node, unit)})")
    mark = os.path.getsize(c.log)
    try:
        c.proc.stdin.write((line + "\n").encode())
        c.proc.stdin.flush()
    except (BrokenPipeError, OSError):
        raise SutError(f"{unit} is not running ({console_state(node, unit)})") from None
    end = time.monotonic() + timeout
    while True:
        text = _since(c.log, mark)
        if until in text:
            return text
        if c.proc.poll() is not None or time.monotonic() > end:
            break
        time.sleep(0.002)
    raise SutError(
        f"{unit}: {until!r} not seen within {timeout:g} s after {line!r} ({console_state(node, unit)})"
        f"\n--- last log lines ---\n{runner.tail(c.log, 15)}"
    )


def stop_console(node: Any, unit: str, quit: str = "quit", timeout: float = 5.0) -> None:
    """Ask the process to ``quit`` on its console, then SIGTERM/SIGKILL its process group."""
    c = _consoles(node).pop(unit, None)
    if c is None:
        return
    if c.proc.poll() is None and c.proc.stdin is not None:
        try:
            c.proc.stdin.write((quit + "\n").encode())
            c.proc.stdin.flush()
            c.proc.wait(timeout)
        except (BrokenPipeError, subprocess.TimeoutExpired, OSError):
            pass
    runner.stop_process(c.proc)
    if c.proc.stdin is not None:
        try:
            c.proc.stdin.close()
        except OSError:
            pass
