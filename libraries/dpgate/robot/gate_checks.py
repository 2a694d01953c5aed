"""The checking machinery under :class:`dpgate.robot.gates.Gates` (no keywords here).

``GateChecks`` records each gate in the test's record and turns a verdict into a pass, a
``Failure`` that reads like ``NDR 11.2 Mpps < floor 12.0 Mpps (-6.7 %)``, or a skip when
the verdict cannot be trusted (value at the generator's ceiling, a disturbed machine,
telemetry the host cannot count under ``telemetry_policy=skip``).

>>> _pct(11.2e6, 12e6)
'-6.7 %'
"""

from __future__ import annotations

from typing import Any, Optional

from robot.api import Failure, SkipExecution, logger

from dpgate.config.units import format_pps
from dpgate.model.ndrpdr import CEILING_MARGIN, NdrPdrResult
from dpgate.model.record import gate_entry
from dpgate.robot.base import record
from dpgate.telemetry.cpp_scaled import scaled_at
from dpgate.telemetry.disturbance import disturbance_for, slow_core_reason
from dpgate.telemetry.disturbance import inconclusive as disturbed_reason
from dpgate.telemetry.placement import SCALED_KEY, far_reason, rests_where
from dpgate.telemetry.slowphase import beyond_slow


class GateChecks:
    """Gate recording and verdicts shared by the ``Gates`` keywords."""

    #: ``skip`` or ``fail``: what a telemetry gate does on a host without counters
    policy: str
    #: largest foreign core share a failing verdict may rest on (set per case by Check Gates)
    _dmax: Optional[float]

    def _inconclusive(self, name: str, msg: str, value: Any, limit: Any, result: NdrPdrResult) -> None:
        """A failed floor/ceiling whose value sits at the generator's ceiling: the SUT kept up
        with everything the generator could send, so the testbed cannot tell whether the SUT
        meets the threshold. Skipped with that reason, never a SUT failure."""
        text = (
            f"{msg}, but at the generator's ceiling {format_pps(result.generator_max_pps)}: this testbed "
            "cannot show whether the SUT meets it (the SUT forwarded all the generator sent)"
        )
        record(gates=[gate_entry(name, True, text, value, limit, skipped=True)])
        raise SkipExecution(f"{name} inconclusive: {text}")

    def _if_disturbed(
        self,
        name: str,
        msg: str,
        value: Any,
        limit: Any,
        result: NdrPdrResult,
        metric: str = "",
        kind: str = "",
        fmt: Any = "{:g}".format,
    ) -> None:
        """A failed gate whose measurements were disturbed (more than ``disturbance_max`` of a
        TG/SUT core used by other work or lost to a slow host in the trials the verdict on
        ``metric`` rests on): a neighbour may have caused the miss. Skipped with the figure,
        never a SUT failure; unless only a slow host phase disturbed it and the value misses
        even the limit moved by the cores' speed (``kind`` ``rate``/``cost``,
        :mod:`dpgate.telemetry.slowphase`): then it FAILS, saying so."""
        reason = disturbed_reason(disturbance_for(result.telemetry, metric), self._dmax)
        if reason is None:
            return
        beyond = beyond_slow(result.telemetry, value, limit, kind, self._dmax, fmt) if kind else None
        if beyond:
            self._gate(name, False, f"{msg}, {beyond}", value, limit)
        text = f"{msg}, but {reason}: measure again on a quieter machine"
        record(gates=[gate_entry(name, True, text, value, limit, skipped=True)])
        raise SkipExecution(f"{name} inconclusive: {text}")

    def _gate(self, name: str, ok: bool, msg: str, value: Any, limit: Any) -> None:
        record(gates=[gate_entry(name, ok, msg, value, limit)])
        if ok:
            logger.info(f"gate {name}: {msg}")
            return
        raise Failure(msg)

    def _telemetry_gate(
        self,
        result: NdrPdrResult,
        key: str,
        limit: float,
        at_least: bool,
        label: str,
        fmt: Any,
        missing: Optional[str] = None,
    ) -> None:
        value = result.telemetry.get(key)
        if value is None:
            value = missing or "not supported (no telemetry captured for this test)"
        if isinstance(value, str):
            reason = value
            record(
                gates=[
                    gate_entry(
                        key,
                        self.policy == "skip",
                        f"{label} {reason}",
                        reason,
                        limit,
                        skipped=self.policy == "skip",
                    )
                ]
            )
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

    def _cpp_at_load_verdict(self, result: NdrPdrResult, value: float, limit: float) -> None:
        """The ``cpp_at_load_max`` verdict on a measured ``value``. Over the ceiling it is
        inconclusive when others' time, a far placement of the cores or a slow host phase
        explains the excess, unless the scaled figure (every trial moved to the ceiling's
        core speed, ``dpgate.telemetry.cpp_scaled``) is within the ceiling: then it passes on
        that figure (a PASS only: scaling never FAILs a ceiling). Why the far case too:
        ``cpp_at_load`` keeps the full-speed trials, on the Zen 3 host the one or two fastest,
        often far, while most of the scaled figure's ran near; and a figure from far trials
        within the ceiling is within it near too (far costs a SUT more cycles per frame)."""
        tel = result.telemetry
        ok = value <= limit
        msg = f"cpp_at_load {value:.0f} {'<=' if ok else '>'} ceiling {limit:.0f} ({_pct(value, limit)})"
        if ok:
            return self._gate("cpp_at_load_max", ok, msg, value, limit)
        self._if_disturbed("cpp_at_load_max", msg, value, limit, result, metric="cpp_at_load")
        far = far_reason(tel)  # dpgate.telemetry.placement
        slow = None if far else slow_core_reason(tel, value=value, limit=limit)
        ref = tel.get("sut_core_speed_ref")
        scaled = scaled_at(tel, ref)
        if (far or slow) and scaled is not None and scaled <= limit:
            where = rests_where(tel, SCALED_KEY)
            rests = f" (its trials {where})" if where else ""
            if far:
                how = "far apart" if rests_where(tel) == "far" else "moved between placements"
                why = f"with its full-speed trials' TG and SUT cores {how}"
            else:
                cur = tel["sut_core_speed"]
                why = f"on a SUT core at {cur:.1f} M it/s ({cur / ref * 100:.0f} % of its full speed)"
            text = (
                f"{msg} {why}; every trial scaled to {ref:g} M it/s{rests}: "
                f"{scaled:.0f} <= ceiling {limit:.0f} ({_pct(scaled, limit)})"
            )
            return self._gate("cpp_at_load_max", True, text, scaled, limit)
        if far or slow:
            also = "" if scaled is None else f" (every trial scaled to full speed: {scaled:.0f}, over it too)"
            text = (
                f"{msg}, but {far}"
                if far
                else f"{msg}, but {slow}{also}: measure again when the host is quieter"
            )
            record(gates=[gate_entry("cpp_at_load_max", True, text, value, limit, skipped=True)])
            raise SkipExecution(f"cpp_at_load_max inconclusive: {text}")
        self._gate("cpp_at_load_max", ok, msg, value, limit)


def _at_ceiling(result: NdrPdrResult, value: float) -> bool:
    """``value`` (pps) is at the generator's ceiling (within 3 %, as ``limited_by`` uses)."""
    return bool(result.generator_max_pps) and value >= CEILING_MARGIN * float(result.generator_max_pps or 0.0)


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
