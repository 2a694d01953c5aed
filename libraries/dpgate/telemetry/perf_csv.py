"""``perf stat -x<sep>`` lines to records (linux tools/perf/util/stat-display.c, CSV mode).

Line shapes, after an optional ``summary`` field, ``-I`` timestamp and aggregation id
(``CPU3``; ``S0-D0-C1,<nr>``; ``S0,<nr>``; ``N0,<nr>``; ``comm-pid``)::

    event     <value>,<unit>,<event>[,<cgroup>],<run>,<pct>[,<noise>%][,<metric>,<metric unit>[,<threshold>]]
    more      ,,,,,<metric>,<metric unit>[,<threshold>]            another metric of the line above
    group     ,<run>,<pct>,,,,<group name>[,]                       perf >= 6.5 default mode header
    grouped   ,<run>,<pct>,,,<metric>,<metric unit>                 hybrid default mode
    metric-only header  [time,][core,cpus,]<unit>,<unit>,...,       (--metric-only, --topdown)
    metric-only values  [<time>,][<aggr id>,[<nr>,]]<v>,<v>,...,

``<value>`` is ``%.0f``/``%.2f`` or ``<not counted>``/``<not supported>``; metric values
keep only digits and ``.`` (NaN and negative values print empty). perf >= 6.13 adds the
threshold column (``bad``, ``good``...) to metric lines and a trailing separator to group
headers; perf 4.x padded lines with extra empty fields. Event names with the separator
inside (``cpu/UOPS_DECODED.DEC0,cmask=1/``) are put back together.
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from .perf_records import (
    AGGR_ALONE,
    AGGR_NR,
    NOT_COUNTED,
    NOT_SUPPORTED,
    THRESHOLDS,
    TIME,
    Count,
    GroupHeader,
    Line,
    Metric,
    Record,
    error,
    is_prose,
    lines,
    metric_value,
)

#: separators tried when the caller does not say (perf -x takes any string)
SEPARATORS = (",", ";", "\t", "|")
_AGGR_WORDS = ("time", "core", "cpus", "die", "socket", "node", "cpu", "comm-pid", "cache", "cluster")
_METRIC_NUM = re.compile(r"^(\d+(\.\d*)?|\.\d+)?$")
_CSV_NUM = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")


def is_number(text: str) -> bool:
    """A CSV number as perf prints it (``%.0f``, ``%.2f``, ``%lu``): no grouping, no padding."""
    return bool(_CSV_NUM.match(text))


def _join_event_terms(fields: List[str], sep: str) -> List[str]:
    """Glue ``cpu/EVENT`` + ``cmask=1/`` back into one event name split at the separator."""
    out: List[str] = []
    i = 0
    while i < len(fields):
        f, nxt = fields[i], i + 1
        if re.match(r"^[a-z_][a-z0-9_]*/[^/]*$", f):
            for j in range(i + 1, min(i + 8, len(fields))):
                if "=" not in fields[j]:
                    break
                joined = sep.join(fields[i : j + 1])
                if re.match(r"^[a-z_][a-z0-9_]*/[^/]*/[A-Za-z]*$", joined):
                    f, nxt = joined, j + 1
                    break
        out.append(f)
        i = nxt
    return out


def _prefix(fields: List[str]) -> Tuple[Optional[str], Optional[str], List[str]]:
    """(timestamp, aggregation id, the rest) of a split line."""
    time = aggr = None
    if fields and fields[0] == "summary":
        fields = fields[1:]
    if fields and TIME.match(fields[0]):
        time, fields = fields[0].strip(), fields[1:]
    if (
        fields
        and AGGR_NR.match(fields[0])
        and len(fields) > 1
        and fields[1].isdigit()
        and (_valid_rest(fields[2:]) or not _valid_rest(fields[1:]))
    ):
        return time, fields[0], fields[2:]
    if fields and (AGGR_ALONE.match(fields[0]) or AGGR_NR.match(fields[0])):
        return time, fields[0], fields[1:]
    if (
        fields
        and re.match(r"^\S.*-\d+$", fields[0])
        and not is_number(fields[0])
        and len(fields) > 1
        and (is_number(fields[1]) or fields[1] in (NOT_COUNTED, NOT_SUPPORTED))
    ):
        return time, fields[0], fields[1:]  # --per-thread: comm-pid
    return time, aggr, fields


def _noise(field: str) -> bool:
    """``-r`` variance column: ``7.24%``."""
    return field.endswith("%") and is_number(field[:-1])


def _valid_rest(rest: Sequence[str]) -> bool:
    """Whether ``rest`` (prefix removed) is an event line's value,unit,event,..."""
    return (
        len(rest) >= 3
        and rest[0] == rest[0].strip()
        and rest[2] == rest[2].strip()
        and (is_number(rest[0]) or rest[0] in (NOT_COUNTED, NOT_SUPPORTED))
        and not is_number(rest[1])
        and bool(rest[2])
        and not is_number(rest[2])
    )


