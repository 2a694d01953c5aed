"""The persistent embedded generator: one ``dpgen`` process per session, one line per trial.

``dpgen`` (C, ``libraries/dpgen/dpgen.c``, built by ``.ci/install`` into
``build/dpgen/dpgen``) is started once, inside the TG namespace and pinned to the TG cpus,
with one ``<port>=<pcap>`` per direction. It loads the frames, opens one send-only
AF_PACKET socket per port and prints ``ready``. A trial is then one request and one answer
on its stdin/stdout, with no process start (tcpreplay's own start-up is 60-85 ms)::

    > run 50000.000 50000 1.030000
    < done sent=50000,50000 failed=0,0 retried=0,0 seconds=0.999990

:class:`DpgenProcess` is the boundary (unit tests replace it with a fake that refuses what
dpgen refuses); :class:`DpgenGenerator` runs the shared trial flow of
:mod:`dpgate.traffic.trialflow` over it. A dpgen that exits or stops answering fails the
trial with a :class:`~dpgate.model.errors.TrialError` naming it and its last output.

>>> parse_done("done sent=10,12 failed=0,1 retried=3,0 seconds=0.100000", 2)
{'sent': [10, 12], 'failed': [0, 1], 'retried': [3, 0], 'seconds': 0.1}
"""

from __future__ import annotations

import collections
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Deque, Dict, List, Optional, Sequence

from dpgate.exec.runner import stop_process
from dpgate.model.errors import EnvironmentProblem, TrialError

from .replayproc import _enter
from .steps import Phases
from .trialflow import EmbeddedGenerator, SendReport, TrialPlan

#: How long dpgen may take to load its pcaps and open its sockets.
START_TIMEOUT_S = 10.0
#: build/dpgen/dpgen of this checkout (libraries/dpgate/traffic/dpgen.py -> repo root)
BUILT = Path(__file__).resolve().parents[3] / "build" / "dpgen" / "dpgen"


def dpgen_binary() -> Optional[str]:
    """Path of the dpgen binary, or None when it is not built."""
    env = os.environ.get("DPGATE_DPGEN")
    if env:
        return env if os.access(env, os.X_OK) else None
    if os.access(BUILT, os.X_OK):
        return str(BUILT)
    return shutil.which("dpgen")


def require_dpgen() -> str:
    path = dpgen_binary()
    if not path:
        raise EnvironmentProblem(
            f"generator dpgen not found ({BUILT}, $DPGATE_DPGEN or PATH): run 'bash .ci/install' "
            "to build it, or choose --generator tcpreplay"
        )
    return path


def parse_done(line: str, ndir: int) -> Dict:
    """The counts of dpgen's ``done`` answer; TrialError when the line is anything else."""
    words = line.split()
    if not words or words[0] != "done":
        raise TrialError(f"dpgen answered {line.strip()!r} instead of 'done ...'")
    out: Dict = {}
    try:
        for w in words[1:]:
            key, _, val = w.partition("=")
            out[key] = float(val) if key == "seconds" else [int(x) for x in val.split(",")]
        ok = all(len(out[k]) == ndir for k in ("sent", "failed", "retried")) and "seconds" in out
    except (ValueError, KeyError):
        ok = False
    if not ok:
        raise TrialError(f"dpgen answered an unreadable 'done' line: {line.strip()!r}")
    return out


