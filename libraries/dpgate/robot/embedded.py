"""Robot Framework keyword libraries of dpgate.

``EmbeddedTestbed`` (suite scope) brings the embedded testbed up, starts the SUT, runs
trials and NDR/PDR searches. ``Gates`` holds the assertions: readable failures with the
numbers, e.g. ``NDR 0.212 Mpps < floor 0.250 Mpps (-15.2 %)``. Every measured value is
recorded in the test's result record (``<outputdir>/dpgate/tests/<test>.json``), from
which the listener writes JUnit.

Example suite::

    *** Settings ***
    Library    dpgate.robotlib.EmbeddedTestbed    topologies/embedded.yaml
    Library    dpgate.robotlib.Gates    variables/embedded.yaml
    Suite Setup       Bring Up Embedded Testbed    linux-ip4    64B    IMIX
    Suite Teardown    Tear Down Embedded Testbed

    *** Test Cases ***
    64B-1c-linux-ip4-ndrpdr
        ${result}=    Find NDR And PDR    64B
        Throughput Should Be At Least    ${result}    0.15 Mpps    goal=NDR
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple, Union

from robot.api import Failure, SkipExecution, logger
from robot.api.deco import keyword, library
from robot.libraries.BuiltIn import BuiltIn

from dpgate.config.thresholds import CaseThresholds, load_thresholds
from dpgate.config.units import Rate, format_pps, frame_size_tag, parse_frame_size, parse_rate, parse_ratio
from dpgate.model.errors import ConfigError
from dpgate.outputs.results import ResultStore

TELEMETRY_POLICIES = ("skip", "fail")


def _rate(value: Union[str, int, float]) -> Rate:
    return parse_rate(value)


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

    def metrics(self) -> Dict[str, Any]:
        from dpgate.config.units import average_frame_size
        from dpgate.metrics import line_rate_pps  # noqa: F401  (documented relation; gbps below)

        bits = (average_frame_size(parse_frame_size(self.frame_size)) + 20) * 8
        m: Dict[str, Any] = {
            "ndr_pps": round(self.ndr_pps, 1), "pdr_pps": round(self.pdr_pps, 1),
            "ndr_mpps": round(self.ndr_pps / 1e6, 6), "pdr_mpps": round(self.pdr_pps / 1e6, 6),
            "ndr_gbps": round(self.ndr_pps * bits / 1e9, 6), "pdr_gbps": round(self.pdr_pps * bits / 1e9, 6),
            "ndr_loss_goal": self.ndr_loss, "pdr_loss_goal": self.pdr_loss,
            "cpp": round(self.cpp_ndr, 1), "cpp_pdr": round(self.cpp_pdr, 1),
            "cores": self.cores, "cpu_hz": self.cpu_hz, "freq_source": self.freq_source,
            "trials": self.trials, "search_seconds": round(self.search_s, 2),
            "search_profile": self.profile, "frame_size": self.frame_size,
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
            m["mrr_limited_by"] = ("generator" if self.generator_max_pps and mrr >= 0.97 * self.generator_max_pps
                                   else "sut")
        if self.sut_cpp_measured is not None:
            m["cpp_sut_measured"] = round(self.sut_cpp_measured, 1)
        m.update(self.telemetry)
        return m


def _bi() -> BuiltIn:
    return BuiltIn()


def _current_test() -> Tuple[str, str]:
    from robot.libraries.BuiltIn import RobotNotRunningError

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


@library(scope="SUITE", converters={Rate: _rate}, doc_format="ROBOT")
class EmbeddedTestbed:
    """Embedded testbed keywords: namespaces, veth links, a real SUT and tcpreplay.

    Import: ``Library  dpgate.robotlib.EmbeddedTestbed  topologies/embedded.yaml  prefix=dpg1-``
    """

    def __init__(self, topology: str = "topologies/embedded.yaml", prefix: Optional[str] = None,
                 telemetry: bool = True):
        self.topology_path = topology
        self.prefix = prefix or None
        self.telemetry = telemetry
        self._collector = None
        self._steal = None
        self.session = None
        self.generators: Dict[str, Any] = {}
        self.nf: Optional[str] = None

    # -- lifecycle -------------------------------------------------------------
    @keyword
    def bring_up_embedded_testbed(self, nf: str, *frame_sizes: str, prefix: Optional[str] = None,
                                  sut_cpu_steal: str = "0") -> float:
        """Create namespaces and veths, calibrate the generator for each frame size, start SUT ``nf``.

        Returns the calibrated generator ceiling (pps) of the first frame size. ``prefix``
        overrides the namespace prefix (e.g. the one a pabot pool member hands out).
        ``sut_cpu_steal`` (fault injection, e.g. ``10%``) takes that share of the SUT cores
        away for the whole suite (see ``dpgate.testbeds.embedded.handicap``), to show that the regression gate
        catches a slower SUT; every record of the suite then says so (``injected_sut_cpu_steal``).

        | `Bring Up Embedded Testbed` | linux-ip4 | 64B | IMIX | 1518B |
        | `Bring Up Embedded Testbed` | linux-ip4 | 64B | prefix=dpg2- |
        | `Bring Up Embedded Testbed` | testpmd-io | 64B | sut_cpu_steal=10% |
        """
        steal = parse_ratio(sut_cpu_steal or "0", "sut_cpu_steal")
        if prefix:
            self.prefix = prefix
        from dpgate.testbeds.embedded.session import EmbeddedSession
        from dpgate.traffic.tcpreplay import TcpreplayGenerator

        sizes = [parse_frame_size(s) for s in (frame_sizes or ("64B",))]
        self.nf = nf
        self.session = EmbeddedSession(self.topology_path, nf, frame_size=sizes[0], prefix=self.prefix,
                                       calibrate=False)
        s = self.session
        s.testbed.up()
        try:
            for size in sizes:
                gen = TcpreplayGenerator(s.testbed, _profile_for(s, size), on_trial=self._on_trial)
                gen.pcaps()
                ceiling = gen.calibrate()
                logger.info(f"generator ceiling at {frame_size_tag(size)}: {format_pps(ceiling)}")
                self.generators[frame_size_tag(size)] = gen
            self._start_sut()
            if steal > 0:
                from dpgate.testbeds.embedded.handicap import CpuSteal

                self._steal = CpuSteal(s.testbed.sut_cpus, steal).start()
                logger.warn(f"fault injection: {steal:.0%} of SUT CPU(s) {s.testbed.sut_cpus} taken by a "
                            "real-time stealer for this suite (sut_cpu_steal)")
        except BaseException:
            self.tear_down_embedded_testbed()
            raise
        return self.generators[frame_size_tag(sizes[0])].max_pps

    def _start_sut(self) -> None:
        s = self.session
        first = next(iter(self.generators.values()))
        s.sut = s.sut_cls(s.testbed, flows=first.profile.effective_flows if s.sut_cls.traffic == "ip4" else None)
        s.sut.start()
        for gen in self.generators.values():
            gen.sut = s.sut
        logger.info(f"SUT {s.sut.name} started: {s.sut.version()}")

    @keyword
    def tear_down_embedded_testbed(self) -> None:
        """Stop the SUT and remove every namespace, veth and process of this testbed."""
        steal, self._steal = self._steal, None
        if steal is not None:
            steal.stop()
        gens, self.generators = self.generators, {}
        for gen in gens.values():
            gen.abort()
        if self.session is not None:
            self.session.down()
            self.session = None

    @keyword
    def acquire_embedded_testbed_from_pool(self, pool: str) -> str:
        """Under pabot with ``--resourcefile``: acquire a testbed (value set) tagged ``pool``
        and return its namespace ``prefix``. Blocks until one is free: bound it with a keyword
        ``[Timeout]`` (resources/embedded.resource does). PabotLib is imported here, at run
        time, so a ``robot --dryrun`` of the suites never loads it.

        | ${prefix}= | `Acquire Embedded Testbed From Pool` | embedded |
        """
        bi = _bi()
        bi.import_library("pabot.PabotLib")
        bi.run_keyword("Acquire Value Set", pool)
        prefix = bi.run_keyword("Get Value From Set", "prefix")
        if not prefix:
            raise ConfigError(f"the pool testbed acquired for {pool!r} has no 'prefix' key: add "
                              "prefix=<namespace prefix> to its section of the pabot resource file")
        return str(prefix)

    @keyword
    def release_embedded_testbed_to_pool(self) -> None:
        """Give the testbed acquired by `Acquire Embedded Testbed From Pool` back to the pool."""
        _bi().run_keyword("Release Value Set")

    @keyword
    def sut_version(self) -> str:
        return self.session.sut.version() if self.session and self.session.sut else "unknown"

    def _gen(self, frame_size: str):
        if self.session is None:
            raise Failure("embedded testbed is not up: call 'Bring Up Embedded Testbed' in Suite Setup")
        tag = frame_size_tag(parse_frame_size(frame_size))
        if tag not in self.generators:
            raise ConfigError(f"frame size {tag} was not prepared; add it to 'Bring Up Embedded Testbed' "
                              f"(prepared: {', '.join(self.generators)})", path="frame_size")
        return self.generators[tag]

    def _telemetry_at(self, gen, load: float, suffix: str = "") -> Dict[str, Any]:
        """perf/pcm on the SUT cores during a trial at ``load``: the found NDR, and the PDR
        with keys suffixed ``_pdr``, as CSIT captures both (see
        ``dpgate.telemetry.collector.capture_during_trial``)."""
        from dpgate.telemetry.collector import TelemetryCollector, capture_during_trial

        if self._collector is None:
            self._collector = TelemetryCollector(self.session.testbed.sut_cpus)
        return capture_during_trial(self._collector, gen.measure, load, suffix)

    def _on_trial(self, result) -> None:
        suite, test = _current_test()
        _store().append_trial(f"{suite}.{test}", result.to_dict())
        logger.console(
            f"  trial {format_pps(result.intended_load_pps)} x {result.intended_duration_s:g} s: "
            f"loss {result.loss_ratio * 100:.3f} %" + (f" [{result.limited_by}]" if result.limited_by else ""),
        )

    # -- trials and search -------------------------------------------------------
    @keyword
    def run_trial(self, rate: Rate, duration: float = 2.0, frame_size: str = "64B"):
        """One trial; ``rate`` accepts 50kpps, 0.2 Mpps, 75% (of the calibrated ceiling).

        | ${r}= | `Run Trial` | 50kpps | duration=2 | frame_size=64B |
        | Should Be Equal As Integers | ${r.loss_packets} | 0 |
        """
        gen = self._gen(frame_size)
        return gen.measure(rate.resolve(gen.max_pps), float(duration))

    @keyword
    def find_ndr_and_pdr(self, frame_size: str = "64B", profile: str = "per-commit",
                         min_rate: Rate = Rate(pps=9001.0), max_rate: Rate = Rate(percent=100.0),
                         ndr_loss: str = "0", pdr_loss: str = "0.5%", time_limit: float = 0,
                         mrr_trials: int = 0, mrr_duration: float = 1.0, **overrides: str) -> NdrPdrResult:
        """Search NDR and PDR for ``frame_size`` with a search profile, compute CPP, record metrics.

        ``max_rate`` defaults to the calibrated generator ceiling (the testbed's "line rate");
        a bound at that ceiling is marked ``limited_by=generator``, never reported as the SUT's.
        ``time_limit`` (seconds, 0 = none) bounds the search's wall time: when it runs out,
        NDR/PDR come from the trials measured so far (highest load passing its goal in
        at least half of its trial time, below the lowest load failing it) and the record
        says ``search_complete=False``. ``mrr_trials`` (default 0) adds CSIT's MRR after
        the search: that many ``mrr_duration`` trials at the generator ceiling, whose rx rates
        are recorded as ``mrr_pps`` (mean) and samples for the regression check (they
        let jumpavg see the noise within a run). Other keyword arguments override profile
        settings (e.g. ``trial_duration=2``).

        | ${r}= | `Find NDR And PDR` | 64B | profile=per-commit |
        | ${r}= | `Find NDR And PDR` | IMIX | mrr_trials=3 |
        """
        gen = self._gen(frame_size)
        lo, hi = min_rate.resolve(gen.max_pps), max_rate.resolve(gen.max_pps)
        gen.sut.check_alive()
        run = search_ndr_pdr(gen.measure, lo, hi, ndr_loss, pdr_loss, profile, overrides, time_limit)
        gen.sut.check_alive()
        mrr = tuple(gen.measure(gen.max_pps, float(mrr_duration)).rx_rate_pps for _ in range(int(mrr_trials)))
        hz, source = self.session.cpu_freq()
        sut_cpp, busy_cpp = _measured_cpp_near(run.res, run.ndr, hz)
        telemetry: Dict[str, Any] = {"cpp_busy": round(busy_cpp, 1)} if busy_cpp else {}
        telemetry["search_complete"] = run.complete
        if self.telemetry:
            telemetry.update(telemetry_at_goals(lambda load, sfx: self._telemetry_at(gen, load, sfx), run))
        out = ndrpdr_result(run, nf=self.nf or "?", frame_size=frame_size, profile=profile, lo=lo, hi=hi,
                            cores=len(self.session.testbed.sut_cpus), hz=hz, source=source,
                            generator_max_pps=gen.max_pps, sut_cpp=sut_cpp, telemetry=telemetry, mrr=mrr,
                            ceiling_note="generator ceiling {hi}: the SUT may be faster than this testbed can show")
        metrics = out.metrics()
        if self._steal is not None:
            metrics["injected_sut_cpu_steal"] = self._steal.share
        record(metrics=metrics, nf=out.nf, sut_version=self.sut_version(),
               testbed=self.session.topology.name, prefix=self.session.topology.prefix, profile=profile,
               trials=trial_dicts(run.res), latency=None, samples={"mrr_pps": list(mrr)} if mrr else {},
               latency_note="not measured: the embedded generator (tcpreplay) sends no timestamped latency "
                            "streams; lab runs with TRex report latency")
        return out


class _TimeUp(Exception):
    pass


@dataclass(frozen=True)
class SearchRun:
    """One search of `Find NDR And PDR` (either testbed): its result and how it ended."""

    res: Any
    ndr_loss: float
    pdr_loss: float
    complete: bool
    started: float

    @property
    def ndr(self) -> float:
        return float(self.res.ndr or 0.0)

    @property
    def pdr(self) -> float:
        return float(self.res.pdr or 0.0)


def search_ndr_pdr(measure, lo: float, hi: float, ndr_loss: str, pdr_loss: str, profile: str,
                   overrides: Dict[str, str], time_limit: float) -> SearchRun:
    """``find_ndr_pdr`` over ``measure`` with the keyword's arguments; a ``time_limit`` (s, 0 =
    none) that runs out ends the search with bounds from the trials so far (complete=False)."""
    from dpgate.search import SearchAborted, find_ndr_pdr

    nl, pl = parse_ratio(ndr_loss, "ndr_loss"), parse_ratio(pdr_loss, "pdr_loss")
    conv = {k: _override_value(v) for k, v in overrides.items()}
    limit = float(time_limit or 0)
    t0 = time.monotonic()

    def bounded(load: float, duration: float):
        if limit and time.monotonic() - t0 > limit:
            raise _TimeUp(f"search time limit {limit:g} s reached")
        return measure(load, duration)

    try:
        return SearchRun(find_ndr_pdr(bounded, lo, hi, ndr_loss=nl, pdr_loss=pl, profile=profile, **conv),
                         nl, pl, True, t0)
    except SearchAborted as err:
        if not isinstance(err.__cause__, _TimeUp):
            raise
        res = _bounds_from_trials(err.partial, nl, pl)
        logger.warn(f"{err.__cause__}: NDR/PDR taken from the {res.trial_count} trials measured so far")
        return SearchRun(_rescue_lower_bounds(measure, res, nl, pl, lo, hi), nl, pl, False, t0)


#: Loads (fractions of the lowest failing load) of the trials that find a lower bound when a
#: time-limited search ended before any load passed a goal.
RESCUE_STEPS = (0.95, 0.9, 0.8, 0.65, 0.5)
RESCUE_TRIAL_S = 1.0


def _rescue_lower_bounds(measure, res: _PartialBounds, ndr_loss: float, pdr_loss: float, lo: float,
                         hi: float) -> _PartialBounds:
    """A time-limited search can end with every load it tried failing a goal (an erratic SUT
    near its limit): there is then no measured lower bound, and reporting 0 would be a
    number nobody measured. Step down from the lowest failing load with 1 s trials until
    one meets the goal (``RESCUE_STEPS``, not below ``lo``) and take the bounds again."""
    trials = list(res.trials)
    for goal, name in ((ndr_loss, "NDR"), (pdr_loss, "PDR")):
        if getattr(res, name.lower()) is not None:
            continue
        top = getattr(res, f"{name.lower()}_upper") or hi
        for frac in RESCUE_STEPS:
            load = max(lo, top * frac)
            result = measure(load, RESCUE_TRIAL_S)
            trials.append((load, RESCUE_TRIAL_S, result))
            if result.loss_ratio <= goal or load <= lo:
                break
        res = _bounds_from_trials(_Trials(tuple(trials)), ndr_loss, pdr_loss)
        found = getattr(res, name.lower())
        logger.warn(f"no load passed the {name} goal before the time limit: stepping down from "
                    f"{format_pps(top)} found {format_pps(found) if found else 'none above ' + format_pps(lo)}")
    return res


@dataclass(frozen=True)
class _Trials:
    trials: tuple


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
    from dpgate.metrics import cycles_per_packet

    ndr, pdr, res = run.ndr, run.pdr, run.res
    at_max = [g for g, v in (("NDR", ndr), ("PDR", pdr)) if v >= 0.97 * hi]
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


@dataclass(frozen=True)
class _PartialBounds:
    ndr: Optional[float]
    pdr: Optional[float]
    ndr_upper: Optional[float]
    pdr_upper: Optional[float]
    trials: tuple
    trial_count: int


def _bounds_from_trials(partial, ndr_loss: float, pdr_loss: float) -> _PartialBounds:
    """NDR/PDR from the trials of an unfinished search (see ``Find NDR And PDR``)."""
    trials = tuple(getattr(partial, "trials", ()))

    def bounds(goal: float):
        per_load: Dict[float, List[float]] = {}
        for t in trials:
            load, dur, tr = t[0], t[1], t[-1]
            entry = per_load.setdefault(round(load, 1), [0.0, 0.0])
            entry[0] += dur
            if tr.loss_ratio > goal:
                entry[1] += dur
        fails = sorted(load for load, (tot, bad) in per_load.items() if bad > 0.5 * tot)
        upper = fails[0] if fails else None
        passes = [load for load, (tot, bad) in per_load.items()
                  if bad <= 0.5 * tot and (upper is None or load < upper)]
        return (max(passes) if passes else None), upper

    ndr, ndr_up = bounds(ndr_loss)
    pdr, pdr_up = bounds(pdr_loss)
    return _PartialBounds(ndr, pdr, ndr_up, pdr_up, trials, len(trials))


def trial_dicts(res) -> List[Dict[str, Any]]:
    """Every trial of a search as the record stores it (``TrialResult`` fields)."""
    out = []
    for t in getattr(res, "trials", ()):
        tr = t[-1] if isinstance(t, tuple) else t
        if hasattr(tr, "to_dict"):
            out.append(tr.to_dict())
    return out


def _opt(v) -> Optional[float]:
    return None if v is None else float(v)


def _override_value(v: str):
    for conv in (int, float):
        try:
            return conv(v)
        except ValueError:
            continue
    return {"true": True, "false": False}.get(str(v).lower(), v)


def _measured_cpp_near(res, load: float, hz: float) -> Tuple[Optional[float], Optional[float]]:
    """Cycles/packet measured at the passing trial closest to (not above) ``load``:
    (reported by the SUT itself, SUT core busy ratio x hz / forwarded rate)."""
    best = None
    for t in getattr(res, "trials", ()):
        tr = t[-1] if isinstance(t, tuple) else t
        if not hasattr(tr, "intended_load_pps") or tr.intended_load_pps > load * 1.0001:
            continue
        if best is None or tr.intended_load_pps > best.intended_load_pps:
            best = tr
    if best is None:
        return None, None
    busy = getattr(best, "sut_busy_ratio", None)
    rate = best.rx_rate_pps
    busy_cpp = busy * hz / rate if busy and rate else None
    return getattr(best, "sut_cycles_per_packet", None), busy_cpp


def _profile_for(session, size):
    from dpgate.traffic.profiles import make_profile

    p = session.profile
    return make_profile(p.kind, size, p.flows, p.bidirectional)


@library(scope="GLOBAL", converters={Rate: _rate}, doc_format="ROBOT")
class Gates:
    """Threshold assertions with readable numbers, and threshold lookup.

    Import: ``Library  dpgate.robotlib.Gates  variables/embedded.yaml  telemetry_policy=skip``

    ``telemetry_policy`` says what an IPC/DDIO/TMAM gate does on a host without counters:
    ``skip`` the test or ``fail`` it, with the reason either way.
    """

    def __init__(self, thresholds: Optional[str] = None, telemetry_policy: str = "skip"):
        if telemetry_policy not in TELEMETRY_POLICIES:
            raise ConfigError(f"telemetry_policy must be one of {', '.join(TELEMETRY_POLICIES)}, "
                              f"got {telemetry_policy!r}", path="Gates.telemetry_policy")
        self.thresholds_path = thresholds
        self.policy = telemetry_policy
        self._file = None

    @keyword
    def thresholds_for(self, nf: str, frame_size: str, cores: Optional[str] = None) -> CaseThresholds:
        """Thresholds of one case from the thresholds file given at import; ``cores`` (a core
        tag like ``2T1C``, lab cases) also applies the file's ``<size>-<tag>`` entries.

        | ${t}= | `Thresholds For` | linux-ip4 | 64B |
        | ${t}= | `Thresholds For` | vpp-l2patch | 64B | cores=2T1C |
        """
        if self._file is None:
            if not self.thresholds_path:
                raise ConfigError("no thresholds file: import Gates with the path of variables/<testbed>.yaml")
            self._file = load_thresholds(self.thresholds_path)
        return self._file.lookup(nf, frame_size, cores or None)

    @keyword
    def throughput_should_be_at_least(self, result: NdrPdrResult, floor: Rate, goal: str = "NDR") -> None:
        """Fail when the NDR (or PDR) is below ``floor``.

        | `Throughput Should Be At Least` | ${result} | 0.25 Mpps | goal=NDR |
        fails with ``NDR 0.212 Mpps < floor 0.250 Mpps (-15.2 %)``.
        """
        goal = goal.upper()
        if goal not in ("NDR", "PDR"):
            raise ConfigError(f"goal must be NDR or PDR, got {goal!r}", path="Throughput Should Be At Least.goal")
        value = result.ndr_pps if goal == "NDR" else result.pdr_pps
        limit = floor.resolve(result.generator_max_pps)
        ok = value >= limit
        msg = (f"{goal} {format_pps(value)} {'>=' if ok else '<'} floor {format_pps(limit)} "
               f"({_pct(value, limit)})")
        if not ok and _at_ceiling(result, value):
            self._inconclusive(f"{goal.lower()}_min", msg, value, limit, result)
        self._gate(f"{goal.lower()}_min", ok, msg, value, limit)

    @keyword
    def throughput_should_not_regress(self, result: NdrPdrResult, history: str, min_change: str = "3%",
                                      noise: Optional[str] = None, mrr_noise: Optional[str] = None) -> List[str]:
        """Compare this test's NDR, PDR and MRR with the history of the same test on the same
        testbed (``dpgate compare`` rules: jumpavg plus an allowance of at least ``min_change``
        and the case's run-to-run ``noise``); fail on a regression. Returns the verdict lines.

        The history is a directory written by ``dpgate history add`` or ``dpgate gate``
        (which adds each passing run). ``noise`` and ``mrr_noise`` are the case's declared
        run-to-run noise of NDR/PDR and of MRR from the thresholds file; they are recorded
        as ``regression_noise``/``regression_mrr_noise`` so an offline ``dpgate compare``
        applies the same allowance.

        | ${t}= | `Thresholds For` | testpmd-io | 64B |
        | `Throughput Should Not Regress` | ${result} | results/history | min_change=3% | noise=${t.noise} |
        fails with ``regression vs history: 64B-1c-testpmd-io-ndrpdr mrr_pps: regression: 0.301 Mpps vs
        0.336 Mpps (-10.4 %, 2 runs of history, allowance 5.2 % from history spread (2 runs))``.
        """
        from dpgate.regression.compare import verdicts_for

        suite, test = _current_test()
        rec = _store().get(f"{suite}.{test}") if test else None
        if not rec or "ndr_pps" not in rec.get("metrics", {}):
            raise ConfigError("Throughput Should Not Regress reads this test's result record: "
                              "call Find NDR And PDR first in the same test", path="Throughput Should Not Regress")
        change = parse_ratio(min_change, "min_change")
        declared: Dict[str, float] = {}
        for key, text in (("regression_noise", noise), ("regression_mrr_noise", mrr_noise)):
            if text not in (None, "", "None"):
                declared[key] = parse_ratio(text, key.replace("regression_", ""), upper_inclusive=True)
        if declared:
            record(metrics=declared)
            rec.setdefault("metrics", {}).update(declared)
        verdicts = verdicts_for(rec, history, change, declared.get("regression_noise"),
                                declared.get("regression_mrr_noise"))
        lines = [v.line() for v in verdicts]
        bad = [v for v in verdicts if v.verdict == "regression"]
        for v in verdicts:
            record(gates=[{"name": f"regression_{v.metric.split('_')[0]}", "passed": v.verdict != "regression",
                           "message": v.line(), "value": v.current, "threshold": v.baseline}])
        for line in lines:
            logger.info(line)
        if bad:
            raise Failure("regression vs history: " + "; ".join(v.line() for v in bad))
        return lines

    @keyword
    def cycles_per_packet_should_be_at_most(self, result: NdrPdrResult, ceiling: float) -> None:
        """Fail when CPP at NDR (core_hz x cores / NDR pps) exceeds ``ceiling``.

        | `Cycles Per Packet Should Be At Most` | ${result} | 12000 |
        fails with ``CPP 13500 > ceiling 12000 (+12.5 %)``.
        """
        value, limit = result.cpp_ndr, float(ceiling)
        ok = value <= limit
        msg = f"CPP {value:.0f} {'<=' if ok else '>'} ceiling {limit:.0f} ({_pct(value, limit)})"
        if not ok and _at_ceiling(result, result.ndr_pps):
            self._inconclusive("cpp_max", msg, value, limit, result)
        self._gate("cpp_max", ok, msg, value, limit)

    @keyword
    def ipc_should_be_at_least(self, result: NdrPdrResult, minimum: float) -> None:
        """Fail when IPC measured at NDR is below ``minimum``; unsupported hosts follow the policy.

        | `IPC Should Be At Least` | ${result} | 1.5 |
        """
        self._telemetry_gate(result, "ipc", float(minimum), at_least=True, label="IPC", fmt="{:.2f}")

    @keyword
    def instructions_per_packet_should_be_at_most(self, result: NdrPdrResult, maximum: float) -> None:
        """| `Instructions Per Packet Should Be At Most` | ${result} | 300 |"""
        self._telemetry_gate(result, "ipp", float(maximum), at_least=False, label="IPP", fmt="{:.0f}")

    @keyword
    def ddio_miss_rate_should_be_at_most(self, result: NdrPdrResult, event: str = "ItoM", max: str = "5%") -> None:
        """Fail when the DDIO (LLC) miss rate of a PCIe ``event`` measured at NDR exceeds ``max``.

        Events as pcm-pcie names them: ItoM (full-line writes), RFO (partial writes, up to
        Cascade Lake), PCIeRdCur or PCIRdCur (reads), ItoMCacheNear (Icelake and later), CRd, DRd.

        | `DDIO Miss Rate Should Be At Most` | ${result} | event=ItoM | max=5% |
        | `DDIO Miss Rate Should Be At Most` | ${result} | event=PCIeRdCur | max=1% |
        """
        from dpgate.telemetry.pcm import event_key

        key = f"ddio_miss_rate_{event_key(event)}"
        missing = None
        if key not in result.telemetry:
            ddio = {k[len("ddio_miss_rate_"):]: v for k, v in result.telemetry.items()
                    if k.startswith("ddio_miss_rate_") and not k.endswith("_pdr")}
            counted = sorted(k for k, v in ddio.items() if not isinstance(v, str))
            if counted:
                missing = f"not supported (pcm-pcie on this CPU counts no {event} event; it has {', '.join(counted)})"
            elif ddio:
                missing = next(iter(ddio.values()))
        self._telemetry_gate(result, key, parse_ratio(max, "max", upper_inclusive=True), at_least=False,
                             label=f"DDIO {event} miss rate", fmt=_fine_pct, missing=missing)

    @keyword
    def memory_bytes_per_packet_should_be_at_most(self, result: NdrPdrResult, maximum: float) -> None:
        """| `Memory Bytes Per Packet Should Be At Most` | ${result} | 256 |"""
        self._telemetry_gate(result, "mem_bytes_per_packet", float(maximum), at_least=False,
                             label="memory bytes/packet", fmt="{:.0f}")

    @keyword
    def tmam_retiring_should_be_at_least(self, result: NdrPdrResult, minimum: str) -> None:
        """| `TMAM Retiring Should Be At Least` | ${result} | 40% |"""
        self._telemetry_gate(result, "tmam_retiring", parse_ratio(minimum, "minimum", upper_inclusive=True),
                             at_least=True, label="TMAM Retiring", fmt="{:.1%}")

    @keyword(tags=["robot:continue-on-failure"])
    def check_gates(self, result: NdrPdrResult, thresholds: CaseThresholds) -> None:
        """Apply every threshold of a case; all failures are reported together.

        | ${t}= | `Thresholds For` | linux-ip4 | 64B |
        | `Check Gates` | ${result} | ${t} |
        """
        failures: List[str] = []
        skips: List[str] = []
        checks = [
            ("ndr_min", lambda v: self.throughput_should_be_at_least(result, parse_rate(v), "NDR")),
            ("pdr_min", lambda v: self.throughput_should_be_at_least(result, parse_rate(v), "PDR")),
            ("cpp_max", lambda v: self.cycles_per_packet_should_be_at_most(result, v)),
            ("ipc_min", lambda v: self.ipc_should_be_at_least(result, v)),
            ("ipp_max", lambda v: self.instructions_per_packet_should_be_at_most(result, v)),
            ("ddio_miss_max", lambda v: self.ddio_miss_rate_should_be_at_most(result, "ItoM", v)),
            ("mem_bytes_per_packet_max", lambda v: self.memory_bytes_per_packet_should_be_at_most(result, v)),
            ("tmam_retiring_min", lambda v: self.tmam_retiring_should_be_at_least(result, v)),
        ]
        applied = 0
        for key, check in checks:
            value = getattr(thresholds, key)
            if value is None:
                continue
            applied += 1
            try:
                check(value)
            except SkipExecution as err:
                skips.append(str(err))
            except AssertionError as err:
                failures.append(str(err))
        if applied == 0:
            logger.warn("no thresholds apply to this case: nothing was gated")
        if failures:
            raise Failure("; ".join(failures))
        if skips and len(skips) == applied:
            raise SkipExecution("; ".join(skips))
        for text in skips:
            # With the skip policy an unsupported telemetry gate is skipped alone: the test
            # keeps the verdict of the gates that could be checked.
            logger.warn(f"gate skipped: {text}")

    # -- helpers -------------------------------------------------------------------
    def _inconclusive(self, name: str, msg: str, value: Any, limit: Any, result: NdrPdrResult) -> None:
        """A failed floor/ceiling whose value sits at the generator's ceiling: the SUT kept up
        with everything the generator could send, so the testbed cannot tell whether the SUT
        meets the threshold. Skipped with that reason, never a SUT failure."""
        text = (f"{msg}, but at the generator's ceiling {format_pps(result.generator_max_pps)}: this testbed "
                "cannot show whether the SUT meets it (the SUT forwarded all the generator sent)")
        record(gates=[{"name": name, "passed": True, "skipped": True, "message": text, "value": value,
                       "threshold": limit}])
        raise SkipExecution(f"{name} inconclusive: {text}")

    def _gate(self, name: str, ok: bool, msg: str, value: Any, limit: Any) -> None:
        record(gates=[{"name": name, "passed": ok, "message": msg, "value": value, "threshold": limit}])
        if ok:
            logger.info(f"gate {name}: {msg}")
            return
        raise Failure(msg)

    def _telemetry_gate(self, result: NdrPdrResult, key: str, limit: float, at_least: bool,
                        label: str, fmt: Any, missing: Optional[str] = None) -> None:
        value = result.telemetry.get(key)
        if value is None:
            value = missing or "not supported (no telemetry captured for this test)"
        if isinstance(value, str):
            reason = value
            record(gates=[{"name": key, "passed": self.policy == "skip", "skipped": self.policy == "skip",
                           "message": f"{label} {reason}", "value": reason, "threshold": limit}])
            text = f"{label} gate: {reason} (telemetry_policy={self.policy})"
            if self.policy == "skip":
                raise SkipExecution(text)
            raise Failure(text)
        ok = value >= limit if at_least else value <= limit
        op = (">=" if ok else "<") if at_least else ("<=" if ok else ">")
        word = "floor" if at_least else "ceiling"
        show = fmt if callable(fmt) else fmt.format
        msg = f"{label} {show(value)} {op} {word} {show(limit)} ({_pct(value, limit)})"
        self._gate(key, ok, msg, value, limit)


def _at_ceiling(result: NdrPdrResult, value: float) -> bool:
    """``value`` (pps) is at the generator's ceiling (within 3 %, as ``limited_by`` uses)."""
    return bool(result.generator_max_pps) and value >= 0.97 * float(result.generator_max_pps)


def _fine_pct(ratio: float) -> str:
    """A ratio as a percentage that stays readable when tiny: 8.0%, 0.0086%, 0.0%.

    >>> _fine_pct(0.08), _fine_pct(8.6e-05), _fine_pct(0.0)
    ('8.0%', '0.0086%', '0.0%')
    """
    pct = ratio * 100
    return f"{pct:.1f}%" if pct == 0 or abs(pct) >= 0.1 else f"{pct:.2g}%"


def _pct(value: float, limit: float) -> str:
    if not limit:
        return "n/a"
    return f"{(value - limit) / limit * 100:+.1f} %"
