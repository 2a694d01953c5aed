"""The result of one NDR/PDR search as keywords return and record it (:class:`NdrPdrResult`).

``CEILING_MARGIN``: a rate within 3 % of the generator's ceiling counts as "at the ceiling"
(``limited_by=generator``); every module that asks that question uses this one constant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

from dpgate.config.units import average_frame_size, parse_frame_size

#: A rate at or above this fraction of the generator's ceiling is "at the ceiling".
CEILING_MARGIN = 0.97


@dataclass(frozen=True)
class NdrPdrResult:
    """What ``Find NDR And PDR`` returns (and records)."""

    nf: str
    frame_size: str
    ndr_pps: float
    pdr_pps: float
    ndr_upper_pps: Optional[float]
    pdr_upper_pps: Optional[float]
    ndr_loss: float
    pdr_loss: float
    profile: str
    trials: int
    search_s: float
    cores: int
    cpu_hz: float
    freq_source: str
    cpp_ndr: float
    cpp_pdr: float
    generator_max_pps: Optional[float]
    limited_by: Optional[str]
    sut_cpp_measured: Optional[float] = None
    mrr_samples: Tuple[float, ...] = ()
    telemetry: Dict[str, Any] = field(default_factory=dict)
    #: Name of the testbed (topology) that measured it: keys the regression history.
    testbed: str = ""

    def mrr_limited_by(self, mrr: float) -> str:
        """Whose rate the MRR is: ``generator`` at the ceiling, and also below it when the
        NDR sits at the ceiling. MRR offers the ceiling, the load the search saw the SUT
        forward without loss, so a shortfall there is the generator's or the host's (gk98: a
        linux-bridge NDR at a 0.931 Mpps ceiling, then MRR trials at that load sending 0.836-0.914
        with the SUT dropping nothing). A SUT that lost its headroom has its NDR under the
        ceiling too, and then its MRR is its own.

        >>> r = NdrPdrResult("nf", "64B", 9.3e5, 9.3e5, None, None, 0.0, 0.005, "p", 1, 1.0, 1,
        ...                  1e9, "declared", 1.0, 1.0, 9.31e5, None)
        >>> r.mrr_limited_by(8.76e5), r.mrr_limited_by(9.3e5)
        ('generator', 'generator')
        >>> from dataclasses import replace
        >>> replace(r, ndr_pps=8.0e5).mrr_limited_by(8.76e5)
        'sut'
        """
        ceiling = self.generator_max_pps
        if not ceiling:
            return "sut"
        return "generator" if max(mrr, self.ndr_pps) >= CEILING_MARGIN * ceiling else "sut"

    def metrics(self) -> Dict[str, Any]:
        bits = (average_frame_size(parse_frame_size(self.frame_size)) + 20) * 8
        m: Dict[str, Any] = {
            "ndr_pps": round(self.ndr_pps, 1),
            "pdr_pps": round(self.pdr_pps, 1),
            "ndr_mpps": round(self.ndr_pps / 1e6, 6),
            "pdr_mpps": round(self.pdr_pps / 1e6, 6),
            "ndr_gbps": round(self.ndr_pps * bits / 1e9, 6),
            "pdr_gbps": round(self.pdr_pps * bits / 1e9, 6),
            "ndr_loss_goal": self.ndr_loss,
            "pdr_loss_goal": self.pdr_loss,
            "cpp": round(self.cpp_ndr, 1),
            "cpp_pdr": round(self.cpp_pdr, 1),
            "cores": self.cores,
            "cpu_hz": self.cpu_hz,
            "freq_source": self.freq_source,
            "trials": self.trials,
            "search_seconds": round(self.search_s, 2),
            "search_profile": self.profile,
            "frame_size": self.frame_size,
            "generator_max_pps": round(self.generator_max_pps, 1) if self.generator_max_pps else "n/a",
            "limited_by": self.limited_by or "sut",
        }
        if self.ndr_upper_pps is not None:
            m["ndr_upper_pps"] = round(self.ndr_upper_pps, 1)
        if self.pdr_upper_pps is not None:
            m["pdr_upper_pps"] = round(self.pdr_upper_pps, 1)
        if self.mrr_samples:
            mrr = sum(self.mrr_samples) / len(self.mrr_samples)
            m["mrr_pps"] = round(mrr, 1)
            m["mrr_limited_by"] = self.mrr_limited_by(mrr)
        if self.sut_cpp_measured is not None:
            m["cpp_sut_measured"] = round(self.sut_cpp_measured, 1)
        m.update(self.telemetry)
        return m
