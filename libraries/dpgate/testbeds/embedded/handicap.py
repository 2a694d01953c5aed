"""Fault injection for the regression gate: take a fixed share of the SUT cores away.

A gate that claims to catch a 10 % regression should be shown doing it. ``CpuSteal``
runs one small process per SUT core, pinned to it, at real-time priority
(SCHED_FIFO 1, above every normal SUT thread), that spins for ``share x period`` and
sleeps for the rest of each ``period``. A CPU-bound SUT on that core loses that share of
its cycles: a SUT that is ``share`` slower, as a code regression would make it.

    with CpuSteal([1], share=0.10):      # 10 % of CPU 1
        ...                              # trials see a ~10 % slower SUT

``dpgate gate --sut-cpu-steal 10`` does this around the whole run (variable
``SUT_CPU_STEAL``); the stealer processes are stopped on teardown, even after failure.

    python -m dpgate.testbeds.embedded.handicap --cpu 1 --share 0.1 [--period-ms 2]   # one stealer by hand
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from typing import List, Optional, Sequence

from dpgate.model.errors import ConfigError, EnvironmentProblem

RT_PRIORITY = 1


def _check_share(share: float) -> float:
    if not 0 < share < 0.9:
        raise ConfigError(
            f"CPU steal share must be in (0, 0.9) (e.g. 0.10 for 10 %), got {share!r}", path="sut_cpu_steal"
        )
    return float(share)


class CpuSteal:
    """Context manager: one stealer process per CPU in ``cpus``."""

    def __init__(self, cpus: Sequence[int], share: float, period_ms: float = 2.0):
        self.cpus = [int(c) for c in cpus]
        self.share = _check_share(share)
        if not 0.2 <= period_ms <= 100:
            raise ConfigError(f"CPU steal period must be 0.2..100 ms, got {period_ms!r}", path="period_ms")
        self.period_ms = float(period_ms)
        self.procs: List[subprocess.Popen] = []

    def start(self) -> CpuSteal:
        ncpu = os.cpu_count() or 1
        for cpu in self.cpus:
            if not 0 <= cpu < ncpu:
                raise ConfigError(f"CPU {cpu} does not exist on this host (0..{ncpu - 1})", path="cpus")
        for cpu in self.cpus:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dpgate.testbeds.embedded.handicap",
                    "--cpu",
                    str(cpu),
                    "--share",
                    repr(self.share),
                    "--period-ms",
                    repr(self.period_ms),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            self.procs.append(proc)
        time.sleep(0.3)
        for proc in self.procs:
            if proc.poll() is not None:
                err = proc.stderr.read() if proc.stderr else ""
                self.stop()
                raise EnvironmentProblem(f"CPU stealer exited at start: {err.strip() or proc.returncode}")
        return self

    def stop(self) -> None:
        procs, self.procs = self.procs, []
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @property
    def pids(self) -> List[int]:
        return [p.pid for p in self.procs]

    def __enter__(self) -> CpuSteal:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def steal(cpu: int, share: float, period_ms: float, stop_after: Optional[float] = None) -> None:
    """Pin to ``cpu``, go SCHED_FIFO, then take ``share`` of the CPU in every period until SIGTERM."""
    os.sched_setaffinity(0, {cpu})
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except PermissionError:
        raise EnvironmentProblem("CPU steal needs root (SCHED_FIFO): run as root") from None
    running = [True]
    signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
    period = period_ms / 1000.0
    t0, c0 = time.monotonic(), time.process_time()
    t_end = t0 + stop_after if stop_after else None
    nxt = t0
    # Spin until this process's own CPU time reaches share x elapsed: wake-up and loop
    # overhead count toward the share, so the stolen share is exact, not share + overhead.
    while running[0] and (t_end is None or time.monotonic() < t_end):
        nxt += period
        target = c0 + share * (nxt - t0)
        while time.process_time() < target and time.monotonic() < nxt:
            pass
        delay = nxt - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        elif delay < -period:  # fell far behind (preempted): resynchronise, do not catch up
            t0, c0, nxt = time.monotonic(), time.process_time(), time.monotonic()


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m dpgate.testbeds.embedded.handicap", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--cpu", type=int, required=True)
    ap.add_argument("--share", type=float, required=True)
    ap.add_argument("--period-ms", type=float, default=2.0)
    ap.add_argument(
        "--seconds", type=float, default=None, help="stop after this long (default: until SIGTERM)"
    )
    a = ap.parse_args(argv)
    try:
        steal(a.cpu, _check_share(a.share), a.period_ms, a.seconds)
    except (ConfigError, EnvironmentProblem) as err:
        print(err, file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
