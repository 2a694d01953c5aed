"""The embedded testbed's keyword library (``Gates`` lives in :mod:`dpgate.robot.gates`).

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

from typing import Any, Dict, Optional, Tuple

from robot.api import Failure, logger
from robot.api.deco import keyword, library

from dpgate.config.binaries import parse_binaries
from dpgate.config.units import Rate, format_pps, frame_size_tag, parse_frame_size, parse_ratio
from dpgate.model.errors import ConfigError
from dpgate.model.ndrpdr import NdrPdrResult
from dpgate.robot.args import absolute_rate, count, positive
from dpgate.robot.base import SearchSetting, TestbedKeywords, rate_arg
from dpgate.robot.paired import PairedMeasure
from dpgate.search.bounded import SearchRun
from dpgate.telemetry.collector import TelemetryCollector, capture_during_trial
from dpgate.telemetry.cppload import SpacedCppTrials, measure_cpp_at_load
from dpgate.telemetry.disturbance import CPP_TRIALS, case_signal
from dpgate.testbeds.embedded.handicap import CpuSteal
from dpgate.testbeds.embedded.session import EmbeddedSession
from dpgate.testbeds.embedded.suts.cost import cost_metrics
from dpgate.traffic.profiles import make_profile


@library(scope="SUITE", converters={Rate: rate_arg}, doc_format="ROBOT")
class EmbeddedTestbed(TestbedKeywords, PairedMeasure):
    """Embedded testbed keywords: namespaces, veth links, a real SUT and a generator (dpgen or
    tcpreplay: ``generator=auto`` takes dpgen when it is built, see ``dpgate.traffic.choice``).

    Import: ``Library  dpgate.robotlib.EmbeddedTestbed  topologies/embedded.yaml  prefix=dpg1-``
    """

    def __init__(
        self,
        topology: str = "topologies/embedded.yaml",
        prefix: Optional[str] = None,
        telemetry: bool = True,
        generator: str = "auto",
    ):
        self.generator = generator or "auto"
        self.topology_path = topology
        self.prefix = prefix or None
        self.telemetry = telemetry
        self._collector: Optional[TelemetryCollector] = None
        self._steal: Optional[CpuSteal] = None
        self.session: Optional[EmbeddedSession] = None
        self.generators: Dict[str, Any] = {}
        self.nf: Optional[str] = None

    # -- lifecycle -------------------------------------------------------------
    @keyword
    def bring_up_embedded_testbed(
        self,
        nf: str,
        *frame_sizes: str,
        prefix: Optional[str] = None,
        sut_cpu_steal: str = "0",
        inject_cost: str = "0",
        sut_binary: str = "",
    ) -> float:
        """Create namespaces and veths, calibrate the generator for each frame size, start SUT ``nf``.

        Returns the calibrated generator ceiling (pps) of the first frame size. ``prefix``
        overrides the namespace prefix (e.g. the one a pabot pool member hands out).
        ``sut_cpu_steal`` (fault injection, e.g. ``10%``) takes that share of the SUT cores
        away for the whole suite (see ``dpgate.testbeds.embedded.handicap``), to show that the regression gate
        catches a slower SUT; every record of the suite then says so (``injected_sut_cpu_steal``).

        | `Bring Up Embedded Testbed` | linux-ip4 | 64B | IMIX | 1518B |
        | `Bring Up Embedded Testbed` | linux-ip4 | 64B | prefix=dpg2- |
        | `Bring Up Embedded Testbed` | testpmd-io | 64B | sut_cpu_steal=10% |
        | `Bring Up Embedded Testbed` | linux-ip4 | 64B | inject_cost=10% |

        ``inject_cost`` (fault injection, e.g. ``10%``) makes the SUT do that much more work per
        packet (``dpgate.testbeds.embedded.suts.cost``); records say ``injected_cost``.
        ``sut_binary`` (``dpdk-testpmd=/build/app/dpdk-testpmd``, see ``dpgate.config.binaries``):
        the build a SUT running that program runs; records say ``sut_binary``.
        """
        steal = parse_ratio(sut_cpu_steal or "0", "sut_cpu_steal")
        cost = parse_ratio(inject_cost or "0", "inject_cost")
        self._cost: Optional[Dict[str, Any]] = None
        if prefix:
            self.prefix = prefix

        sizes = [parse_frame_size(s) for s in (frame_sizes or ("64B",))]
        self.nf = nf
        self.session = EmbeddedSession(
            self.topology_path,
            nf,
            frame_size=sizes[0],
            prefix=self.prefix,
            calibrate=False,
            generator=self.generator,
            binaries=parse_binaries(sut_binary, "sut_binary"),
        )
        s = self._s
        s.testbed.up()
        try:
            for size in sizes:
                gen = s.new_generator(_profile_for(s, size), on_trial=self._on_trial)
                ceiling = gen.calibrate()
                logger.info(f"generator ceiling at {frame_size_tag(size)}: {format_pps(ceiling)}")
                self.generators[frame_size_tag(size)] = gen
            self._start_sut()
            if steal > 0:
                self._steal = CpuSteal(s.testbed.sut_cpus, steal).start()
                logger.warn(
                    f"fault injection: {steal:.0%} of SUT CPU(s) {s.testbed.sut_cpus} taken by a "
                    "real-time stealer for this suite (sut_cpu_steal)"
                )
                for gen in self.generators.values():
                    # the stealer is part of the SUT under test, not a neighbour
                    gen.extra_sut_pids = list(self._steal.pids)
            if cost > 0:
                from dpgate.testbeds.embedded.suts.cost import inject_cost as inject

                self._cost = inject(s.sut, cost * 100)
                logger.warn(
                    f"fault injection: +{cost:.0%} work per packet in SUT {nf} for this suite (inject_cost): {self._cost}"
                )
        except BaseException:
            self.tear_down_embedded_testbed()
            raise
        return self.generators[frame_size_tag(sizes[0])].max_pps

    def _start_sut(self) -> None:
        sut = self._s.start_sut(next(iter(self.generators.values())).profile.effective_flows)
        for gen in self.generators.values():
            gen.sut = sut
        logger.info(f"SUT {sut.name} started: {sut.version()}")

    @keyword
    def tear_down_embedded_testbed(self) -> None:
        """Stop the SUT and remove every namespace, veth and process of this testbed (and its baseline twin)."""
        steal, self._steal = self._steal, None
        try:
            self._baseline_twin_down()
        finally:
            if steal is not None:
                steal.stop()
            gens, self.generators = self.generators, {}
            for gen in gens.values():
                gen.close()
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
        return self._acquire_from_pool(pool, "prefix", "namespace prefix")

    @keyword
    def release_embedded_testbed_to_pool(self) -> None:
        """Give the testbed acquired by `Acquire Embedded Testbed From Pool` back to the pool."""
        self._release_to_pool()

    def _sut_version(self) -> str:
        return self.session.sut.version() if self.session and self.session.sut else "unknown"

    @property
    def _s(self) -> EmbeddedSession:
        if self.session is None:
            raise Failure("embedded testbed is not up: call 'Bring Up Embedded Testbed' in Suite Setup")
        return self.session

    def _gen(self, frame_size: str):
        if self.session is None:
            raise Failure("embedded testbed is not up: call 'Bring Up Embedded Testbed' in Suite Setup")
        tag = frame_size_tag(parse_frame_size(frame_size))
        if tag not in self.generators:
            raise ConfigError(
                f"frame size {tag} was not prepared; add it to 'Bring Up Embedded Testbed' "
                f"(prepared: {', '.join(self.generators)})",
                path="frame_size",
            )
        return self.generators[tag]

    def _telemetry_at(self, gen, load: float, suffix: str = "") -> Dict[str, Any]:
        """perf/pcm on the SUT cores during a trial at ``load`` (the NDR; the PDR with keys
        suffixed ``_pdr``, as CSIT captures both): ``telemetry.collector.capture_during_trial``."""
        if self._collector is None:
            self._collector = TelemetryCollector(self._s.testbed.sut_cpus)
        return capture_during_trial(self._collector, gen.measure, load, suffix)

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
    def find_ndr_and_pdr(
        self,
        frame_size: str = "64B",
        profile: str = "per-commit",
        min_rate: Rate = Rate(pps=9001.0),
        max_rate: Rate = Rate(percent=100.0),
        ndr_loss: str = "0",
        pdr_loss: str = "0.5%",
        time_limit: float = 0,
        mrr_trials: int = 0,
        mrr_duration: float = 1.0,
        cpp_at_load: bool = True,
        cpp_load: Optional[str] = None,
        core_speed: Optional[str] = None,
        cpp_trials: int = CPP_TRIALS,
        **overrides: str,
    ) -> NdrPdrResult:
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
        settings (e.g. ``trial_duration=2``). ``cpp_load`` (e.g. ``100kpps``, the case's
        threshold of that name) fixes the load of ``cpp_at_load`` across runs; unset or above
        this run's NDR or ceiling, it is 50 % of the smaller of the two. ``core_speed`` (the
        case's threshold: full speed of the SUT core, M it/s) marks slower cpp_at_load trials
        as a slow phase of the host, measured past (``dpgate.telemetry.disturbance``), and is
        what the probe between all trials (``dpgate.exec.speedprobe``) counts as a core lost.
        ``cpp_trials`` (default 5) is how many 2 s trials cpp_at_load plans; its median rests
        on at least 3 (60 % when more are planned) of them at full speed: on the 2-core VM one
        such trial reads within 4-13 % (sd); more trials narrow a run's own scatter, but not the
        host's drift between runs minutes apart, which is most of the run-to-run spread the
        regression check allows for there (15 planned: docs/signal-log.md, gk70). With ``cpp_load``
        set they are spaced between the search's trials (``dpgate.telemetry.cppload``).

        | ${r}= | `Find NDR And PDR` | 64B | profile=per-commit |
        | ${r}= | `Find NDR And PDR` | IMIX | mrr_trials=3 |
        """
        speed = positive(core_speed, "core_speed")
        if speed:  # also what the speed probe between trials judges slow host phases by
            self._gen(frame_size).core_speed_ref = speed
        return self._find_ndr_and_pdr(
            frame_size,
            profile,
            min_rate,
            max_rate,
            ndr_loss,
            pdr_loss,
            time_limit,
            overrides,
            mrr_trials=mrr_trials,
            mrr_duration=mrr_duration,
            cpp_at_load=cpp_at_load,
            cpp_load=absolute_rate(cpp_load, "cpp_load"),
            core_speed=speed,
            cpp_trials=count(cpp_trials, "cpp_trials"),
        )

    # -- the hooks of the shared Find NDR And PDR flow (dpgate.robot.base) ------------------
    def _search_generator(self, frame_size: str):
        return self._gen(frame_size)

    def _search_measure(self, gen):
        return gen.measure

    def _search_alive(self, gen) -> None:
        gen.sut.check_alive()

    def _search_cpu_freq(self) -> Tuple[float, str]:
        return self._s.cpu_freq()

    def _before_search(self, gen, measure, **kw: Any) -> Dict[str, Any]:
        """cpp_at_load trials spaced between the search's when their load is fixed: each in
        another phase of the host (``dpgate.telemetry.cppload``)."""
        if not kw.get("cpp_at_load", True):
            return {}
        _full_speed_ref(gen, kw.get("core_speed"))
        polling, n = bool(getattr(gen.sut, "polls", False)), kw.get("cpp_trials", CPP_TRIALS)
        spaced = SpacedCppTrials(gen, gen.max_pps, kw.get("cpp_load"), polling, n)
        return {"measure": spaced.wrap(measure), "paused": lambda: spaced.spent_s, "cpp_spaced": spaced}

    def _after_search(
        self,
        gen,
        run: SearchRun,
        before: Optional[Dict[str, Any]] = None,
        mrr_trials: int = 0,
        mrr_duration: float = 1.0,
        cpp_at_load: bool = True,
        cpp_load: Optional[float] = None,
        core_speed: Optional[float] = None,
        cpp_trials: int = CPP_TRIALS,
        **unknown: Any,
    ) -> Dict[str, Any]:
        """MRR trials at the generator ceiling, then the SUT's cycles per packet at a fixed load."""
        if unknown:
            raise TypeError(f"unknown options after the search: {sorted(unknown)}")
        mrr_runs = [gen.measure(gen.max_pps, float(mrr_duration)) for _ in range(int(mrr_trials))]
        _full_speed_ref(gen, core_speed)
        spaced = (before or {}).get("cpp_spaced")
        cpp, cpp_load, cpp_runs = (
            measure_cpp_at_load(
                gen,
                gen.max_pps,
                run.ndr,
                polling=bool(getattr(gen.sut, "polls", False)),
                fixed_pps=cpp_load,
                trials=cpp_trials,
                early=spaced.early if spaced else (None, ()),
            )
            if cpp_at_load
            else (None, None, [])
        )
        return {
            "mrr_runs": mrr_runs,
            "mrr": tuple(t.rx_rate_pps for t in mrr_runs),
            "cpp": (cpp, cpp_load, cpp_runs),
            "core_speed_ref": getattr(gen, "core_speed_best", None),
        }

    def _search_telemetry(self, run: SearchRun, busy_cpp, after: Dict[str, Any]) -> Dict[str, Any]:
        telemetry: Dict[str, Any] = {"cpp_busy": round(busy_cpp, 1)} if busy_cpp else {}
        telemetry["search_complete"] = run.complete
        search_trials = [t[-1] if isinstance(t, tuple) else t for t in getattr(run.res, "trials", ())]
        bounds = [run.ndr, run.pdr, getattr(run.res, "ndr_upper", None), getattr(run.res, "pdr_upper", None)]
        cpp, cpp_load, cpp_runs = after["cpp"]
        facts = self._s.facts()  # the regression check keeps to this CPU model, its exponent too
        kw: Dict[str, Any] = dict(
            speed_ref=after.get("core_speed_ref"),
            polling=bool(getattr(self._s.sut, "polls", False)),
            model=facts.get("host_cpu_model"),
        )
        telemetry.update(case_signal(search_trials, bounds, after["mrr_runs"], cpp_runs, cpp, cpp_load, **kw))
        return {**telemetry, **facts}

    def _search_setting(self) -> SearchSetting:
        return SearchSetting(
            cores=len(self._s.testbed.sut_cpus),
            testbed=self._s.topology.name,
            prefix=self._s.topology.prefix,
            ceiling_note="generator ceiling {hi}: the SUT may be faster than this testbed can show",
        )

    def _search_record(self, gen, run: SearchRun, out: NdrPdrResult, after: Dict[str, Any]):
        metrics = out.metrics()  # with the session's facts: tg, sut_binary, host_cpu_model
        if self._steal is not None:
            metrics["injected_sut_cpu_steal"] = self._steal.share
        if cost_info := getattr(self, "_cost", None):
            metrics.update(cost_metrics(cost_info))  # the percentage, loads, calibration
        mrr = after["mrr"]
        return metrics, dict(
            latency=None,
            samples={"mrr_pps": list(mrr)} if mrr else {},
            latency_note="not measured: the embedded generators (dpgen, tcpreplay) send no timestamped latency "
            "streams; lab runs with TRex report latency",
        )


def _full_speed_ref(gen, core_speed: Optional[float]) -> None:
    """The machine class's full speed (the case's ``core_speed``) as the reference for slow
    phases of the cpp_at_load trials, unless a faster one was seen."""
    if core_speed:
        gen.core_speed_best = max(float(core_speed), getattr(gen, "core_speed_best", None) or 0.0)


def _profile_for(session, size):
    p = session.profile
    return make_profile(p.kind, size, p.flows, p.bidirectional)
