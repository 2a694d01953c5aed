"""What one line of ``perf stat`` output says, whatever the format it came in.

The CSV reader (:mod:`.perf_csv`) and the human-readable reader (:mod:`.perf_human`)
turn each line into one of these records; :func:`dpgate.telemetry.perf.parse_perf_stat`
then adds them up. Numbers follow linux ``tools/perf/util/stat-display.c``:

- a count is ``<value>`` or ``<not counted>`` (the event exists but never ran in the
  window) or ``<not supported>`` (the kernel/CPU cannot count it);
- ``run_pct`` is the share of the window the counter was scheduled (multiplexing: perf
  scales the count up by 100 / run_pct);
- a metric value is None where perf printed an empty field or ``nan`` (CSV drops
  everything but digits and ``.``, so NaN and negative metrics come out empty);
- ``group`` is the metric group header above the metric (perf >= 6.5 default mode:
  ``TopdownL1``, ``TopdownL1 (cpu_core)``); ``threshold`` the perf >= 6.13 column.

>>> number("1,234,567"), number("1.234.567"), number("226,054.13"), number("0,51")
(1234567.0, 1234567.0, 226054.13, 0.51)
>>> split_event("cpu_core/instructions/u"), split_event("cycles:u"), split_event("msr/tsc/")
(('cpu_core', 'instructions'), (None, 'cycles'), ('msr', 'tsc'))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Tuple, Union

from . import TelemetryError

NOT_COUNTED = "<not counted>"
NOT_SUPPORTED = "<not supported>"
#: perf >= 6.13 metric threshold classes (stat-display.c metric_threshold_classify__str).
THRESHOLDS = ("unknown", "bad", "nearly bad", "less good", "good")
#: Hybrid core PMUs (Alder Lake and later): the big cores first.
HYBRID_CORE_PMUS = ("cpu_core", "cpu_atom", "cpu_lowpower")

#: ``-I`` timestamp: CSV ``%lu.%09lu`` (6.1 pads it with spaces), human ``%6lu.%09lu``.
TIME = re.compile(r"^\s*\d+\.\d{9}$")
#: aggregation ids followed by the number of CPUs aggregated (--per-core/-die/-socket/-node/-cache/-cluster)
AGGR_NR = re.compile(r"^(S\d+(-D\d+)?(-C\d+|-CLS\d+|-L\d+-ID\d+)?|N\d+)$")
#: aggregation ids alone: -A (``CPU3``) and --percore-show-thread-less --per-core under -A (``S0-D0-C1``)
AGGR_ALONE = re.compile(r"^(CPU\d+|S\d+-D\d+-C\d+)$")
_GROUPED = re.compile(r"^\d{1,3}([,.' ]\d{3})+([.,]\d{2})?$")
_PLAIN = re.compile(r"^-?\d+([.,]\d+)?([eE][+-]?\d+)?$")


@dataclass(frozen=True)
class Count:
    """One event's count on one line."""

    event: str
    value: Optional[float]  # None when not counted / not supported
    status: str  # "counted", NOT_COUNTED or NOT_SUPPORTED
    unit: str = ""
    run_pct: Optional[float] = None  # None: perf did not say (human output, 100 %)
    time: Optional[str] = None  # -I timestamp as printed
    aggr: Optional[str] = None  # CPU3, S0-D0-C1, ...
    line: int = 0


@dataclass(frozen=True)
class Metric:
    """One derived metric perf printed (``insn per cycle``, ``%  tma_retiring``)."""

    name: str  # perf's metric unit text, spaces kept
    value: Optional[float]  # None: empty or nan (not computable)
    group: Optional[str] = None  # metric group header above it (perf >= 6.5)
    threshold: Optional[str] = None  # perf >= 6.13 CSV column
    event: Optional[str] = None  # the event line it was printed on, if any
    time: Optional[str] = None
    aggr: Optional[str] = None
    line: int = 0


Record = Union[Count, Metric]


@dataclass(frozen=True)
class GroupHeader:
    """A metric group header line (perf >= 6.5 default mode): the metrics below belong to it."""

    name: str
    line: int = 0


Line = Union[Count, Metric, GroupHeader]


def number(text: str) -> float:
    """A number as perf printed it, locale grouping included.

    perf prints counts with ``%'.0f`` (grouped per locale) or ``%'.2f`` (scaled events), so a
    separator followed by exactly 2 digits at the end is the decimal point and one followed
    by 3 digits is grouping. Raises ValueError otherwise.
    """
    t = text.strip()
    if _GROUPED.match(t):
        dec = ""
        if re.search(r"[.,]\d{2}$", t):
            t, dec = t[:-3], "." + t[-2:]
        return float(re.sub(r"[,.' ]", "", t) + dec)
    if _PLAIN.match(t):
        return float(t.replace(",", "."))
    raise ValueError(f"not a number: {text!r}")


def is_number(text: str) -> bool:
    try:
        number(text)
    except ValueError:
        return False
    return True


def metric_value(text: str) -> Optional[float]:
    """A metric value field: a number, or None for empty / nan / inf (not computable)."""
    t = text.strip()
    if t.lower() in ("", "nan", "-nan", "inf", "-inf"):
        return None
    return float(t)


def split_event(name: str) -> Tuple[Optional[str], str]:
    """(PMU or None, base event name) of ``cpu_core/cycles/u``, ``cycles:u``, ``cycles``."""
    m = re.match(r"^([A-Za-z_][\w.-]*)/([^/=,]+)/[A-Za-z]*$", name)
    if m:
        return m.group(1), m.group(2)
    return None, name.split(":", 1)[0]


def group_pmu(group: Optional[str]) -> Optional[str]:
    """PMU named in a metric group header: ``TopdownL1 (cpu_atom)`` -> ``cpu_atom``."""
    m = re.search(r"\(([\w]+)\)\s*$", group or "")
    return m.group(1) if m else None


def error(line_no: int, raw: str, what: str) -> TelemetryError:
    """The one error for a line perf does not print: names the line and shows it."""
    shown = raw if len(raw) <= 160 else raw[:157] + "..."
    return TelemetryError(f"perf stat output line {line_no}: {what}: {shown!r}")


def is_prose(line: str) -> bool:
    """perf's own messages around the counts (warnings, hints, errors, the banner)."""
    s = line.strip()
    if re.match(r"^<not (counted|supported)>", s):
        return False
    if re.match(
        r"^(WARNING|Warning|Error|ERROR|Cannot|Failed|Some events|The events|Please|echo |perf |"
        r"Performance counter stats|Using |Consider|Hint|Note|Usage|Run '|event syntax|System does not|"
        r"Topdown [a-z]|Too many|Multiplexing|Workload|\\_+|-[-a-zA-Z])",
        s,
    ):
        return True
    first = re.split(r"[,;\t|#]", s, maxsplit=1)[0].split()
    words = [w for w in first if re.match(r"^[A-Za-z/(`'][A-Za-z'`.:()/-]+$", w)]
    return len(first) >= 4 and len(words) >= 3


def lines(text: str) -> List[Tuple[int, str]]:
    """(1-based line number, line without ANSI colours and CR) of every line."""
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        out.append((n, re.sub(r"\x1b\[[0-9;]*m", "", raw).rstrip("\r")))
    return out
