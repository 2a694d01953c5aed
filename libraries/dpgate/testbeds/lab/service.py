"""Long-running SUT processes on a node (argv only, no shell), with or without systemd.

A DUT booted with systemd (``/run/systemd/system`` exists, as ``sd_booted()`` checks) gets
transient units: ``systemd-run --unit=<u> --collect -- <argv>`` starts, ``systemctl stop``
stops, and the log is ``journalctl -u <u> _SYSTEMD_INVOCATION_ID=<id>``: only the lines of
the current run (audit item 12: without the invocation filter a second run of a unit sees
the first run's lines, so readiness and counters would come from the dead process).

A node without systemd (a container, the DUT namespace of a lab on one machine) gets
``start-stop-daemon`` with a pid file and a log file in ``/run/dpgate`` (the log is emptied
at each start, the same one-run view). Liveness reads ``/proc/<pid>/stat``: a dead child
of a PID 1 that does not reap stays a zombie, which ``start-stop-daemon --status`` and
``kill -0`` still call running.

A SUT driven through its stdin on this machine (testpmd ``-i`` in the embedded testbed) is a
``console`` service (``node._dpgate_service_mode = "console"``): our child, see
``dpgate.testbeds.lab.console``; :func:`unit_command` sends it a command.

Example::

    start_unit(node, "dpgate-testpmd", ["dpdk-testpmd", "-l", "1,2", "--", "--forward-mode=io"])
    wait_until(lambda: "Forwarding" in unit_log(node, "dpgate-testpmd"), timeout_s=30, what="testpmd")
    unit_active(node, "dpgate-testpmd")      # 'active' or why not
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Sequence

from dpgate.exec.remote import LocalNode
from dpgate.model.errors import SutError
from dpgate.testbeds.lab import console

#: Where start-stop-daemon keeps pid and log files on a node without systemd.
STATE_DIR = "/run/dpgate"


def service_mode(node: Any) -> str:
    """``systemd``, ``daemon`` (start-stop-daemon) or ``console`` (set by the caller), detected once per node."""
    mode = getattr(node, "_dpgate_service_mode", None)
    if mode is None:
        res = node.run(["test", "-d", "/run/systemd/system"], check=False, timeout=15)
        mode = "systemd" if res.returncode == 0 else "daemon"
        try:
            node._dpgate_service_mode = mode
        except AttributeError:  # a node type without attributes: detect again next time
            pass
    return mode


def _paths(unit: str) -> Dict[str, str]:
    return {"pid": f"{STATE_DIR}/{unit}.pid", "log": f"{STATE_DIR}/{unit}.log"}


def read_text(node: Any, path: str) -> str:
    """A file on ``node`` ("" when it is not there): read in place when the node is this
    machine (its network namespace shares our files and /proc; two ``cat`` processes per
    liveness check cost OVS-DPDK ~10 ms a trial, gs18), else with ``cat``."""
    if isinstance(node, LocalNode):
        try:
            with open(path) as fh:
                return fh.read()
        except (FileNotFoundError, ProcessLookupError):  # no pid file, or the process is gone
            return ""
        except OSError:  # not ours to read: the node's sudo can
            pass
    return node.run(["cat", path], check=False, timeout=15).stdout


def _invocations(node: Any) -> Dict[str, str]:
    inv = getattr(node, "_dpgate_invocations", None)
    if inv is None:
        inv = {}
        try:
            node._dpgate_invocations = inv
        except AttributeError:
            pass
    return inv


def start_unit(node: Any, unit: str, argv: Sequence[str], timeout: float = 30.0) -> None:
    """Start ``argv`` as ``unit`` (one run; its log starts empty)."""
    args = [str(a) for a in argv]
    if service_mode(node) == "console":
        console.start_console(node, unit, args, _paths(unit)["log"])
        return
    if service_mode(node) == "systemd":
        node.run(["systemctl", "reset-failed", unit], check=False, timeout=timeout)
        node.run(["systemd-run", f"--unit={unit}", "--collect", "--"] + args, timeout=timeout)
        inv = node.run(
            ["systemctl", "show", "-p", "InvocationID", "--value", unit], check=False, timeout=timeout
        ).stdout.strip()
        if not inv:
            raise SutError(
                f"{unit}: systemd gave no InvocationID (systemctl show -p InvocationID {unit}); "
                "the unit may have exited at once: journalctl -u " + unit
            )
        _invocations(node)[unit] = inv
        return
    p = _paths(unit)
    binary = args[0]
    if not binary.startswith("/"):
        found = node.run(["which", binary], check=False, timeout=timeout).stdout.strip()
        if not found:
            raise SutError(f"{unit}: {binary} is not installed on the DUT (not in PATH)")
        binary = found.splitlines()[0]
    node.run(["mkdir", "-p", STATE_DIR], timeout=timeout)
    node.run(["rm", "-f", p["pid"]], check=False, timeout=timeout)
    node.run(["truncate", "-s", "0", p["log"]], check=False, timeout=timeout)
    node.run(
        [
            "start-stop-daemon",
            "--start",
            "--background",
            "--make-pidfile",
            "--pidfile",
            p["pid"],
            "--output",
            p["log"],
            "--exec",
            binary,
            "--",
        ]
        + args[1:],
        timeout=timeout,
    )


def stop_unit(node: Any, unit: str, timeout: float = 30.0) -> None:
    if service_mode(node) == "console":
        console.stop_console(node, unit)
        return
    if service_mode(node) == "systemd":
        node.run(["systemctl", "stop", unit], check=False, timeout=timeout)
        return
    p = _paths(unit)
    node.run(
        [
            "start-stop-daemon",
            "--stop",
            "--pidfile",
            p["pid"],
            "--retry",
            "TERM/10/KILL/5",
            "--remove-pidfile",
        ],
        check=False,
        timeout=timeout,
    )


def unit_active(node: Any, unit: str) -> str:
    """``active`` when the unit's process runs, else the state (``failed``, ``dead``, ...)."""
    if service_mode(node) == "console":
        return console.console_state(node, unit)
    if service_mode(node) == "systemd":
        state = node.run(["systemctl", "is-active", unit], check=False, timeout=15).stdout.strip()
        return state or "no state"
    pid = read_text(node, _paths(unit)["pid"]).strip()
    if not pid.isdigit():
        return "not started"
    stat = read_text(node, f"/proc/{pid}/stat")
    state = stat.rsplit(")", 1)[-1].split()[:1]
    if not state:
        return "dead"
    return "dead (zombie)" if state[0] in ("Z", "X") else "active"