class DpgenProcess:
    """One dpgen in namespace ``ns`` pinned to ``cpus``; ``request`` sends a line, reads one."""

    def __init__(self, binary: str, ports: Sequence[str], pcaps: Sequence[str], ns: str, cpus: Sequence[int]):
        self.argv = [binary] + [f"{p}={c}" for p, c in zip(ports, pcaps)]
        self.output: Deque[str] = collections.deque(maxlen=8)
        self._buf = b""
        try:
            fd = os.open(f"/run/netns/{ns}", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            raise EnvironmentProblem(f"network namespace {ns!r} does not exist (/run/netns/{ns})") from None
        try:
            self.proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches us only: we stop it in teardown
                preexec_fn=_enter(fd, list(cpus)),
                pass_fds=(fd,),
            )
        except OSError as e:
            raise EnvironmentProblem(f"cannot start dpgen ({binary}): {e}: run 'bash .ci/install'") from None
        finally:
            os.close(fd)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def last_output(self) -> str:
        return "\n".join(self.output) or "(no output)"

    def _gone(self, what: str) -> TrialError:
        try:
            code = self.proc.wait(1.0)
        except subprocess.TimeoutExpired:
            code = None
        how = "still running" if code is None else f"signal {-code}" if code < 0 else f"code {code}"
        if code == 126:
            how = "code 126: could not enter the TG namespace"
        self.kill()
        return TrialError(
            f"generator exited ({how}) {what}: dpgen (pid {self.proc.pid})\n"
            f"--- dpgen output ---\n{self.last_output()}"
        )

    def readline(self, timeout: float) -> Optional[str]:
        """One line of output; None when none came within ``timeout``; "" at end of output."""
        end = time.monotonic() + timeout
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return ""
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        text = line.decode(errors="replace")
        self.output.append(text)
        return text

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        line = self.readline(timeout)
        if line is None:
            self.kill()
            raise TrialError(f"dpgen did not say 'ready' within {timeout:g} s: killed\n{self.last_output()}")
        if line == "":
            raise self._gone("at start-up")
        if line != "ready":
            self.kill()
            raise TrialError(f"dpgen could not start: {line}  ({' '.join(self.argv)})")

    def request(self, line: str, timeout: float, what: str) -> str:
        """Send one command line and return the answer line."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise self._gone(what) from None
        answer = self.readline(timeout)
        if answer is None:
            self.kill()
            raise TrialError(
                f"generator (dpgen) did not answer within {timeout:g} s {what} (hung): killed\n"
                f"--- dpgen output ---\n{self.last_output()}"
            )
        if answer == "":
            raise self._gone(what)
        return answer

    def quit(self, timeout: float = 1.0) -> None:
        if self.alive():
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(b"quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            stop_process(self.proc, timeout=1.0)
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


class DpgenGenerator(EmbeddedGenerator):
    """The shared embedded trial flow over one persistent dpgen (started on first use, or by
    :meth:`start`). ``spawn`` (tests) replaces :class:`DpgenProcess`."""

    name = "dpgen"

    def __init__(self, testbed, profile, binary: Optional[str] = None, spawn=None, **kw):
        super().__init__(testbed, profile, **kw)
        self.binary = binary or (require_dpgen() if spawn is None else "dpgen")
        self._spawn = spawn or DpgenProcess
        self.proc: Optional[Any] = None
        self._done: Dict = {}

    def start(self):
        """Start dpgen (load the pcaps, open the sockets) if it is not running."""
        if self.proc is None or not self.proc.alive():
            if self.proc is not None:  # died between trials: say so rather than hide it
                dead, self.proc = self.proc, None
                raise dead._gone("between trials")
            tx_ports, _ = self._ports()
            self.proc = self._spawn(self.binary, tx_ports, self.pcaps(), self.tb.tg_ns, self.tb.tg_cpus)
            try:
                self.proc.wait_ready()
            except BaseException:
                self.proc = None
                raise
        return self.proc

    def _tg_pids(self) -> List[int]:
        return [self.proc.pid] if self.proc is not None else []

    def _send(self, plan: TrialPlan, tx_ports: List[str], tg0, clock: Phases) -> None:
        proc = self.start()
        deadline = plan.duration_s + plan.grace_s
        what = f"during trial at {plan.load_pps:.0f} pps"
        try:
            answer = proc.request(
                f"run {plan.per_dir_pps:.3f} {plan.count} {deadline:.6f}", deadline + self.budget_s, what
            )
            if answer.startswith("error"):
                raise TrialError(f"dpgen refused the trial at {plan.load_pps:.0f} pps: {answer}")
            self._done = parse_done(answer, plan.directions)
        except BaseException:  # hung, dead, Ctrl-C mid-trial: never leave it sending
            proc.kill()
            self.proc = None
            raise

    @property
    def last_done(self) -> Dict:
        """dpgen's answer to the last trial, parsed (``parse_done``; {} before the first):
        with ``DPGEN_TIME_SEND`` set it has ``send_ns`` (benchmarks/cpp_drift.py)."""
        return dict(self._done or {})

    def _claimed_sent(self) -> Optional[int]:
        return sum(self._done["sent"]) if self._done else None

    def _report(self, plan: TrialPlan) -> SendReport:
        d = self._done
        short = sum(1 for s, f in zip(d["sent"], d["failed"]) if s + f < plan.count)
        return SendReport(
            seconds=d["seconds"], retried=sum(d["retried"]), failed=sum(d["failed"]), cut=short, exited=True
        )

    def abort(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc = None

    def close(self) -> None:
        """dpgen told to quit, then what every embedded generator ends (the SUT cores' awake
        loops, the speed and cross-core probes: ``EmbeddedGenerator.close``)."""
        try:
            if self.proc is not None:
                self.proc.quit()
                self.proc = None
        finally:
            super().close()
