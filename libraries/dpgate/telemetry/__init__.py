"""Telemetry: perf (IPC, IPP, CPP, TMAM level 1) and pcm (PCIe/DDIO, memory) per packet.

Where a counter is unavailable (VMs without a PMU, AMD hosts for pcm), every value is a
typed :class:`NotSupported` carrying the tool's reason; gates then skip or fail per policy
and JUnit shows ``ipc=not supported (<reason>)``. Never a made-up number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Union

from ..errors import DpgateError


class TelemetryError(DpgateError):
    """Telemetry output could not be parsed (malformed or truncated)."""


@dataclass(frozen=True)
class NotSupported:
    """A counter this host cannot provide, and why.

    >>> str(NotSupported("no cpu PMU"))
    'not supported: no cpu PMU'
    """

    reason: str

    def __str__(self) -> str:
        return f"not supported: {self.reason}"

    def metric(self) -> str:
        return f"not supported ({self.reason})"


Value = Union[float, NotSupported]

METRIC_KEYS = (
    "ipc", "ipp", "cpp_measured",
    "tmam_retiring", "tmam_bad_speculation", "tmam_frontend_bound", "tmam_backend_bound",
    "ddio_miss_rate_itom", "ddio_miss_rate_rfo", "ddio_miss_rate_pcierdcur",
    "pcie_rd_bytes_per_packet", "pcie_wr_bytes_per_packet", "wil_per_packet",
    "mem_bytes_per_packet",
)


@dataclass(frozen=True)
class TelemetryRecord:
    """Telemetry of one trial; ``values`` maps METRIC_KEYS to a number or NotSupported."""

    values: Dict[str, Value] = field(default_factory=dict)

    @classmethod
    def unsupported(cls, perf: Optional[NotSupported], pcm: Optional[NotSupported]) -> "TelemetryRecord":
        vals: Dict[str, Value] = {}
        for key in METRIC_KEYS:
            pcm_key = key.startswith(("ddio", "pcie", "wil", "mem"))
            reason = pcm if pcm_key else perf
            if reason is not None:
                vals[key] = reason
        return cls(vals)

    def to_metrics(self) -> Dict[str, Union[float, str]]:
        """Flat metrics for records/JUnit: numbers, or ``"not supported (<reason>)"``."""
        out: Dict[str, Union[float, str]] = {}
        for key, value in self.values.items():
            out[key] = value.metric() if isinstance(value, NotSupported) else round(float(value), 6)
        return out