def unit_log(node: Any, unit: str, lines: int = 200) -> str:
    """The last ``lines`` lines of the unit's current run."""
    if service_mode(node) == "console":
        return console.console_log(node, unit, lines)
    if service_mode(node) == "systemd":
        inv = _invocations(node).get(unit)
        match = [f"_SYSTEMD_INVOCATION_ID={inv}"] if inv else []
        return node.run(
            ["journalctl", "-u", unit] + match + ["-n", str(lines), "--no-pager", "-o", "cat"],
            check=False,
            timeout=30,
        ).stdout
    return node.run(["tail", "-n", str(lines), _paths(unit)["log"]], check=False, timeout=30).stdout


def unit_command(node: Any, unit: str, line: str, until: str, timeout: float = 10.0) -> str:
    """Send ``line`` to a console unit's stdin; its output up to ``until``. Other modes have no stdin."""
    if service_mode(node) != "console":
        raise SutError(
            f"{unit}: commands go to a console service only, this node runs {service_mode(node)} units"
        )
    return console.console_command(node, unit, line, until, timeout)


def write_file(node: Any, path: str, text: str) -> None:
    """Write ``text`` to ``path`` on the node (``tee``, content via stdin, never via argv)."""
    node.run(["tee", path], input=text, timeout=30)


def wait_until(
    check: Callable[[], bool],
    timeout_s: float,
    what: str,
    interval_s: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[], str] = lambda: "",
) -> None:
    """Poll ``check`` until true; otherwise SutError with the last log lines."""
    end = clock() + timeout_s
    while True:
        try:
            if check():
                return
        except Exception:  # not up yet: the command fails until the process listens
            pass
        if clock() >= end:
            tail = " | ".join(log().strip().splitlines()[-5:])
            raise SutError(f"{what} not ready within {timeout_s:g} s" + (f": {tail}" if tail else ""))
        sleep(interval_s)
