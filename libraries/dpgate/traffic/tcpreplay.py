"""An embedded traffic generator: tcpreplay replaying a prebuilt pcap, pinned to the TG core.

``TcpreplayGenerator.measure(load_pps, duration_s) -> TrialResult`` is the seam every
search uses (the trial flow is :mod:`dpgate.traffic.trialflow`'s, shared with ``dpgen``).

Sending, per trial:

1. read port counters (TG tx, TG rx) and SUT drop counters;
2. run one tcpreplay per direction: ``-K`` (preloaded), ``--pps`` for the rate and
   ``--limit`` for the intended count, pinned to the TG cpus; a hung tcpreplay is killed
   after ``duration + budget`` and the trial fails;
3. wait for late packets: poll the rx counters until they stop moving (settle), so
   nothing still in flight is counted as lost (no phantom loss);
4. loss = intended - received; ``tg_shortfall`` = intended - sent; when the shortfall
   happens at a load at or above the calibrated generator ceiling, ``limited_by`` is
   ``"generator"``.
"""

from __future__ import annotations

import math
import os
import re
from typing import Callable, Dict, List, Optional

from dpgate.exec.runner import tail

from .calibration import EXTRA_PROBES, OUTLIER_SHARE, ceiling_from_probes  # noqa: F401 (public here)
from .replayproc import start_all
from .steps import Phases
from .trialflow import DISTURBANCE_MAX, REMEASURE, SETTLE_S, EmbeddedGenerator, SendReport, TrialPlan  # noqa: F401


def parse_tcpreplay_output(text: str) -> Dict[str, float]:
    """Counts from tcpreplay's summary ('Actual: N packets ... sent in T seconds', retries)."""
    out: Dict[str, float] = {}
    m = re.search(r"Actual:\s*(\d+)\s+packets\s+\((\d+)\s+bytes\)\s+sent in\s+([0-9.]+)\s+seconds", text)
    if m:
        out["sent"] = int(m.group(1))
        out["bytes"] = int(m.group(2))
        out["seconds"] = float(m.group(3))
    for key, pat in (
        ("failed", r"Failed packets:\s*(\d+)"),
        ("retried_enobufs", r"Retried packets \(ENOBUFS\):\s*(\d+)"),
        ("retried_eagain", r"Retried packets \(EAGAIN\):\s*(\d+)"),
    ):
        m = re.search(pat, text)
        if m:
            out[key] = int(m.group(1))
    return out


class TcpreplayGenerator(EmbeddedGenerator):
    """One tcpreplay per direction and trial (``-K`` preloaded, ``--pps``, ``--limit``), pinned
    to the TG cpus; see :class:`~dpgate.traffic.trialflow.EmbeddedGenerator` for the trial."""

    name = "tcpreplay"

    def _tg_pids(self) -> List[int]:
        return [r.proc.pid for r in self._procs]

    def _send(self, plan: TrialPlan, tx_ports: List[str], tg0, clock: Phases) -> None:
        # two sets of log names: the last trial's generators may still be writing theirs
        ndir = plan.directions
        logs = [os.path.join(self.tb.workdir, f"tcpreplay-{self._trial_no % 2}-{i}.log") for i in range(ndir)]
        argvs = [
            [
                "tcpreplay",
                "-i",
                port,
                "-K",
                "--loop=0",
                f"--pps={plan.per_dir_pps:.3f}",
                f"--limit={plan.count}",
                f"--duration={int(math.ceil(plan.duration_s)) + 1}",
                pcap,
            ]
            for port, pcap in zip(tx_ports, self.pcaps())
        ]
        self._reap_exiting()
        self._procs = start_all(argvs, self.tb.tg_ns, self.tb.tg_cpus, logs)
        for r in self._procs:
            r.trial = self._trial_no
        try:
            self._wait_started(tx_ports, self.budget_s, plan.load_pps)
            clock.mark("generator_start")
            self._cut, self._sent_at = self._wait_sent(
                tx_ports, tg0, plan.count, plan.duration_s, plan.grace_s, plan.load_pps
            )
        except BaseException:
            for r in self._procs:
                r.kill()
            self._procs = []
            raise

    def _report(self, plan: TrialPlan) -> SendReport:
        # Generators that sent everything exit on their own (closing packet sockets costs
        # them ~10-20 ms): not waited for here, reaped before the next trial starts.
        self._exiting, self._procs, done = self._exiting + self._procs, [], self._procs
        reports = [parse_tcpreplay_output(tail(r.log, 40)) if r.proc.poll() is not None else {} for r in done]
        # How long the generator sent: tcpreplay's own figure when it already printed it,
        # else from the TG tx counters (first move to the intended count reached).
        actual = max(
            (
                rep.get("seconds")
                or (self._sent_at.get(r.log, r.started_at + plan.duration_s) - r.started_at)
                for rep, r in zip(reports, done)
            ),
            default=plan.duration_s,
        )
        complete = all(reports)
        return SendReport(
            seconds=actual,
            retried=int(sum(r.get("retried_enobufs", 0) for r in reports)) if complete else None,
            failed=int(sum(r.get("failed", 0) for r in reports)) if complete else None,
            cut=self._cut,
            exited=complete,
        )

    def abort(self) -> None:
        for p in self._procs + self._exiting:
            p.kill()
        self._procs, self._exiting = [], []


def tcpreplay_name(run: Optional[Callable[[List[str]], str]] = None) -> str:
    """The embedded generator and its version for results/JUnit (``tg``), from ``tcpreplay -V``.

    >>> tcpreplay_name(lambda argv: "tcpreplay version: 4.4.3 (build git:v4.4.3) (debug)")
    'tcpreplay 4.4.3'
    """
    if run is None:
        import subprocess

        def run(argv: List[str]) -> str:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=10)
            return res.stdout + res.stderr

    try:
        text = run(["tcpreplay", "-V"])
    except Exception:  # the tg name is a label: never fail a test over it
        return "tcpreplay"
    m = re.search(r"tcpreplay version:\s*([0-9][\w.]*)", text)
    return f"tcpreplay {m.group(1)}" if m else "tcpreplay"
