"""``perf stat`` output in every format perf prints: counts, metrics, IPC, TMAM level 1.

:func:`parse_perf_stat` reads human-readable output, ``-x<sep>`` CSV (separator
detected; ``sep=`` forces one) and ``-j`` JSON, with or without ``-I`` intervals, aggregation ids
(``-A``, ``--per-core``...), metric lines with or without the perf >= 6.13 threshold
column, perf >= 6.5 metric group headers, ``--metric-only`` / ``--topdown`` tables and
hybrid PMUs (``cpu_core/cycles/``, ``cpu_atom/cycles/``). Formats: linux
``tools/perf/util/stat-display.c`` (see :mod:`.perf_csv`, :mod:`.perf_human`, :mod:`.perf_json` and
docs/telemetry.md). Any line that is none of these and not one of perf's own messages is
a :class:`TelemetryError` naming the line.

Counts of one event over several lines (CPUs, cores, intervals) are summed; metric values
are averaged. With ``-I`` the result is the aggregate of the run and ``.intervals`` holds
one :class:`PerfStat` per interval.

>>> s = parse_perf_stat("1200,,cycles,1000,100.00,,\\n3000,,instructions,1000,100.00,2.50,insn per cycle\\n")
>>> s.ipc, s.tmam
(2.5, None)
>>> s = parse_perf_stat("<not supported>,,cycles,0,100.00,,\\n<not supported>,,instructions,0,100.00,,\\n")
>>> s.ipc, str(s.unsupported["cycles"])
(None, 'not supported: cycles <not supported> (no hardware counter on this host)')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import NotSupported, TelemetryError
from .perf_csv import detect_separator, parse_csv
from .perf_human import parse_human
from .perf_json import parse_json
from .perf_records import (
    HYBRID_CORE_PMUS,
    NOT_SUPPORTED,
    Count,
    Metric,
    Record,
    group_pmu,
    is_prose,
    split_event,
)
from .tmam import Tmam, l1_name, tmam_from_perf_metrics

#: Generic cache events counted next to cycles and instructions.
CACHE_EVENTS = ("cache-references", "cache-misses", "LLC-loads", "LLC-load-misses")
#: Raw events of seed 000's TMAM level-1 equations (Haswell..Cascade Lake names).
TMAM_RAW_EVENTS = (
    "CPU_CLK_UNHALTED.THREAD",
    "UOPS_ISSUED.ANY",
    "UOPS_RETIRED.RETIRE_SLOTS",
    "INT_MISC.RECOVERY_CYCLES",
    "IDQ_UOPS_NOT_DELIVERED.CORE",
)
_CYCLES = ("cycles", "cpu-cycles")
_INSTRUCTIONS = ("instructions",)


@dataclass(frozen=True)
class PerfStat:
    """What one ``perf stat`` run printed (or one ``-I`` interval of it)."""

    counts: Dict[str, float] = field(default_factory=dict)
    unsupported: Dict[str, NotSupported] = field(default_factory=dict)
    #: metric unit as perf prints it (``%  tma_retiring``, ``insn per cycle``) -> mean value
    metrics: Dict[str, float] = field(default_factory=dict)
    #: lowest share of the window (percent) each event was counted: below 100 = multiplexed
    running: Dict[str, float] = field(default_factory=dict)
    records: Tuple[Record, ...] = ()
    intervals: Tuple[PerfStat, ...] = ()
    time: Optional[float] = None
    messages: Tuple[str, ...] = ()
    format: str = "csv"
    #: events counted on some lines (intervals, CPUs) and <not counted> on others: their
    #: count is the sum of the lines that counted, a lower bound
    partial: Tuple[str, ...] = ()

    def count(self, event: str) -> Optional[float]:
        return self.counts.get(event)

    def get(self, event: str):
        """The count, or the NotSupported marker, or NotSupported('not measured')."""
        if event in self.counts:
            return self.counts[event]
        return self.unsupported.get(event, NotSupported(f"{event} not measured"))

    # -- IPC ------------------------------------------------------------------------------
    def core_counts(self) -> Optional[Tuple[float, float, Optional[str]]]:
        """(cycles, instructions, PMU) as counted; on a hybrid CPU the core PMU that counted
        (the one whose cycles ran the largest share of the window, then the most cycles)."""
        per: Dict[Optional[str], Dict[str, Tuple[float, float]]] = {}
        for name, value in self.counts.items():
            pmu, base = split_event(name)
            kind = "cycles" if base in _CYCLES else "instructions" if base in _INSTRUCTIONS else None
            if kind:
                per.setdefault(pmu, {})[kind] = (value, self.running.get(name, 100.0))
        full = {p: d for p, d in per.items() if "cycles" in d and "instructions" in d and d["cycles"][0] > 0}
        if None in full:
            return full[None]["cycles"][0], full[None]["instructions"][0], None
        if not full:
            return None
        pmu = max(full, key=lambda p: (full[p]["cycles"][1], full[p]["cycles"][0], p == HYBRID_CORE_PMUS[0]))
        return full[pmu]["cycles"][0], full[pmu]["instructions"][0], pmu

    @property
    def ipc(self) -> Optional[float]:
        """instructions / cycles as counted, None when either was not counted."""
        cc = self.core_counts()
        return cc[1] / cc[0] if cc else None

    @property
    def ipc_pmu(self) -> Optional[str]:
        """The hybrid PMU ``ipc`` comes from (``cpu_core``), None on other CPUs."""
        cc = self.core_counts()
        return cc[2] if cc else None

    def why_no_ipc(self) -> NotSupported:
        for name, reason in self.unsupported.items():
            if split_event(name)[1] in _CYCLES + _INSTRUCTIONS:
                return reason
        return NotSupported(
            "cycles and instructions not measured" if not self.counts else "zero cycles counted"
        )

    # -- TMAM -----------------------------------------------------------------------------
    def tmam_with_pmu(self) -> Tuple[Optional[Tmam], Optional[str]]:
        """(TMAM level 1, hybrid PMU or None); (None, None) when no level-1 metric was printed.

        Raises TelemetryError when level-1 metrics are there but incomplete (perf printed
        ``nan``/empty), out of 0..100 %, or do not add up to 100 %.
        """
        vals: Dict[Optional[str], Dict[str, List[float]]] = {}
        units: Dict[Optional[str], Dict[str, str]] = {}
        blank: Dict[Optional[str], List[str]] = {}
        for rec in self.records:
            if not isinstance(rec, Metric) or l1_name(rec.name) is None:
                continue
            pmu = group_pmu(rec.group) or (split_event(rec.event)[0] if rec.event else None)
            if rec.value is None:
                blank.setdefault(pmu, []).append(rec.name.strip())
                continue
            vals.setdefault(pmu, {}).setdefault(rec.name, []).append(rec.value)
            units.setdefault(pmu, {})[str(l1_name(rec.name))] = rec.name
        if not vals and not blank:
            return None, None
        order = [None] + list(HYBRID_CORE_PMUS) + sorted(p for p in vals if p and p not in HYBRID_CORE_PMUS)
        why = []
        for pmu in order:
            if pmu not in vals and pmu not in blank:
                continue
            have = vals.get(pmu, {})
            if len(units.get(pmu, {})) == 4:
                where = f" ({pmu})" if pmu else ""
                try:
                    return tmam_from_perf_metrics({k: sum(v) / len(v) for k, v in have.items()}), pmu
                except TelemetryError as err:
                    why.append(f"{err}{where}")
                    continue
            gone = sorted(set(blank.get(pmu, [])) - set(units.get(pmu, {}).values()))
            why.append(
                f"{pmu or 'perf'}: level-1 metrics incomplete (not computed: {', '.join(gone) or 'missing'})"
            )
        raise TelemetryError("perf stat TMAM level 1 unusable: " + "; ".join(why))

    @property
    def tmam(self) -> Optional[Tmam]:
        """TMAM level 1 as fractions, None when perf printed no level-1 topdown metric."""
        return self.tmam_with_pmu()[0]


def _build(
    records: Sequence[Record],
    messages: Tuple[str, ...],
    fmt: str,
    time: Optional[float] = None,
    intervals: Tuple[PerfStat, ...] = (),
) -> PerfStat:
    counts: Dict[str, float] = {}
    unsupported: Dict[str, NotSupported] = {}
    metrics: Dict[str, List[float]] = {}
    running: Dict[str, float] = {}
    for rec in records:
        if isinstance(rec, Count):
            if rec.value is not None:
                counts[rec.event] = counts.get(rec.event, 0.0) + rec.value
                if rec.run_pct is not None:
                    running[rec.event] = min(running.get(rec.event, 100.0), rec.run_pct)
            else:
                why = (
                    "no hardware counter on this host"
                    if rec.status == NOT_SUPPORTED
                    else "counter was not scheduled"
                )
                unsupported.setdefault(rec.event, NotSupported(f"{rec.event} {rec.status} ({why})"))
        elif rec.value is not None:
            metrics.setdefault(rec.name, []).append(rec.value)
    partial = tuple(e for e in counts if e in unsupported)
    for event in counts:
        unsupported.pop(event, None)
    return PerfStat(
        counts,
        unsupported,
        {k: sum(v) / len(v) for k, v in metrics.items()},
        running,
        tuple(records),
        intervals,
        time,
        messages,
        fmt,
        partial,
    )


def parse_perf_stat(text: str, sep: Optional[str] = None) -> PerfStat:
    """Parse ``perf stat`` output (human, ``-x`` CSV or ``-j`` JSON, any version); see the module doc."""
    if text is None or not text.strip():
        raise TelemetryError("perf stat output has no event lines (empty or truncated)")
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not is_prose(ln)), "")
    if sep is None and first.startswith("{"):
        records, messages = parse_json(text)
        fmt = "json"
    else:
        sep = sep or detect_separator(text)
        if sep:
            records, messages = parse_csv(text, sep)
            fmt = "csv"
        else:
            records, messages = parse_human(text)
            fmt = "human"
    if records and not any(isinstance(r, Count) for r in records):
        fmt += " metric-only"
    if not records:
        said = f" (perf said: {messages[0]})" if messages else ""
        raise TelemetryError(f"perf stat output has no event lines (empty or truncated){said}")
    times: Dict[str, List[Record]] = {}
    for rec in records:
        if rec.time is not None:
            times.setdefault(rec.time, []).append(rec)
    if times and len(times) < len({id(r) for r in records}) and any(r.time is None for r in records):
        bad = next(r for r in records if r.time is None)
        raise TelemetryError(
            f"perf stat output line {bad.line}: no -I timestamp among interval lines (two runs mixed?)"
        )
    intervals = tuple(_build(recs, (), fmt, float(t)) for t, recs in times.items())
    return _build(records, tuple(messages), fmt, None, intervals)


#: perf prints numbers in the locale (grouping, decimal comma): always run it in the C locale.
PERF_ENV = ("env", "LC_ALL=C")


def perf_stat_argv(
    cpus: Sequence[int],
    events: Sequence[str],
    duration_s: float,
    perf: str = "perf",
    extra: Sequence[str] = (),
    pid: Optional[int] = None,
) -> List[str]:
    """argv of perf stat on ``cpus`` system-wide (or on process ``pid``) for ``duration_s``.

    The CSV goes to stderr. ``extra`` adds options such as ``-M TopdownL1``/``--topdown``.
    perf runs under ``env LC_ALL=C``: a decimal comma would split CSV fields.

    >>> perf_stat_argv([1, 3], ["cycles", "instructions"], 2)[:8]
    ['env', 'LC_ALL=C', 'perf', 'stat', '-x,', '-a', '-C', '1,3']
    """
    target = ["-p", str(int(pid))] if pid is not None else ["-a", "-C", ",".join(str(int(c)) for c in cpus)]
    return (
        list(PERF_ENV)
        + [perf, "stat", "-x,"]
        + target
        + ["-e", ",".join(events)]
        + list(extra)
        + ["--", "sleep", f"{duration_s:g}"]
    )


def not_installed(res: Any) -> Optional[NotSupported]:
    """perf missing behind ``env``: exit 127 and env's complaint."""
    if res.returncode == 127 and "perf" in (res.stderr or ""):
        return NotSupported("perf not installed: install linux-perf")
    return None