def _metric_tail(tail: Sequence[str], n: int, raw: str) -> Optional[Tuple[str, str, Optional[str]]]:
    """(value text, unit, threshold) of ``<metric>,<unit>[,<threshold>]`` + empty padding, or None."""
    t = list(tail)
    while t and t[-1] == "":
        t.pop()
    if not t:
        return None
    thr: Optional[str] = None
    if len(t) == 3 and t[2] in THRESHOLDS:
        val, unit, thr = t[0], t[1], t[2]
    elif len(t) == 2:
        val, unit = t[0], t[1]
    else:
        raise error(n, raw, "metric columns are not '<value>,<unit>[,<threshold>]'")
    if not _METRIC_NUM.match(val) or not unit or is_number(unit):
        raise error(n, raw, f"metric value {val!r} / unit {unit!r} is not what perf prints")
    return val, unit, thr


def parse_line(n: int, raw: str, sep: str, group: Optional[str], event: Optional[str]) -> List[Line]:
    """Records of one CSV line (event, metric continuation, group header). Raises on others."""
    fields = _split(raw, sep)
    time, aggr, rest = _prefix(fields)
    if _valid_rest(rest):
        value, unit, name = rest[0], rest[1], rest[2]
        i = 3
        if len(rest) > i and rest[i] and not rest[i].isdigit() and not _noise(rest[i]):
            i += 1  # -G: cgroup column
        if len(rest) > i and _noise(rest[i]):
            i += 1  # -r: variance (perf prints it before run time)
        if len(rest) < i + 2 or not rest[i].isdigit() or not is_number(rest[i + 1]):
            raise error(n, raw, "event line lacks '<run time>,<percent running>' after the event name")
        run_pct = float(rest[i + 1])
        i += 2
        if i < len(rest) and _noise(rest[i]):
            i += 1  # variance where perf-stat.txt lists it
        if value in (NOT_COUNTED, NOT_SUPPORTED):
            out: List[Line] = [Count(name, None, value, unit, run_pct, time, aggr, n)]
        else:
            out = [Count(name, float(value), "counted", unit, run_pct, time, aggr, n)]
        m = _metric_tail(rest[i:], n, raw)
        if m is not None:
            out.append(Metric(m[1], metric_value(m[0]), group, m[2], name, time, aggr, n))
        return out
    # ,<run>,<pct>,,,,<group>[,]   (perf >= 6.5) and ,<run>,<pct>,,,<metric>,<unit> (hybrid)
    if len(rest) >= 7 and rest[0] == "" and rest[1].isdigit() and is_number(rest[2]) and not any(rest[3:5]):
        if rest[5] == "" and rest[6] and not is_number(rest[6]) and not any(rest[7:]):
            return [GroupHeader(rest[6], n)]
        m = _metric_tail(rest[5:], n, raw)
        if m is not None:
            return [Metric(m[1], metric_value(m[0]), group, m[2], None, time, aggr, n)]
    # ,,,,,<metric>,<unit>[,<threshold>]: another metric of the event (or group) above
    if len(rest) >= 7 and not any(rest[:5]):
        m = _metric_tail(rest[5:], n, raw)
        if m is not None:
            return [Metric(m[1], metric_value(m[0]), group, m[2], event, time, aggr, n)]
    if not any(rest):
        return []
    if len(rest) >= 5 and rest[0] and rest[2] and not is_number(rest[2]) and rest[3].isdigit():
        raise error(
            n, raw, f"value {rest[0]!r} of {rest[2]!r} is not a number, <not counted> or <not supported>"
        )
    if sep == "," and re.search(r"(^|,)\d+,\d\d,", raw):
        raise error(n, raw, "a decimal comma (non-C locale) split the numbers: run perf with LC_ALL=C")
    raise error(n, raw, "not a perf stat CSV line ('<value>,<unit>,<event>,<run>,<pct>,...')")


def _split(raw: str, sep: str) -> List[str]:
    return _join_event_terms(raw.rstrip(" ").split(sep), sep)


