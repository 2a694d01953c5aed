"""Run a telemetry tool through a dpgate.exec.remote node; a tool that cannot run is NotSupported.

A node is anything with ``run(argv, timeout=..., check=...)`` returning an object with
``stdout``, ``stderr`` and ``returncode`` (:class:`dpgate.exec.remote.LocalNode`, ``SshNode``,
or a test's recording fake). ``None`` means this machine.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

from dpgate.exec.remote import LocalNode
from dpgate.exec.tools import PACKAGES
from dpgate.model.errors import DpgateError

from . import NotSupported


def local_node() -> Any:
    return LocalNode(name="local")


def run_tool(node: Any, argv: Sequence[str], timeout: float) -> Union[Any, NotSupported]:
    """``node.run(argv, check=False)``; missing tools, timeouts and SSH errors become NotSupported."""
    node = node if node is not None else local_node()
    tool = str(argv[0])
    if tool == "env":  # env VAR=value... tool: name the tool, not env (perf runs under LC_ALL=C)
        tool = next((str(a) for a in argv[1:] if "=" not in str(a)), tool)
    try:
        res = node.run(list(argv), timeout=timeout, check=False)
    except FileNotFoundError:
        return NotSupported(f"{tool} not installed: install {PACKAGES.get(tool, tool)}")
    except DpgateError as err:  # EnvironmentProblem (tool missing), timeout, SSH failure
        text = str(err)
        if "not found" in text and "install" in text:
            return NotSupported(f"{tool} not installed: install {PACKAGES.get(tool, tool)}")
        return NotSupported(f"{tool} could not run on {getattr(node, 'name', 'the node')}: {text}")
    if res.returncode in (126, 127) and ("not found" in (res.stderr or "") or not (res.stdout or res.stderr)):
        return NotSupported(
            f"{tool} not installed on {getattr(node, 'name', 'the node')}: install {PACKAGES.get(tool, tool)}"
        )
    return res
