"""What both testbeds' keyword libraries share: the test's result record, the NDR/PDR
result with its console line, telemetry at the goals, the ``Rate`` argument converter."""

from __future__ import annotations

import time
from typing import Any, Dict, Optional, Tuple, Union

from robot.api import logger
from robot.libraries.BuiltIn import BuiltIn, RobotNotRunningError

from dpgate.config.units import Rate, format_pps, frame_size_tag, parse_frame_size, parse_rate
from dpgate.metrics import cycles_per_packet
from dpgate.model.ndrpdr import CEILING_MARGIN, NdrPdrResult
from dpgate.outputs.results import ResultStore
from dpgate.search.bounded import SearchRun, _opt


def rate_arg(value: Union[str, int, float]) -> Rate:
    """The ``Rate`` converter of every keyword library (``0.5 Mpps``, ``40%``, ``10 Gbps``)."""
    return parse_rate(value)


def _bi() -> BuiltIn:
    return BuiltIn()


def _current_test() -> Tuple[str, str]:
    try:
        bi = _bi()
        suite = bi.get_variable_value("${SUITE NAME}", "")
        test = bi.get_variable_value("${TEST NAME}", None)
    except RobotNotRunningError:  # keywords called from plain Python (tests, scripts)
        return "", ""
    return suite, test or ""


def _store() -> ResultStore:
    return ResultStore(_bi().get_variable_value("${OUTPUT DIR}", "."))


def record(**fields: Any) -> None:
    """Merge fields into the current test's result record (no-op outside a test)."""
    suite, test = _current_test()
    if not test:
        return
    _store().update(f"{suite}.{test}", suite=suite, name=test, **fields)


def telemetry_at_goals(capture, run: SearchRun) -> Dict[str, Any]:
    """``capture(load, suffix)`` at the NDR and, when higher, at the PDR (``_pdr`` keys), as
    CSIT does; nothing when NDR is 0."""
    out: Dict[str, Any] = {}
    if run.ndr > 0:
        out.update(capture(run.ndr, ""))
        if run.pdr > run.ndr:
            out.update(capture(run.pdr, "_pdr"))
        elif run.pdr == run.ndr:
            out["telemetry_pdr"] = "PDR = NDR: one capture, see the NDR values"
    return out


def ndrpdr_result(run: SearchRun, *, nf: str, frame_size: str, profile: str, lo: float, hi: float, cores: int,
                  hz: float, source: str, generator_max_pps: Optional[float], sut_cpp: Optional[float],
                  telemetry: Dict[str, Any], ceiling_note: str, mrr: Tuple[float, ...] = ()) -> NdrPdrResult:
    """The keyword's result from a search, with CPP and the generator-ceiling marking; logged."""
    ndr, pdr, res = run.ndr, run.pdr, run.res
    at_max = [g for g, v in (("NDR", ndr), ("PDR", pdr)) if v >= CEILING_MARGIN * hi]
    out = NdrPdrResult(
        nf=nf, frame_size=frame_size_tag(parse_frame_size(frame_size)), ndr_pps=ndr, pdr_pps=pdr,
        ndr_upper_pps=_opt(getattr(res, "ndr_upper", None)), pdr_upper_pps=_opt(getattr(res, "pdr_upper", None)),
        ndr_loss=run.ndr_loss, pdr_loss=run.pdr_loss, profile=profile, trials=int(res.trial_count),
        search_s=time.monotonic() - run.started, cores=cores, cpu_hz=hz, freq_source=source,
        cpp_ndr=cycles_per_packet(ndr, hz, cores) if ndr > 0 else float("inf"),
        cpp_pdr=cycles_per_packet(pdr, hz, cores) if pdr > 0 else float("inf"),
        generator_max_pps=generator_max_pps, limited_by="generator" if at_max else None, sut_cpp_measured=sut_cpp,
        telemetry=telemetry, mrr_samples=tuple(mrr),
    )
    if res.ndr is None or res.pdr is None:
        logger.warn(f"even the minimum rate {format_pps(lo)} failed a loss goal: reported as 0")
    logger.info(f"NDR {format_pps(out.ndr_pps)}  PDR {format_pps(out.pdr_pps)}  CPP {out.cpp_ndr:.0f} "
                f"({out.trials} trials, {out.search_s:.1f} s)")
    if at_max:
        logger.warn(f"{'/'.join(at_max)} reached the " + ceiling_note.format(hi=format_pps(hi)))
    return out