def _values_row(fields: Sequence[str]) -> bool:
    return all(_METRIC_NUM.match(f) for f in fields)


def parse_metric_only(text: str, sep: str) -> List[Record]:
    """--metric-only / --topdown CSV: a header row of metric names, rows of values under it.

    perf prints the header once (with ``-I``, again every 26 intervals); each name and each
    value ends with the separator. A row is matched to the latest header row of the same
    width, so a warning line with a comma in it is not taken for a header.
    """
    out: List[Record] = []
    heads: List[Tuple[int, List[str]]] = []  # (leading aggr/time words, metric names)
    for n, raw in lines(text):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        if sep not in raw:
            if is_prose(raw):
                continue
            raise error(n, raw, "neither a metric-only header nor a row of values")
        fields = _split(raw, sep)
        if fields[-1] == "":
            fields = fields[:-1]
        time, aggr, vals = _prefix(fields)
        if not _values_row(vals):
            lead = 0
            while lead < len(fields) and fields[lead].strip().lower() in _AGGR_WORDS:
                lead += 1
            heads.append((lead, fields[lead:]))
            continue
        units = next((u for _lead, u in reversed(heads) if len(u) == len(vals)), None)
        if units is None:
            if not any(vals):
                continue  # nothing counted: no names, empty values
            shown = "; ".join(", ".join(u) for _l, u in heads[-2:]) or "none"
            raise error(
                n,
                raw,
                f"{len(vals)} metric-only values and no header row of {len(vals)} metric names (headers seen: {shown})",
            )
        for unit, v in zip(units, vals):
            if not unit or is_number(unit):
                raise error(n, raw, f"metric-only header has an empty or numeric name {unit!r}")
            out.append(Metric(unit, metric_value(v), None, None, None, time, aggr, n))
    return out


def looks_metric_only(text: str, sep: str) -> bool:
    """No event line and no group header, but a row of names and a row of values under it:
    --metric-only / --topdown output."""
    header = values = False
    for _n, raw in lines(text):
        if sep not in raw or is_prose(raw):
            continue
        fields = _split(raw, sep)
        rest = _prefix(fields)[2]
        if _valid_rest(rest) or (len(rest) >= 3 and rest[0] == "" and rest[1].isdigit()):
            return False
        if fields and fields[-1] == "":
            fields = fields[:-1]
        if fields and all(f and not is_number(f) for f in fields):
            header = True
        elif header and _values_row(_prefix(fields)[2]):
            values = True
    return header and values


def detect_separator(text: str) -> Optional[str]:
    """The -x separator that makes the most lines event lines (None: human output)."""
    best, score = None, 0
    for sep in SEPARATORS:
        s = sum(1 for _n, raw in lines(text) if sep in raw and _valid_rest(_prefix(_split(raw, sep))[2]))
        if s > score:
            best, score = sep, s
    if best is None:
        for sep in SEPARATORS:
            if looks_metric_only(text, sep):
                return sep
        for sep in SEPARATORS:  # only separators: metric-only output with nothing counted
            data = [raw.strip() for _n, raw in lines(text) if raw.strip() and not is_prose(raw)]
            if data and all(set(d) == {sep} for d in data):
                return sep
        for sep in SEPARATORS:  # CSV-shaped lines whose value is wrong: read as CSV, to say so
            for _n, raw in lines(text):
                rest = _prefix(_split(raw, sep))[2]
                if not is_prose(raw) and len(rest) >= 5 and rest[2] and not is_number(rest[2]):
                    return sep
    return best


def parse_csv(text: str, sep: str) -> Tuple[List[Record], List[str]]:
    """(records, perf's own messages) of CSV output."""
    if looks_metric_only(text, sep):
        return parse_metric_only(text, sep), []
    out: List[Record] = []
    messages: List[str] = []
    group: Optional[str] = None
    event: Optional[str] = None
    for n, raw in lines(text):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if sep not in raw or is_prose(raw):
            if not is_prose(raw):
                raise error(
                    n,
                    raw,
                    f"neither a '{sep}'-separated perf stat line nor one of perf's messages (truncated or mixed output?)",
                )
            messages.append(line)
            continue
        for rec in parse_line(n, raw, sep, group, event):
            if isinstance(rec, GroupHeader):
                group = rec.name
                continue
            if isinstance(rec, Count):
                event = rec.event
                group = None
            out.append(rec)
    return out, messages
