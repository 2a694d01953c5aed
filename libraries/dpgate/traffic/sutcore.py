"""The SUT core around ``cpp_at_load`` trials: held awake, its ports' interrupts moderated,
and its clock rate for cycles per packet (mixed into
:class:`dpgate.traffic.trialflow.EmbeddedGenerator`)."""

from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional

from dpgate.exec.awake import CoreAwake

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
        ``details["sut_core_awake"]`` says so and the loops' CPU time counts as ours."""
        with CoreAwake(self.tb.sut_cpus) as held:
            self.awake_pids, self._awake = held.pids, held
            try:
                yield self.awake_pids
            finally:
                self.awake_pids, self._awake = [], None

    @contextlib.contextmanager
    def moderate_sut(self, load_pps: float) -> Iterator[Optional[float]]:
        """Interrupt moderation on the SUT ports for the trials inside, sized so each NAPI poll
        takes about ``MODERATION_FRAMES`` frames at ``load_pps`` (see
        :meth:`NamespaceTestbed.napi_deferral`); yields the deferral in microseconds."""
        per_port = load_pps / max(1, len(directions_for(self.tb.topology, self.profile)))
        us = round(MODERATION_FRAMES / per_port * 1e6, 1) if per_port > 0 else 0.0
        if us and not self.tb.napi_deferral(us):
            us = 0.0  # refused by this kernel: trials run unmoderated and do not claim it
        self._moderated = us
        try:
            yield us
        finally:
            self._moderated = 0.0
            if us:
                self.tb.napi_deferral(0)
