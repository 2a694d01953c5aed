"""What both testbeds' keyword libraries share: the test's result record, the NDR/PDR
result with its console line, telemetry at the goals, the ``Rate`` argument converter, and
the one flow of ``Find NDR And PDR`` (:meth:`TestbedKeywords._find_ndr_and_pdr`): each
testbed fills in its hooks (generator, liveness, CPU frequency, what it measures after the
search, what it adds to the result and the record)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple, Union

from robot.api import logger
from robot.api.deco import keyword
from robot.libraries.BuiltIn import BuiltIn, RobotNotRunningError

from dpgate.config.units import Rate, format_pps, frame_size_tag, parse_frame_size, parse_rate
from dpgate.metrics import cycles_per_packet
from dpgate.model.errors import ConfigError
from dpgate.model.ndrpdr import CEILING_MARGIN, NdrPdrResult
from dpgate.model.trial import TrialResult
from dpgate.outputs.results import ResultStore
from dpgate.search.bounded import SearchRun, _measured_cpp_near, _opt, search_ndr_pdr, trial_dicts


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


def ndrpdr_result(
    run: SearchRun,
    *,
    nf: str,
    frame_size: str,
    profile: str,
    lo: float,
    hi: float,
    cores: int,
    hz: float,
    source: str,
    generator_max_pps: Optional[float],
    sut_cpp: Optional[float],
    telemetry: Dict[str, Any],
    ceiling_note: str,
    mrr: Tuple[float, ...] = (),
    testbed: str = "",
) -> NdrPdrResult:
    """The keyword's result from a search, with CPP and the generator-ceiling marking; logged."""
    ndr, pdr, res = run.ndr, run.pdr, run.res
    at_max = [g for g, v in (("NDR", ndr), ("PDR", pdr)) if v >= CEILING_MARGIN * hi]
    out = NdrPdrResult(
        nf=nf,
        frame_size=frame_size_tag(parse_frame_size(frame_size)),
        ndr_pps=ndr,
        pdr_pps=pdr,
        ndr_upper_pps=_opt(getattr(res, "ndr_upper", None)),
        pdr_upper_pps=_opt(getattr(res, "pdr_upper", None)),
        ndr_loss=run.ndr_loss,
        pdr_loss=run.pdr_loss,
        profile=profile,
        trials=int(res.trial_count),
        search_s=time.monotonic() - run.started,
        cores=cores,
        cpu_hz=hz,
        freq_source=source,
        cpp_ndr=cycles_per_packet(ndr, hz, cores) if ndr > 0 else float("inf"),
        cpp_pdr=cycles_per_packet(pdr, hz, cores) if pdr > 0 else float("inf"),
        generator_max_pps=generator_max_pps,
        limited_by="generator" if at_max else None,
        sut_cpp_measured=sut_cpp,
        telemetry=telemetry,
        mrr_samples=tuple(mrr),
        testbed=testbed,
    )
    if res.ndr is None or res.pdr is None:
        logger.warn(f"even the minimum rate {format_pps(lo)} failed a loss goal: reported as 0")
    logger.info(
        f"NDR {format_pps(out.ndr_pps)}  PDR {format_pps(out.pdr_pps)}  CPP {out.cpp_ndr:.0f} "
        f"({out.trials} trials, {out.search_s:.1f} s)"
    )
    if at_max:
        logger.warn(f"{'/'.join(at_max)} reached the " + ceiling_note.format(hi=format_pps(hi)))
    return out


def trial_line(result: TrialResult) -> str:
    """The console line of one trial, the same on both testbeds.

    >>> from dpgate.model.trial import TrialResult
    >>> trial_line(TrialResult.from_counts(1e6, 1.0, tx_packets=1_000_000, rx_packets=999_000))
    '  trial 1.000 Mpps x 1 s: loss 0.100 %'
    """
    return (
        f"  trial {format_pps(result.intended_load_pps)} x {result.intended_duration_s:g} s: "
        f"loss {result.loss_ratio * 100:.3f} %" + (f" [{result.limited_by}]" if result.limited_by else "")
    )


@dataclass(frozen=True)
class SearchSetting:
    """What a testbed puts into the shared ``Find NDR And PDR`` result and record."""

    cores: int  # for CPP: the SUT's cores (lab: physical cores of the allocation)
    testbed: str
    prefix: str
    ceiling_note: str  # logged when NDR/PDR reach the generator ceiling ``{hi}``


