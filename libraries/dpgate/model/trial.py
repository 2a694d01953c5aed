"""The result of one trial: the only thing a search sees of a traffic generator.

Every generator (embedded tcpreplay, TRex, a simulated SUT in a benchmark) implements::

    measure(load_pps: float, duration_s: float) -> TrialResult

Loss is counted against the *intended* count (rate x duration), because on veth paths an
overloaded SUT pushes back on the sender instead of dropping: the symptom is a generator
that sends fewer frames than asked (``tg_shortfall``), not rx loss.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

#: ``limited_by`` value when the generator's own ceiling, not the SUT, caused a shortfall.
LIMITED_BY_GENERATOR = "generator"


@dataclass(frozen=True)
class TrialResult:
    """One trial. Field names are public (``dpgate trial --json`` keys): keep them stable."""

    intended_load_pps: float
    intended_duration_s: float
    intended_packets: int
    tx_packets: int
    rx_packets: int
    loss_packets: int
    loss_ratio: float
    tg_shortfall: int
    actual_duration_s: float
    limited_by: Optional[str] = None
    sut_drops: Optional[int] = None
    tg_drops: Optional[int] = None
    frame_size: Optional[str] = None
    sut_cycles_per_packet: Optional[float] = None
    sut_busy_ratio: Optional[float] = None
    details: Dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_counts(
        cls,
        load_pps: float,
        duration_s: float,
        tx_packets: int,
        rx_packets: int,
        actual_duration_s: Optional[float] = None,
        intended_packets: Optional[int] = None,
        **extra: Any,
    ) -> TrialResult:
        """Build a result, doing the loss arithmetic in one place.

        >>> r = TrialResult.from_counts(100_000, 2.0, tx_packets=199_000, rx_packets=198_000)
        >>> r.intended_packets, r.loss_packets, r.tg_shortfall, round(r.loss_ratio, 4)
        (200000, 2000, 1000, 0.01)
        """
        if intended_packets is None:
            intended_packets = int(round(load_pps * duration_s))
        loss = max(0, intended_packets - rx_packets)
        return cls(
            intended_load_pps=float(load_pps),
            intended_duration_s=float(duration_s),
            intended_packets=int(intended_packets),
            tx_packets=int(tx_packets),
            rx_packets=int(rx_packets),
            loss_packets=int(loss),
            loss_ratio=(loss / intended_packets) if intended_packets else 0.0,
            tg_shortfall=max(0, int(intended_packets) - int(tx_packets)),
            actual_duration_s=float(duration_s if actual_duration_s is None else actual_duration_s),
            **extra,
        )

    @property
    def rx_rate_pps(self) -> float:
        """Received frames per second of intended duration."""
        return self.rx_packets / self.intended_duration_s if self.intended_duration_s else 0.0

    @property
    def tx_rate_pps(self) -> float:
        return self.tx_packets / self.intended_duration_s if self.intended_duration_s else 0.0

    def passed(self, loss_ratio_goal: float = 0.0) -> bool:
        return self.loss_ratio <= loss_ratio_goal

    def to_dict(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)
