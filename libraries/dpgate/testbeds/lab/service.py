"""Long-running SUT processes on a node as transient systemd units (argv only, no shell).

``systemd-run --unit=<u> --collect -- <argv>`` starts, ``systemctl stop <u>`` stops,
``journalctl -u <u>`` gives the log. Every call goes through a ``dpgate.exec.remote`` node.

Example::

    start_unit(node, "dpgate-testpmd", ["dpdk-testpmd", "-l", "1,2", "--", "--forward-mode=io"])
    wait_until(lambda: "Forwarding" in unit_log(node, "dpgate-testpmd"), timeout_s=30, what="testpmd")
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from dpgate.model.errors import SutError


def start_unit(node: Any, unit: str, argv: Sequence[str], timeout: float = 30.0) -> None:
    node.run(["systemctl", "reset-failed", unit], check=False, timeout=timeout)
    node.run(["systemd-run", f"--unit={unit}", "--collect", "--"] + [str(a) for a in argv], timeout=timeout)


def stop_unit(node: Any, unit: str, timeout: float = 30.0) -> None:
    node.run(["systemctl", "stop", unit], check=False, timeout=timeout)


def unit_log(node: Any, unit: str, lines: int = 200) -> str:
    return node.run(["journalctl", "-u", unit, "-n", str(lines), "--no-pager", "-o", "cat"],
                    check=False, timeout=30).stdout


def write_file(node: Any, path: str, text: str) -> None:
    """Write ``text`` to ``path`` on the node (``tee``, content via stdin, never via argv)."""
    node.run(["tee", path], input=text, timeout=30)


def wait_until(check: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.5,
               sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
               log: Callable[[], str] = lambda: "") -> None:
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