class TestbedKeywords:
    """What the embedded and the lab keyword libraries share: the pabot pool, the record of
    every trial with its console line, the ``SUT Version`` keyword (``_sut_version``), and
    the ``Find NDR And PDR`` flow (``_find_ndr_and_pdr`` and its ``_search_*`` hooks)."""

    nf: Optional[str] = None
    telemetry: bool = True

    # -- Find NDR And PDR: one flow, the hooks each testbed implements ----------------------
    def _find_ndr_and_pdr(
        self,
        frame_size: str,
        profile: str,
        min_rate: Rate,
        max_rate: Rate,
        ndr_loss: str,
        pdr_loss: str,
        time_limit: float,
        overrides: Dict[str, str],
        **after_kw: Any,
    ) -> NdrPdrResult:
        """Search between the rates (resolved against the generator ceiling) with the SUT
        checked alive before and after; then the testbed's own trials (``after_kw``), CPP,
        telemetry at the goals, the logged result and the test's record."""
        gen = self._search_generator(frame_size)
        lo, hi = min_rate.resolve(gen.max_pps), max_rate.resolve(gen.max_pps)
        self._search_alive(gen)
        measure = self._search_measure(gen)
        before = self._before_search(gen, measure, **after_kw)
        measure = before.get("measure", measure)
        run = search_ndr_pdr(
            measure,
            lo,
            hi,
            ndr_loss,
            pdr_loss,
            profile,
            overrides,
            time_limit,
            logger.warn,
            before.get("paused"),
        )
        self._search_alive(gen)
        after = self._after_search(gen, run, before=before, **after_kw)
        hz, source = self._search_cpu_freq()
        sut_cpp, busy_cpp = _measured_cpp_near(run.res, run.ndr, hz)
        telemetry = self._search_telemetry(run, busy_cpp, after)
        if self.telemetry:
            telemetry.update(telemetry_at_goals(lambda load, sfx: self._telemetry_at(gen, load, sfx), run))
        setting = self._search_setting()
        out = ndrpdr_result(
            run,
            nf=self.nf or "?",
            frame_size=frame_size,
            profile=profile,
            lo=lo,
            hi=hi,
            cores=setting.cores,
            hz=hz,
            source=source,
            generator_max_pps=gen.max_pps,
            sut_cpp=sut_cpp,
            telemetry=telemetry,
            mrr=tuple(after.get("mrr", ())),
            testbed=setting.testbed,
            ceiling_note=setting.ceiling_note,
        )
        metrics, fields = self._search_record(gen, run, out, after)
        record(
            metrics=metrics,
            nf=out.nf,
            sut_version=self.sut_version(),
            testbed=setting.testbed,
            prefix=setting.prefix,
            profile=profile,
            trials=trial_dicts(run.res),
            **fields,
        )
        return out

    def _search_generator(self, frame_size: str) -> Any:
        """The generator for ``frame_size``, ready to send (the testbed must be up)."""
        raise NotImplementedError

    def _search_measure(self, gen: Any) -> Callable[[float, float], TrialResult]:
        """``measure(load_pps, duration_s)`` for the search: each trial recorded and printed."""
        raise NotImplementedError

    def _search_alive(self, gen: Any) -> None:
        """SutError naming the SUT when its process is not running."""
        raise NotImplementedError

    def _search_cpu_freq(self) -> Tuple[float, str]:
        """(Hz, source) of the SUT cores for CPP."""
        raise NotImplementedError

    def _before_search(self, gen: Any, measure: Callable, **after_kw: Any) -> Dict[str, Any]:
        """Handed to :meth:`_after_search` as ``before``; may give the search another
        ``measure`` (the search's ``measure`` with trials of its own between) and ``paused``
        (their wall time, not counted by the search's time limit). Nothing by default."""
        return {}

    def _after_search(
        self, gen: Any, run: SearchRun, before: Optional[Dict[str, Any]] = None, **after_kw: Any
    ) -> Dict[str, Any]:
        """Trials after the search (e.g. MRR: ``{"mrr": (pps, ...)}``); nothing by default."""
        return {}

    def _search_telemetry(
        self, run: SearchRun, busy_cpp: Optional[float], after: Dict[str, Any]
    ) -> Dict[str, Any]:
        """The result's telemetry before the captures at the goals."""
        return {"search_complete": run.complete}

    def _search_setting(self) -> SearchSetting:
        raise NotImplementedError

    def _search_record(
        self, gen: Any, run: SearchRun, out: NdrPdrResult, after: Dict[str, Any]
    ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
        """(metrics, more record fields: latency, ...) of the test's record."""
        raise NotImplementedError

    def _telemetry_at(self, gen: Any, load: float, suffix: str = "") -> Dict[str, Any]:
        raise NotImplementedError

    def _sut_version(self) -> str:
        raise NotImplementedError

    @keyword
    def sut_version(self) -> str:
        """Version of the running SUT (e.g. ``v23.10-release`` for VPP, the DPDK version for
        testpmd, the kernel release for the Linux SUTs); ``unknown`` when none runs."""
        return self._sut_version()

    @staticmethod
    def _acquire_from_pool(pool: str, key: str, hint: str) -> str:
        """Under pabot with ``--resourcefile``: acquire a value set tagged ``pool`` and return
        its ``key``. PabotLib is imported here, at run time, so a ``robot --dryrun`` of the
        suites never loads it."""
        bi = _bi()
        bi.import_library("pabot.PabotLib")
        bi.run_keyword("Acquire Value Set", pool)
        value = bi.run_keyword("Get Value From Set", key)
        if not value:
            raise ConfigError(
                f"the pool testbed acquired for {pool!r} has no {key!r} key: add "
                f"{key}=<{hint}> to its section of the pabot resource file"
            )
        return str(value)

    @staticmethod
    def _release_to_pool() -> None:
        _bi().run_keyword("Release Value Set")

    @staticmethod
    def _on_trial(result: TrialResult) -> None:
        """Append the trial to the current test's record (when in a test) and print its line."""
        suite, test = _current_test()
        if test:
            _store().append_trial(f"{suite}.{test}", result.to_dict())
        logger.console(trial_line(result))
