"""Telemetry: perf (IPC, IPP, CPP, TMAM level 1) and pcm (PCIe/DDIO, memory) per packet.

Where a counter is unavailable (VMs without a PMU, AMD hosts for pcm), every value is a
typed :class:`NotSupported` carrying the tool's reason; gates then skip or fail per policy
and JUnit shows ``ipc=not supported (<reason>)``. Never a made-up number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Union

from dpgate.model.errors import DpgateError


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
    "ipc",
    "ipp",
    "cpp_measured",
    "cache_misses_per_packet",
    "llc_load_misses_per_packet",
    "tmam_retiring",
    "tmam_bad_speculation",
    "tmam_frontend_bound",
    "tmam_backend_bound",
    "ddio_miss_rate_itom",
    "ddio_miss_rate_rfo",
    "ddio_miss_rate_pcierdcur",
    "ddio_miss_rate_itomcachenear",
    "pcie_rd_bytes_per_packet",
    "pcie_wr_bytes_per_packet",
    "wil_per_packet",
    "mem_bytes_per_packet",
)
TMAM_KEYS = ("tmam_retiring", "tmam_bad_speculation", "tmam_frontend_bound", "tmam_backend_bound")


def _group(key: str) -> str:
    if key.startswith("tmam_"):
        return "tmam"
    if key.startswith("mem_"):
        return "mem"
    if key.startswith(("ddio", "pcie", "wil")):
        return "pcie"
    return "perf"


@dataclass(frozen=True)
class TelemetryRecord:
    """Telemetry of one trial; ``values`` maps METRIC_KEYS (and ``ddio_miss_rate_<event>``
    for other events) to a number or NotSupported; ``info`` says how it was measured
    (``tmam_source``, ``telemetry_window_s``), as text."""

    values: Dict[str, Value] = field(default_factory=dict)
    info: Dict[str, str] = field(default_factory=dict)

    @classmethod
    def unsupported(
        cls,
        perf: Optional[NotSupported],
        pcm: Optional[NotSupported],
        mem: Optional[NotSupported] = None,
        tmam: Optional[NotSupported] = None,
    ) -> TelemetryRecord:
        """Every key whose tool cannot count here, with that tool's reason (pcm-memory defaults
        to pcm-pcie's reason, TMAM to perf's)."""
        reasons = {
            "perf": perf,
            "pcie": pcm,
            "mem": mem if mem is not None else pcm,
            "tmam": tmam if tmam is not None else perf,
        }
        vals: Dict[str, Value] = {}
        for key in METRIC_KEYS:
            reason = reasons[_group(key)]
            if reason is not None:
                vals[key] = reason
        return cls(vals)

    def with_suffix(self, suffix: str) -> TelemetryRecord:
        """The same record with every key renamed ``<key><suffix>`` (``ipc_pdr``)."""
        return TelemetryRecord(
            {k + suffix: v for k, v in self.values.items()}, {k + suffix: v for k, v in self.info.items()}
        )

    def to_metrics(self) -> Dict[str, Union[float, str]]:
        """Flat metrics for records/JUnit: numbers, or ``"not supported (<reason>)"``."""
        out: Dict[str, Union[float, str]] = {}
        for key, value in self.values.items():
            out[key] = value.metric() if isinstance(value, NotSupported) else round(float(value), 6)
        out.update(self.info)
        return out


def report_rows(records, suffix: str = ""):
    """Per-test rows for the report's CPP/IPC table and TMAM bars (see dpgate.telemetry.rows)."""
    from .rows import report_rows as _rows

    return _rows(records, suffix)