def probe_perf(
    node: Any = None, cpus: Sequence[int] = (), pid: Optional[int] = None
) -> Optional[NotSupported]:
    """None when cycles and instructions can be counted on ``node``'s ``cpus``, else why not."""
    from ._run import run_tool

    argv = (
        perf_stat_argv(cpus, ["cycles", "instructions"], 0.01, pid=pid)
        if (cpus or pid is not None)
        else list(PERF_ENV) + ["perf", "stat", "-x,", "-e", "cycles,instructions", "--", "true"]
    )
    res = run_tool(node, argv, timeout=20)
    if isinstance(res, NotSupported):
        return res
    missing = not_installed(res)
    if missing is not None:
        return missing
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
        return NotSupported(f"perf stat failed (exit {res.returncode}): {tail[0]}")
    try:
        stat = parse_perf_stat(res.stderr)
    except TelemetryError as err:
        return NotSupported(f"perf stat output not understood: {err}")
    if stat.core_counts() is None:
        for event in ("cycles", "instructions"):
            if event in stat.unsupported:
                return NotSupported(f"perf: {event} <not supported> (no CPU PMU on this host, e.g. a VM)")
        return NotSupported(f"perf counted no cycles and instructions here ({stat.why_no_ipc().reason})")
    return None


def derive(stat: PerfStat, packets: float) -> Dict[str, object]:
    """IPC, IPP, measured CPP (cycles/packets) and cache misses per packet, or NotSupported each.

    On a hybrid CPU cycles and instructions come from the core PMU that counted
    (``stat.ipc_pmu``)."""
    out: Dict[str, object] = {}
    cc = stat.core_counts()
    if cc is None:
        reason = stat.why_no_ipc()
        out.update({"ipc": reason, "ipp": reason, "cpp_measured": reason})
    else:
        cyc, ins, _pmu = cc
        out["ipc"] = ins / cyc
        out["ipp"] = ins / packets if packets else NotSupported("no packets forwarded")
        out["cpp_measured"] = cyc / packets if packets else NotSupported("no packets forwarded")
    pmu = cc[2] if cc else None
    for key, event in (
        ("cache_misses_per_packet", "cache-misses"),
        ("llc_load_misses_per_packet", "LLC-load-misses"),
    ):
        if pmu and event not in stat.counts and event not in stat.unsupported:  # hybrid: the IPC's PMU
            event = next(
                (k for k in [*stat.counts, *stat.unsupported] if split_event(k) == (pmu, event)), event
            )
        v = stat.get(event)
        if isinstance(v, NotSupported):
            if event in stat.unsupported:
                out[key] = v
            continue
        out[key] = v / packets if packets else NotSupported("no packets forwarded")
    return out
