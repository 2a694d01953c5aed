"""One generator process (tcpreplay) started straight into the TG namespace and cores.

``ip netns exec ns taskset -c 0 stdbuf -oL tcpreplay ...`` is three extra program starts
and a private mount namespace per trial (20-60 ms on a busy 2-core VM). Here the child
joins the namespace itself (``setns(2)`` on ``/run/netns/<ns>``) and pins itself
(``sched_setaffinity``) between fork and exec, and its output goes straight to the log
file (tcpreplay's summary is printed at exit, also after SIGINT, so nothing is lost without
line buffering). Same argv list discipline: no shell.

    r = ReplayProcess(["tcpreplay", "-i", "tg0", ...], ns="sg0-tg", cpus=[0], log=path)
    code = r.finish(deadline, budget)    # exit code, or "cut" when stopped at the deadline
    r.kill()
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from typing import List, Optional, Sequence, Union

from dpgate.exec.runner import require_tool, stop_process
from dpgate.model.errors import EnvironmentProblem, TrialError

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _enter(fd: int, cpus: Sequence[int]):
    def child() -> None:  # runs in the child between fork and exec: no allocations beyond this
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            os._exit(126)
        if cpus:
            os.sched_setaffinity(0, cpus)

    return child


class ReplayProcess:
    """A generator process in namespace ``ns`` pinned to ``cpus``, output to ``log``."""

    def __init__(self, argv: Sequence[str], ns: str, cpus: Sequence[int], log: str):
        self.log = log
        self.started_at: Optional[float] = None
        #: number of the generator's trial this process belongs to
        self.trial = 0
        self.argv = [str(a) for a in argv]
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            raise EnvironmentProblem(f"network namespace {ns!r} does not exist (/run/netns/{ns})") from None
        try:
            with open(log, "wb") as out:
                try:
                    self.proc = subprocess.Popen(
                        self.argv,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                        preexec_fn=_enter(fd, list(cpus)),
                        pass_fds=(fd,),
                    )
                except FileNotFoundError:
                    require_tool(self.argv[0])
                    raise
        finally:
            os.close(fd)

    def finish(self, deadline: float, budget: float) -> Union[int, str]:
        """Exit code, or "cut" when it had to be stopped (SIGINT) at the deadline."""
        try:
            code = self.proc.wait(max(0.0, deadline - time.monotonic()))
            if code == 126:
                raise TrialError(f"{self.argv[0]}: could not enter the TG namespace (setns failed)")
            return code
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(min(budget, 2.0))
        except subprocess.TimeoutExpired:
            self.kill()
            raise TrialError(
                f"generator ({self.argv[0]}) ignored SIGINT at the end of the trial: killed"
            ) from None
        return "cut"

    def kill(self) -> None:
        if self.proc.poll() is None:
            stop_process(self.proc, timeout=1.0)


def start_all(argvs: List[List[str]], ns: str, cpus: Sequence[int], logs: List[str]) -> List[ReplayProcess]:
    procs: List[ReplayProcess] = []
    try:
        for argv, log in zip(argvs, logs):
            procs.append(ReplayProcess(argv, ns, cpus, log))
    except BaseException:
        for p in procs:
            p.kill()
        raise
    return procs


def run_in_netns(argv: Sequence[str], ns: str, timeout: float = 10.0) -> str:
    """stdout of a short command run inside namespace ``ns`` (joined by ``setns`` in the
    child, one program start instead of ``ip netns exec``'s two and its mount namespace);
    "" when it fails. For read-only queries such as ``ss -f link -a -m``."""
    try:
        fd = os.open(f"/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        res = subprocess.run(
            [str(a) for a in argv],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_enter(fd, []),
            pass_fds=(fd,),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    finally:
        os.close(fd)
    return res.stdout if res.returncode == 0 else ""
