"""``Gates``: the threshold assertions, with failures that read like
``NDR 11.2 Mpps < floor 12.0 Mpps (-6.7 %)``, and the threshold lookup.

The recording and verdict helpers live in :mod:`dpgate.robot.gate_checks`."""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Tuple

from robot.api import Failure, SkipExecution, logger
from robot.api.deco import keyword, library

from dpgate.config.machineclass import parse_machine_class, resolve_thresholds
from dpgate.config.thresholds import CaseThresholds, ThresholdFile
from dpgate.config.units import Rate, format_pps, parse_hours, parse_rate, parse_ratio
from dpgate.model.errors import ConfigError
from dpgate.model.ndrpdr import NdrPdrResult
from dpgate.model.record import F, gate_entry
from dpgate.regression.compare import held_reason, verdicts_for
from dpgate.robot.base import _current_test, rate_arg, record
from dpgate.robot.gate_checks import _at_ceiling, _fine_pct, _pct
from dpgate.robot.paired import PairedGate
from dpgate.telemetry.disturbance import DISTURBANCE_MAX
from dpgate.telemetry.pcm import event_key

TELEMETRY_POLICIES = ("skip", "fail")


@library(scope="GLOBAL", converters={Rate: rate_arg}, doc_format="ROBOT")
class Gates(PairedGate):
    """Threshold assertions with readable numbers, and threshold lookup.

    Import: ``Library  dpgate.robotlib.Gates  variables/embedded.yaml  telemetry_policy=skip``

    ``telemetry_policy`` says what an IPC/DDIO/TMAM gate does on a host without counters:
    ``skip`` the test or ``fail`` it, with the reason either way. ``machine_class`` (``auto``,
    ``base``, a core speed in M it/s or a class's file name): which of the file's
    ``machine_classes`` applies (``dpgate.config.machineclass``); ``auto`` probes the cores at import, before the testbed
    is up, and the record's ``thresholds`` names the file whose rows the case used,
    ``thresholds_choice`` why (the speed it was picked by).
    """

    def __init__(
        self, thresholds: Optional[str] = None, telemetry_policy: str = "skip", machine_class: str = "auto"
    ):
        if telemetry_policy not in TELEMETRY_POLICIES:
            raise ConfigError(
                f"telemetry_policy must be one of {', '.join(TELEMETRY_POLICIES)}, got {telemetry_policy!r}",
                path="Gates.telemetry_policy",
            )
        self.thresholds_path = thresholds
        self.policy = telemetry_policy
        self._file: Optional[ThresholdFile] = None
        #: which file's rows apply and why (machine class, ``dpgate.config.machineclass``)
        self.thresholds_choice = ""
        self._load_error: Optional[ConfigError] = None
        if thresholds:  # now, before a testbed is up: the class probe times the bare cores
            try:
                self._file, self.thresholds_choice = resolve_thresholds(thresholds, machine_class)
                if parse_machine_class(machine_class) is None:  # else dpgate gate has said it
                    logger.console(f"thresholds: {self.thresholds_choice}")
            except ConfigError as err:  # reported by the first keyword that needs them
                self._load_error = err
        #: largest foreign core share a failing verdict may rest on (set per case by Check Gates)
        self._dmax: Optional[float] = DISTURBANCE_MAX
        #: the test (suite, name) whose regression check failed on clean measurements: its
        #: Check Gates must not turn the case into a SKIP when every fixed gate is inconclusive
        self._regressed: Optional[Tuple[str, str]] = None

    @keyword
    def thresholds_for(self, nf: str, frame_size: str, cores: Optional[str] = None) -> CaseThresholds:
        """Thresholds of one case from the thresholds file given at import; ``cores`` (a core
        tag like ``2T1C``, lab cases) also applies the file's ``<size>-<tag>`` entries.

        | ${t}= | `Thresholds For` | linux-ip4 | 64B |
        | ${t}= | `Thresholds For` | vpp-l2patch | 64B | cores=2T1C |
        """
        if self._load_error is not None:
            raise self._load_error
        if self._file is None:
            raise ConfigError("no thresholds file: import Gates with the path of variables/<testbed>.yaml")
        chosen = {"thresholds_choice": self.thresholds_choice} if self.thresholds_choice else {}
        record(metrics={"thresholds": os.path.basename(self._file.source), **chosen})
        return self._file.lookup(nf, frame_size, cores or None)

    @keyword
    def throughput_should_be_at_least(self, result: NdrPdrResult, floor: Rate, goal: str = "NDR") -> None:
        """Fail when the NDR (or PDR) is below ``floor``.

        | `Throughput Should Be At Least` | ${result} | 0.25 Mpps | goal=NDR |
        fails with ``NDR 0.212 Mpps < floor 0.250 Mpps (-15.2 %)``.
        """
        goal = goal.upper()
        if goal not in ("NDR", "PDR"):
            raise ConfigError(
                f"goal must be NDR or PDR, got {goal!r}", path="Throughput Should Be At Least.goal"
            )
        value = result.ndr_pps if goal == "NDR" else result.pdr_pps
        limit = floor.resolve(result.generator_max_pps)
        ok = value >= limit
        msg = f"{goal} {format_pps(value)} {'>=' if ok else '<'} floor {format_pps(limit)} ({_pct(value, limit)})"
        if not ok and _at_ceiling(result, value):
            self._inconclusive(f"{goal.lower()}_min", msg, value, limit, result)
        if not ok:
            self._if_disturbed(f"{goal.lower()}_min", msg, value, limit, result, kind="rate", fmt=format_pps)
        self._gate(f"{goal.lower()}_min", ok, msg, value, limit)

    @keyword
    def throughput_should_not_regress(
        self,
        result: NdrPdrResult,
        history: str,
        min_change: str = "3%",
        noise: Optional[str] = None,
        mrr_noise: Optional[str] = None,
        cpp_noise: Optional[str] = None,
        cpp_scaled_noise: Optional[str] = None,
        cpp_kernel_noise: Optional[str] = None,
        history_span: Optional[str] = None,
    ) -> List[str]:
        """Compare this test's NDR, PDR and MRR with the history of the same test on the same
        testbed (``dpgate compare`` rules: jumpavg plus an allowance of at least ``min_change``
        and the case's run-to-run ``noise``); fail on a regression. Returns the verdict lines.

        The history is a directory written by ``dpgate history add`` or ``dpgate gate``
        (which adds each passing run). ``noise`` and ``mrr_noise`` are the case's declared
        run-to-run noise of NDR/PDR and of MRR from the thresholds file; they are recorded
        as ``regression_noise``/``regression_mrr_noise`` so an offline ``dpgate compare``
        applies the same allowance; ``cpp_noise``, ``cpp_scaled_noise`` and ``cpp_kernel_noise``
        are those of ``cpp_at_load``, ``cpp_at_load_scaled`` and a polling SUT's
        ``cpp_at_load_per_kernel`` (gate ``regression_cpp_kernel``). Each declared noise stays
        its allowance's floor until the history's runs span ``history_span`` (default 24h,
        recorded as ``regression_history_span_h``): runs back to back see one hour's scatter.

        | ${t}= | `Thresholds For` | testpmd-io | 64B |
        | `Throughput Should Not Regress` | ${result} | results/history | min_change=3% | noise=${t.noise} |
        fails with ``regression vs history: 64B-1c-testpmd-io-ndrpdr mrr_pps: regression: 0.301 Mpps vs
        0.336 Mpps (-10.4 %, 2 runs of history, allowance 5.2 % from history spread (2 runs))``.
        """

        suite, test = _current_test()
        if not test:
            raise ConfigError(
                "Throughput Should Not Regress runs in a test: the test's name keys its history",
                path="Throughput Should Not Regress",
            )
        change = parse_ratio(min_change, "min_change")
        declared: Dict[str, float] = {}
        for key, text in (
            ("regression_noise", noise),
            ("regression_mrr_noise", mrr_noise),
            ("regression_cpp_noise", cpp_noise),
            ("regression_cpp_scaled_noise", cpp_scaled_noise),
            ("regression_cpp_kernel_noise", cpp_kernel_noise),
        ):
            if text not in (None, "", "None"):
                declared[key] = parse_ratio(text, key.replace("regression_", ""), upper_inclusive=True)
        if history_span and history_span != "None":
            declared["regression_history_span_h"] = parse_hours(history_span, "history_span")
        if declared:
            record(metrics=declared)
        rec = {
            F.NAME: test,
            F.LONGNAME: f"{suite}.{test}",
            F.TESTBED: result.testbed,
            F.METRICS: {**result.metrics(), **declared},
            F.SAMPLES: {"mrr_pps": list(result.mrr_samples)} if result.mrr_samples else {},
        }
        verdicts = verdicts_for(
            rec, history, change, declared.get("regression_noise"), declared.get("regression_mrr_noise")
        )  # the other declared values and the span are in the record's metrics
        lines = [v.line() for v in verdicts]
        why = {
            v.metric: held_reason(result.telemetry, v, self._dmax)
            for v in verdicts
            if v.verdict == "regression"
        }
        bad = [v for v in verdicts if v.verdict == "regression" and why[v.metric] is None]
        held = [v for v in verdicts if v.verdict == "regression" and why[v.metric] is not None]
        for v in verdicts:
            reason = why.get(v.metric)
            skipped = (reason is not None and v.verdict == "regression") or v.verdict == "inconclusive"
            record(
                gates=[
                    gate_entry(
                        _regression_gate(v.metric),
                        v.verdict != "regression" or skipped,
                        v.line() + (f" (inconclusive: {reason})" if skipped and reason else ""),
                        v.current,
                        v.baseline,
                        skipped=skipped,
                    )
                ]
            )
            if v.verdict == "inconclusive":
                logger.warn("regression check inconclusive: " + v.line())
        if held:
            logger.warn(
                "regression check inconclusive: " + "; ".join(f"{v.line()}: {why[v.metric]}" for v in held)
            )
        for line in lines:
            logger.info(line)
        if bad:
            self._regressed = (suite, test)
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
        if not ok:
            self._if_disturbed("cpp_max", msg, value, limit, result, kind="cost", fmt="{:.0f}".format)
        self._gate("cpp_max", ok, msg, value, limit)

    @keyword
    def cycles_per_packet_at_load_should_be_at_most(self, result: NdrPdrResult, ceiling: float) -> None:
        """Fail when the SUT's own cycles per packet at a fixed load (``cpp_at_load``: 50 % of
        min(generator ceiling, NDR), from its threads' CPU time) exceed ``ceiling``; skipped
        with the reason when it was not measured (a polling SUT without busy-cycle counters).
        Over the ceiling on a slow SUT core, or resting on trials run with the TG and SUT
        cores far apart, it is inconclusive, unless the case's ``cpp_at_load_scaled`` (every
        trial scaled to the ceiling's core speed) is within it: then it passes on that figure.

        | `Cycles Per Packet At Load Should Be At Most` | ${result} | 6000 |
        fails with ``cpp_at_load 6600 > ceiling 6000 (+10.0 %)``.
        """
        value, limit = result.telemetry.get("cpp_at_load"), float(ceiling)
        if not isinstance(value, (int, float)):
            text = (
                "cpp_at_load not measured (a SUT that busy-polls its core and reports no busy cycles, "
                "or no load below NDR and the generator ceiling)"
            )
            record(gates=[gate_entry("cpp_at_load_max", True, text, None, limit, skipped=True)])
            raise SkipExecution(f"cpp_at_load_max: {text}")
        self._cpp_at_load_verdict(result, float(value), limit)

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
    def ddio_miss_rate_should_be_at_most(
        self, result: NdrPdrResult, event: str = "ItoM", max: str = "5%"
    ) -> None:
        """Fail when the DDIO (LLC) miss rate of a PCIe ``event`` measured at NDR exceeds ``max``.

        Events as pcm-pcie names them: ItoM (full-line writes), RFO (partial writes, up to
        Cascade Lake), PCIeRdCur or PCIRdCur (reads), ItoMCacheNear (Icelake and later), CRd, DRd.

        | `DDIO Miss Rate Should Be At Most` | ${result} | event=ItoM | max=5% |
        | `DDIO Miss Rate Should Be At Most` | ${result} | event=PCIeRdCur | max=1% |
        """

        key = f"ddio_miss_rate_{event_key(event)}"
        missing = None
        if key not in result.telemetry:
            ddio = {
                k[len("ddio_miss_rate_") :]: v
                for k, v in result.telemetry.items()
                if k.startswith("ddio_miss_rate_") and not k.endswith("_pdr")
            }
            counted = sorted(k for k, v in ddio.items() if not isinstance(v, str))
            if counted:
                missing = f"not supported (pcm-pcie on this CPU counts no {event} event; it has {', '.join(counted)})"
            elif ddio:
                missing = next(iter(ddio.values()))
        self._telemetry_gate(
            result,
            key,
            parse_ratio(max, "max", upper_inclusive=True),
            at_least=False,
            label=f"DDIO {event} miss rate",
            fmt=_fine_pct,
            missing=missing,
        )

    @keyword
    def memory_bytes_per_packet_should_be_at_most(self, result: NdrPdrResult, maximum: float) -> None:
        """| `Memory Bytes Per Packet Should Be At Most` | ${result} | 256 |"""
        self._telemetry_gate(
            result,
            "mem_bytes_per_packet",
            float(maximum),
            at_least=False,
            label="memory bytes/packet",
            fmt="{:.0f}",
        )

    @keyword
    def tmam_retiring_should_be_at_least(self, result: NdrPdrResult, minimum: str) -> None:
        """| `TMAM Retiring Should Be At Least` | ${result} | 40% |"""
        self._telemetry_gate(
            result,
            "tmam_retiring",
            parse_ratio(minimum, "minimum", upper_inclusive=True),
            at_least=True,
            label="TMAM Retiring",
            fmt="{:.1%}",
        )

    @keyword(tags=["robot:continue-on-failure"])
    def check_gates(self, result: NdrPdrResult, thresholds: CaseThresholds) -> None:
        """Apply every threshold of a case; all failures are reported together. When every
        gate is inconclusive the case is skipped, unless `Throughput Should Not Regress`
        already failed this test on clean measurements: that FAIL stays the verdict.

        | ${t}= | `Thresholds For` | linux-ip4 | 64B |
        | `Check Gates` | ${result} | ${t} |
        """
        failures: List[str] = []
        skips: List[str] = []
        dmax = thresholds.ratio("disturbance_max")
        self._dmax = dmax if dmax is not None else DISTURBANCE_MAX
        checks = [
            ("ndr_min", lambda v: self.throughput_should_be_at_least(result, parse_rate(v), "NDR")),
            ("pdr_min", lambda v: self.throughput_should_be_at_least(result, parse_rate(v), "PDR")),
            ("cpp_max", lambda v: self.cycles_per_packet_should_be_at_most(result, v)),
            ("cpp_at_load_max", lambda v: self.cycles_per_packet_at_load_should_be_at_most(result, v)),
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
            if self._regressed is not None and self._regressed == _current_test():
                # A regression decided on clean measurements (its own keyword, run before with
                # continue-on-failure) is the case's verdict: inconclusive fixed gates beside it
                # must not turn the FAIL into a SKIP (Robot keeps a later Skip over it).
                logger.warn("gates inconclusive beside a regression: " + "; ".join(skips))
                return
            raise SkipExecution("; ".join(skips))
        for text in skips:
            # With the skip policy an unsupported telemetry gate is skipped alone: the test
            # keeps the verdict of the gates that could be checked.
            logger.warn(f"gate skipped: {text}")


def _regression_gate(metric: str) -> str:
    """The gate a regression verdict on ``metric`` is recorded as.

    >>> _regression_gate("ndr_pps"), _regression_gate("cpp_at_load_scaled"), _regression_gate("cpp_at_load_per_kernel_scaled")
    ('regression_ndr', 'regression_cpp', 'regression_cpp_kernel')
    """
    return (
        "regression_cpp_kernel"
        if metric.startswith("cpp_at_load_per_kernel")
        else f"regression_{metric.split('_')[0]}"
    )
