"""``perf stat -x,`` output: per-event counts, unsupported events marked, metrics; IPC/IPP/CPP.

Format (linux tools/perf/util/stat-display.c, CSV mode), one event per line::

    [<time>,][<aggr id>,[<nr>,]]<value>,<unit>,<event>,<run time>,<percent>[,<metric>,<metric unit>]

``<value>`` is a number, ``<not supported>`` or ``<not counted>``; ``<time>`` (``-I``)
is ``%lu.%09lu``; ``<aggr id>`` is ``CPU<n>`` (``-A``), ``S<s>-D<d>-C<c>`` (``--per-core``,
followed by the number of CPUs), ``S<s>``/``S<s>-D<d>``/``N<n>`` likewise. An event with
more than one metric (``-M TopdownL1``, ``--topdown``) prints the extra metrics on
continuation lines whose value, unit and event fields are empty:
``,,,,,12.3,%  tma_frontend_bound``. Lines with no separator at all (perf's own messages,
e.g. ``Cannot find metric or group``) are ignored; ``#`` lines and blank lines too. Counts
of one event over several lines (per CPU, per interval) are summed; metric values are
averaged.

>>> s = parse_perf_stat("1200,,cycles,1000,100.00,,\\n<not supported>,,instructions,0,100.00,,\\n")
>>> s.count("cycles"), str(s.unsupported["instructions"])
(1200.0, 'not supported: instructions <not supported> (no hardware counter on this host)')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from . import NotSupported, TelemetryError

_NUM = re.compile(r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$")
_TIME = re.compile(r"^[0-9]+\.[0-9]{9}$")
_AGGR = re.compile(r"^(S[0-9]+(-D[0-9]+)?(-C[0-9]+)?|N[0-9]+)$")

#: Generic cache events counted next to cycles and instructions.
CACHE_EVENTS = ("cache-references", "cache-misses", "LLC-loads", "LLC-load-misses")
#: Raw events of seed 000's TMAM level-1 equations (Haswell..Cascade Lake names).
TMAM_RAW_EVENTS = ("CPU_CLK_UNHALTED.THREAD", "UOPS_ISSUED.ANY", "UOPS_RETIRED.RETIRE_SLOTS",
                   "INT_MISC.RECOVERY_CYCLES", "IDQ_UOPS_NOT_DELIVERED.CORE")


@dataclass(frozen=True)
class PerfStat:
    counts: Dict[str, float] = field(default_factory=dict)
    unsupported: Dict[str, NotSupported] = field(default_factory=dict)
    #: metric unit as perf prints it (``%  tma_retiring``, ``insn per cycle``) -> value
    metrics: Dict[str, float] = field(default_factory=dict)

    def count(self, event: str) -> Optional[float]:
        return self.counts.get(event)

    def get(self, event: str):
        """The count, or the NotSupported marker, or NotSupported('not measured')."""
        if event in self.counts:
            return self.counts[event]
        return self.unsupported.get(event, NotSupported(f"{event} not measured"))


def _strip_prefix(fields: List[str]) -> List[str]:
    if fields and fields[0] == "summary":
        fields = fields[1:]
    if fields and _TIME.match(fields[0]):
        fields = fields[1:]
    if fields and (re.match(r"^CPU[0-9]+$", fields[0]) or _AGGR.match(fields[0])):
        agg = bool(_AGGR.match(fields[0]))
        fields = fields[1:]
        # aggregated modes print the number of CPUs next: "S0-D0-C1,2,<value>,..."
        if agg and len(fields) > 1 and fields[0].isdigit() and (_NUM.match(fields[1]) or fields[1].startswith("<")
                                                                   or fields[1] == ""):
            if len(fields) > 3 and fields[3] and not _NUM.match(fields[3]):
                fields = fields[1:]  # value,unit,event follow: fields[0] was the CPU count
            elif fields[1] == "" and len(fields) > 2 and fields[2] == "":
                fields = fields[1:]  # continuation line of an aggregated mode
    return fields


def parse_perf_stat(text: str, sep: str = ",") -> PerfStat:
    counts: Dict[str, float] = {}
    unsupported: Dict[str, NotSupported] = {}
    metrics: Dict[str, List[float]] = {}
    seen = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#") or sep not in line:
            continue
        fields = _strip_prefix([f.strip() for f in line.split(sep)])
        metric = None
        if len(fields) >= 2 and fields[-1] and _NUM.match(fields[-2] or "x") and not _NUM.match(fields[-1]):
            metric = (fields[-1], float(fields[-2]))
        if len(fields) >= 3 and fields[0] and fields[2]:
            value, event = fields[0], fields[2]
            if value in ("<not supported>", "<not counted>"):
                why = "no hardware counter on this host" if value == "<not supported>" else "counter was not scheduled"
                unsupported.setdefault(event, NotSupported(f"{event} {value} ({why})"))
            elif _NUM.match(value):
                counts[event] = counts.get(event, 0.0) + float(value)
            else:
                raise TelemetryError(f"perf stat output line {n}: value {value!r} of {event!r} is not a number")
            seen += 1
        elif metric is not None and not any(fields[:-2]):
            pass  # continuation line: one more metric of the event above
        elif not any(fields):
            continue
        else:
            raise TelemetryError(f"perf stat output line {n} is not '<value>,<unit>,<event>,...': {raw!r}")
        if metric is not None:
            metrics.setdefault(metric[0], []).append(metric[1])
    if not seen:
        raise TelemetryError("perf stat output has no event lines (empty or truncated)")
    for event in counts:
        unsupported.pop(event, None)
    return PerfStat(counts, unsupported, {k: sum(v) / len(v) for k, v in metrics.items()})


def perf_stat_argv(cpus: Sequence[int], events: Sequence[str], duration_s: float, perf: str = "perf",
                   extra: Sequence[str] = (), pid: Optional[int] = None) -> List[str]:
    """argv of perf stat on ``cpus`` system-wide (or on process ``pid``) for ``duration_s``.

    The CSV goes to stderr. ``extra`` adds options such as ``-M TopdownL1``/``--topdown``.

    >>> perf_stat_argv([1, 3], ["cycles", "instructions"], 2)
    ['perf', 'stat', '-x,', '-a', '-C', '1,3', '-e', 'cycles,instructions', '--', 'sleep', '2']
    """
    target = ["-p", str(int(pid))] if pid is not None else ["-a", "-C", ",".join(str(int(c)) for c in cpus)]
    return [perf, "stat", "-x,"] + target + ["-e", ",".join(events)] + list(extra) + ["--", "sleep", f"{duration_s:g}"]


def probe_perf(node: Any = None, cpus: Sequence[int] = (), pid: Optional[int] = None) -> Optional[NotSupported]:
    """None when cycles and instructions can be counted on ``node``'s ``cpus``, else why not."""
    from ._run import run_tool

    argv = perf_stat_argv(cpus, ["cycles", "instructions"], 0.01, pid=pid) if (cpus or pid is not None) else \
        ["perf", "stat", "-x,", "-e", "cycles,instructions", "--", "true"]
    res = run_tool(node, argv, timeout=20)
    if isinstance(res, NotSupported):
        return res
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
        return NotSupported(f"perf stat failed (exit {res.returncode}): {tail[0]}")
    try:
        stat = parse_perf_stat(res.stderr)
    except TelemetryError as err:
        return NotSupported(f"perf stat output not understood: {err}")
    for event in ("cycles", "instructions"):
        if event in stat.unsupported:
            return NotSupported(f"perf: {event} <not supported> (no CPU PMU on this host, e.g. a VM)")
    return None


def derive(stat: PerfStat, packets: float) -> Dict[str, object]:
    """IPC, IPP, measured CPP (cycles/packets) and cache misses per packet, or NotSupported each."""
    cyc, ins = stat.get("cycles"), stat.get("instructions")
    out: Dict[str, object] = {}
    if isinstance(cyc, NotSupported) or isinstance(ins, NotSupported):
        reason = cyc if isinstance(cyc, NotSupported) else ins
        out.update({"ipc": reason, "ipp": reason, "cpp_measured": reason})
    else:
        out["ipc"] = ins / cyc if cyc else NotSupported("zero cycles counted")
        out["ipp"] = ins / packets if packets else NotSupported("no packets forwarded")
        out["cpp_measured"] = cyc / packets if packets else NotSupported("no packets forwarded")
    for key, event in (("cache_misses_per_packet", "cache-misses"), ("llc_load_misses_per_packet", "LLC-load-misses")):
        v = stat.get(event)
        if isinstance(v, NotSupported):
            if event in stat.unsupported:
                out[key] = v
            continue
        out[key] = v / packets if packets else NotSupported("no packets forwarded")
    return out
