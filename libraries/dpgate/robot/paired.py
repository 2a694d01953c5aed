"""The paired check's keywords: measure cycles per packet against a baseline twin beside the
SUT (:class:`PairedMeasure`, part of ``EmbeddedTestbed``) and judge the change
(:class:`PairedGate`, part of ``Gates``). Statistics in :mod:`dpgate.telemetry.paired`, the
twin in :mod:`dpgate.testbeds.embedded.twin`.

Example (resources/embedded.resource does this with ``--variable PAIRED:True``)::

    ${result}=    Find NDR And PDR    64B
    ${paired}=    Measure Cycles Against Baseline    ${result}    pairs=8
    Cycles Should Not Rise Against Baseline    ${paired}    max_rise=5%
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Union

from robot.api import logger
from robot.api.deco import keyword

from dpgate.config.binaries import parse_binaries
from dpgate.config.units import frame_size_tag, parse_frame_size, parse_ratio
from dpgate.exec.hostcpu import cpu_model
from dpgate.model.errors import ConfigError, EnvironmentProblem, SutError
from dpgate.model.ndrpdr import NdrPdrResult
from dpgate.model.record import gate_entry
from dpgate.robot.args import count, positive
from dpgate.robot.base import _current_test, record
from dpgate.robot.gate_checks import GateChecks
from dpgate.telemetry.disturbance import DISTURBANCE_MAX
from dpgate.telemetry.paired import (
    MIN_PAIRS,
    SATURATION_OVER,
    PairedCpp,
    judge,
    loose_pass,
    paired_pairs,
    saturation_load,
    saturation_pairs,
    verdict,
)
from dpgate.telemetry.paired_notice import RISE_SEEN, rise_seen
from dpgate.testbeds.embedded.twin import BaselineTwin, measure_pairs
from dpgate.traffic.profiles import make_profile

#: Allowed rise of cpp_at_load against the baseline when the thresholds set none.
MAX_RISE = "5%"


class PairedMeasure:
    """Mixin of ``EmbeddedTestbed``: the baseline twin, brought up on first use, down with the testbed."""

    _twin: Optional[BaselineTwin] = None

    @keyword
    def measure_cycles_against_baseline(
        self,
        result: NdrPdrResult,
        pairs: int = 8,
        duration: float = 2.0,
        baseline_binary: str = "",
        disturbance_max: Optional[str] = None,
        max_rise: Optional[str] = MAX_RISE,
        more_pairs: Optional[int] = None,
    ) -> Union[PairedCpp, str]:
        """The SUT's cycles per packet against a baseline twin's, in ``pairs`` pairs of
        ``duration`` s trials at the load of the result's ``cpp_at_load``, alternating
        baseline and SUT (A B B A ...). The twin is the same NF with its own namespaces (the
        testbed's prefix + ``b``), ports and SUT process on the same cores, without the
        suite's injected faults; it comes up on first use and goes with `Tear Down Embedded
        Testbed`. ``baseline_binary`` (``dpdk-testpmd=/parent/app/dpdk-testpmd``, see
        ``dpgate.config.binaries``): the build the twin runs (a per-patch job: the parent
        commit's; records say ``baseline_binary``), else the installed one. While one side
        measures, the other's SUT is stopped if it busy-polls.
        Each trial's cycles are scaled to the reference core speed by the SUT kind's exponent
        (``dpgate.telemetry.paired.pair_cycles``; ``cpp_paired_speed_exponent``) when every
        trial read its core's speed; a rise that only the scaled figures show (as measured the
        change is not above 0: ``cpp_paired_change_unscaled``) is inconclusive. A polling SUT
        whose frames also cost the kernel work on its core (testpmd, OVS-DPDK, OVS AF_XDP here)
        is judged per cycle of that work in the same trial instead (``cpp_paired_kernel_cpp``;
        ``dpgate.telemetry.kernel_ref``), its busy cycles judged beside it
        (``cpp_paired_busy_change``): either FAILs the gate. Pairs the host
        ran across a move of the cores (and a polling SUT's pairs whose trials' core speeds lie
        more than 15 % apart: ``dpgate.telemetry.placement.same_speed``; both measured again,
        up to ``pairs`` more), and, while at least three others are left, pairs with a
        trial others took more than ``disturbance_max`` (default 10 %) of a core in, are left
        out (``cpp_paired_dropped``; ``dpgate.telemetry.paired.judged_pairs``).
        With ``max_rise`` (the gate's allowance, default 5 %), a verdict the pairs leave undecided (the
        rise above it but its 99 % interval reaching 0, too few clean pairs, ...: what
        `Cycles Should Not Rise Against Baseline` would hold inconclusive), and a PASS whose 99 %
        interval reaches above twice the allowance (``dpgate.telemetry.paired.loose_pass``; beside
        a neighbour, if still so, inconclusive after), is measured again
        once: ``more_pairs`` more pairs (default: ``pairs``; 0: never), judged with the first
        (``cpp_paired_rounds`` 2, ``cpp_paired_first_change``: the first pairs' change).
        Records ``cpp_paired_*`` (change, 99 % CI, pairs, both medians, load, disturbance).
        A SUT that busy-polls and reports no busy cycles (l3fwd, OVS on af_packet ports: no
        ``cpp_at_load``) is compared at saturation instead: pairs at 90 % of the generator
        ceiling (at least 1.5 x what it forwarded), each trial's figure its threads' CPU time
        per forwarded frame (``cpp_paired_saturated``; ``dpgate.telemetry.paired.SATURATED_FIELD``),
        not scaled to a core speed, in twice the pairs (and more pairs) asked for (OVS on
        af_packet ports: four times, its driver's ``saturation_pairs``; at the ``cpp_at_load``
        load a driver's ``paired_pairs`` times, OVS on AF_XDP ports 3), judged on the
        middle 60 % of their ratios (``cpp_paired_trim`` 0.2,
        ``dpgate.telemetry.paired.trimmed``): that figure scatters more, with heavy tails; a
        rise there FAILs only when its pairs at one core speed rose beyond ``max_rise`` too
        (``cpp_paired_one_speed_change``; ``dpgate.telemetry.paired.at_one_speed``).
        Returns the :class:`PairedCpp`, or why it was not measured (warned too): no
        ``cpp_at_load`` load, or a twin that would not come up (the SUT under test failing
        during the trials fails the case as in any trial).

        | ${paired}= | `Measure Cycles Against Baseline` | ${result} | pairs=8 | max_rise=3% |
        """
        n = count(pairs, "pairs")
        binaries = parse_binaries(baseline_binary, "baseline_binary")
        if n < MIN_PAIRS:
            raise ConfigError(f"at least {MIN_PAIRS} pairs make a verdict, got {n}", path="pairs")
        length = positive(str(duration), "duration") or 2.0
        rise = parse_ratio(
            max_rise if max_rise not in (None, "", "None") else MAX_RISE, "cpp_paired_max_rise"
        )
        more = n if more_pairs is None else more_pairs
        if isinstance(more, bool) or not isinstance(more, int) or more < 0:
            raise ConfigError(f"must be a whole number >= 0, got {more_pairs!r}", path="more_pairs")
        dmax = _dmax(disturbance_max)
        gen = self._gen(result.frame_size)  # type: ignore[attr-defined]
        polling = bool(getattr(gen.sut, "polls", False))
        load, saturated = result.telemetry.get("cpp_at_load_pps"), False
        if not load and polling:  # no busy-cycle report (l3fwd, OVS on af_packet): at saturation
            forwarded = max([result.pdr_pps, *result.mrr_samples])
            ceiling = result.generator_max_pps or gen.max_pps or 0.0
            load, saturated = saturation_load(ceiling, forwarded), True
            if not load:
                return _not_measured(
                    f"a SUT without a busy-cycle report is compared at saturation, but the generator "
                    f"ceiling ({ceiling / 1e3:.1f} kpps) is not {SATURATION_OVER:g} x "
                    f"what it forwarded ({forwarded / 1e3:.1f} kpps)"
                )
        if not load:
            return _not_measured(
                "this case has no cpp_at_load load (no load below NDR and the generator ceiling)"
            )
        # pairs per pair asked for, by the SUT driver: OVS on af_packet 4 (saturated), on AF_XDP 3
        k = saturation_pairs(gen.sut) if saturated else paired_pairs(gen.sut)
        n, more = k * n, k * more
        try:
            twin = self._baseline_twin(binaries)
        except (SutError, EnvironmentProblem) as err:
            return _not_measured(f"the baseline twin did not come up: {err}")
        size = parse_frame_size(result.frame_size)
        p = twin.session.profile
        base = twin.generator(frame_size_tag(size), make_profile(p.kind, size, p.flows, p.bidirectional))
        share_speed_reference(gen, base)
        alike = polling and not saturated  # a pair across a change of core speed is measured again
        got = measure_pairs(gen, base, float(load), n, length, polling, alike)
        model = cpu_model()  # how cycles follow the core's speed on it (speed_exponent)
        est = _judge(got, polling, float(load), dmax, saturated, model)
        extra: Dict[str, Any] = {}
        first = _undecided(est, rise, dmax)
        if more and first:
            # undecided on the first pairs: measure once more, judge all pairs together
            logger.info(f"paired check undecided on {n} pairs ({first}): measuring {more} more")
            extra = {"cpp_paired_rounds": 2}
            if isinstance(est, PairedCpp):
                extra["cpp_paired_first_change"] = round(est.change, 4)
            got += measure_pairs(gen, base, float(load), more, length, polling, alike)
            est = _judge(got, polling, float(load), dmax, saturated, model)
        if isinstance(est, str):
            return _not_measured(est)
        base_binary = getattr(twin.session.sut, "binary", None)
        if base_binary:
            extra["baseline_binary"] = base_binary
        record(metrics=dict(est.metrics(), **extra))
        logger.info(est.describe())
        return est

    def _baseline_twin(self, binaries: Dict[str, str]) -> BaselineTwin:
        if self._twin is not None and self._twin.session.binaries != binaries:
            self._baseline_twin_down()  # another build asked for: a new twin
        if self._twin is None:
            s: Any = self._s  # type: ignore[attr-defined]
            twin = BaselineTwin(
                self.topology_path,  # type: ignore[attr-defined]
                self.nf,  # type: ignore[attr-defined]
                s.topology.prefix,
                generator=self.generator,  # type: ignore[attr-defined]
                on_trial=self._on_trial,  # type: ignore[attr-defined]
                binaries=binaries,
            )
            twin.up()  # EmbeddedSession.up removes what it made when it fails
            self._twin = twin
            logger.info(f"baseline twin of {self.nf} up in namespaces {twin.session.topology.prefix}*")  # type: ignore[attr-defined]
        return self._twin

    def _baseline_twin_down(self) -> None:
        twin, self._twin = self._twin, None
        if twin is not None:
            twin.down()


def share_speed_reference(gen: Any, base: Any) -> None:
    """Judge the twin's trials slow against the full speed the SUT's are judged against (the
    case's ``core_speed``, else what the SUT side's probe has seen): a trial in a slow host
    phase is measured again on either side alike. A new twin's generator had no reference for
    its first ten readings: in a slow phase of the Xeon host (gk31, 2026-11-30) the SUT side's
    trials were measured again (5 in a healthy testpmd-mac run's paired phase), the twin's at
    the same speeds not, and each pair's SUT trial ran seconds after its baseline one."""
    speeds = getattr(gen, "speeds", None)
    ref = getattr(gen, "core_speed_ref", None) or (speeds.probe.reference() if speeds else None)
    if ref:
        base.core_speed_ref = ref


def _judge(
    got: Any, polling: bool, load: float, dmax: float, saturated: bool = False, model: Optional[str] = None
) -> Union[PairedCpp, str]:
    """:func:`judge` of the measured pairs, or why there is no estimate."""
    try:
        return judge(got, polling, load, dmax, saturated, model)
    except ValueError as err:
        return f"{err} with cycles per packet"


def _undecided(est: Union[PairedCpp, str], rise: float, dmax: float) -> str:
    """Why these pairs leave the paired gate at allowance ``rise`` unsure ("": they do not): it
    would hold them inconclusive (a loose PASS beside a neighbour among them), or pass them on
    an interval reaching far above the allowance (:func:`dpgate.telemetry.paired.loose_pass`).
    Twice the pairs narrow a 99 % interval about 1.7 x (sqrt 2 and Student's t at 15 degrees of
    freedom against 7; beside the hog in gk118 1.85 and 1.95 x): beside a neighbour a PASS the
    second round leaves loose is inconclusive, one it brings within twice the allowance stands."""
    if isinstance(est, str):
        return est
    status, text = verdict(est, rise, dmax)
    if status == "SKIP":
        return text
    return loose_pass(est, rise) if status == "PASS" else ""


def _dmax(value: Optional[str]) -> float:
    """The ``disturbance_max`` argument of both keywords, :data:`DISTURBANCE_MAX` when not given."""
    if value in (None, "", "None"):
        return DISTURBANCE_MAX
    return parse_ratio(value, "disturbance_max", upper_inclusive=True)


def _not_measured(reason: str) -> str:
    text = f"paired check not measured: {reason}"
    logger.warn(text)
    return text


class PairedGate(GateChecks):
    """Mixin of ``Gates``: the paired check's verdict."""

    _regressed: Any

    @keyword
    def cycles_should_not_rise_against_baseline(
        self,
        paired: Union[PairedCpp, str, None],
        max_rise: Optional[str] = MAX_RISE,
        disturbance_max: Optional[str] = None,
    ) -> None:
        """Fail when the SUT's cycles per packet rose more than ``max_rise`` against its
        baseline twin and the pairs agree it rose (99 % interval above 0), on trials no
        neighbour took more than ``disturbance_max`` (default 10 %) of a core in. A rise the
        pairs do not agree on, or measured beside a neighbour, is inconclusive: recorded as a
        skipped gate with the figure and warned about, the case keeping its other verdicts; so
        is a PASS beside a neighbour whose 99 % interval reaches above twice ``max_rise`` (it
        could not have told that step from none). A PASS whose pairs agree it rose all the
        same (within ``max_rise``, every FAIL condition but the allowance met) says so in its
        verdict line and a warning, and records ``cpp_paired_rise_seen`` (True on a FAIL too;
        ``dpgate.telemetry.paired_notice``).

        | `Cycles Should Not Rise Against Baseline` | ${paired} | max_rise=5% |
        fails with ``cpp_at_load +10.4 % against its baseline (8 pairs ..., 99 % CI +8.1 to +12.8 %) > allowed +5.0 %``.
        """
        rise = parse_ratio(
            max_rise if max_rise not in (None, "", "None") else MAX_RISE, "cpp_paired_max_rise"
        )
        dmax = _dmax(disturbance_max)
        if not isinstance(paired, PairedCpp):  # why it was not measured
            text = paired or "paired check not measured"
            record(gates=[gate_entry("cpp_paired", True, text, None, rise, skipped=True)])
            return
        status, text = verdict(paired, rise, dmax)
        value = paired.change
        if status == "SKIP":
            record(gates=[gate_entry("cpp_paired", True, text, value, rise, skipped=True)])
            logger.warn(text)
            return
        if status == "FAIL":
            self._regressed = _current_test()  # Check Gates keeps this FAIL over inconclusive gates
        seen = rise_seen(paired, rise, dmax) if status == "PASS" else ""
        record(metrics={RISE_SEEN: status == "FAIL" or bool(seen)})
        if seen:  # a PASS all the same: said in the verdict line, the summary and the log
            text = f"{text}; {seen}"
            logger.warn(f"paired check: {text}")
        self._gate("cpp_paired", status == "PASS", text, value, rise)  # raises Failure on FAIL
