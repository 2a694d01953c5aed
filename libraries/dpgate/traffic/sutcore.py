"""The SUT core around ``cpp_at_load`` trials: held awake, its ports' interrupts moderated,
and its clock rate for cycles per packet (mixed into
:class:`dpgate.traffic.trialflow.EmbeddedGenerator`)."""

from __future__ import annotations

import contextlib
import signal
from typing import Any, Iterator, List, Optional

from dpgate.exec.awake import CoreAwake
from dpgate.exec.stopped import signal_all, wait_stopped

from .profiles import directions_for

#: Frames per NAPI poll of a receiving SUT port that ``moderate_sut`` aims for (NAPI's budget
#: per poll is 64; veth's ring holds 256).
MODERATION_FRAMES = 64


class SutCore:
    # provided by the generator this is mixed into
    tb: Any
    profile: Any
    awake_pids: List[int]
    _awake: Optional[CoreAwake]
    _awake_kept: Optional[CoreAwake]
    _moderated: float
    _hz: Optional[float]

    def cpu_hz(self) -> float:
        """SUT core frequency for cycles per packet (declared in the topology, else detected)."""
        if self._hz is None:
            cf = self.tb.topology.dut.cpu_freq
            if cf.source == "declared" and cf.hz:
                self._hz = float(cf.hz)
            else:
                from dpgate.exec.cpu import detect_cpu_hz
                from dpgate.exec.remote import LocalNode

                self._hz = detect_cpu_hz(LocalNode(), self.tb.sut_cpus[0] if self.tb.sut_cpus else 0)
        return self._hz

    @contextlib.contextmanager
    def hold_sut_awake(self) -> Iterator[List[int]]:
        """Hold the SUT cores awake (:mod:`dpgate.exec.awake`) for the trials inside; their
        ``details["sut_core_awake"]`` says so and the loops' CPU time counts as ours.

        The loops are started on first use and stopped (``SIGSTOP``, seen stopped) between
        holds, resumed for the next: starting a Python child for each spaced cpp_at_load
        trial cost ~25 ms between trials on the Zen 3 host. :meth:`release_sut_core` ends them.
        A hold in place (this generator's, or one borrowed: :meth:`borrow_sut_awake`) is kept."""
        if getattr(self, "_awake", None) is not None:
            yield self.awake_pids
            return
        held: Optional[CoreAwake] = getattr(self, "_awake_kept", None)
        if held is not None and len(held.pids) == len(held.cpus):
            signal_all(held.pids, signal.SIGCONT)
        else:
            self.release_sut_core()  # a loop died (or none yet): a fresh set
            held = self._awake_kept = CoreAwake(self.tb.sut_cpus).start()
        self.awake_pids, self._awake = held.pids, held
        try:
            yield self.awake_pids
        finally:
            self.awake_pids, self._awake = [], None
            signal_all(held.pids, signal.SIGSTOP)
            wait_stopped(held.pids)

    @contextlib.contextmanager
    def borrow_sut_awake(self, owner: SutCore) -> Iterator[List[int]]:
        """This generator's trials inside use ``owner``'s awake loops, held by ``owner`` now
        (the same processes on the same SUT cores; nothing held: nothing borrowed). Their CPU
        time counts as ours and their speed is the trials' ``sut_core_speed``.

        Why: a paired phase's two sides each had a loop of their own, and the two loops read
        the same core differently for a whole phase: on gk12 (linux-ip4, 2026-11-29) the SUT
        side's loop read slower than the twin's in 10 of 10 pairs of a healthy run (by 18 %
        on average) and in 7 of 9 of another, while the SUT's own cycles moved +6 % and -4 %,
        so the scaled A/A changes read -3.6 and -8.2 %, as measured +6.3 and -4.3 %."""
        held = getattr(owner, "_awake", None)
        if held is None:
            yield []
            return
        self.awake_pids, self._awake = list(owner.awake_pids), held
        try:
            yield self.awake_pids
        finally:
            self.awake_pids, self._awake = [], None

    def release_sut_core(self) -> None:
        """End the awake loops kept between holds (the generator's ``close``)."""
        held: Optional[CoreAwake] = getattr(self, "_awake_kept", None)
        self._awake_kept = None
        if held is not None:
            held.stop()

    @contextlib.contextmanager
    def moderate_sut(self, load_pps: float) -> Iterator[Optional[float]]:
        """Interrupt moderation on the SUT ports for the trials inside, sized so each NAPI poll
        takes about ``MODERATION_FRAMES`` frames at ``load_pps`` (see
        :meth:`NamespaceTestbed.napi_deferral`); yields the deferral in microseconds."""
        per_port = load_pps / max(1, len(directions_for(self.tb.topology, self.profile)))
        us = round(MODERATION_FRAMES / per_port * 1e6, 1) if per_port > 0 else 0.0
        if us and not self.tb.napi_deferral(us):
            # refused by this kernel (for one knob or port): whatever was taken is undone, and
            # the trials run unmoderated and do not claim it
            self.tb.napi_deferral(0)
            us = 0.0
        self._moderated = us
        try:
            yield us
        finally:
            self._moderated = 0.0
            if us:
                self.tb.napi_deferral(0)
