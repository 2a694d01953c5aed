"""Human-readable ``perf stat`` lines to records (linux tools/perf/util/stat-display.c).

Line shapes (std mode), after an optional ``-I`` timestamp (``%6lu.%09lu``) and
aggregation id (``CPU3``, ``S0-D0-C1    2``)::

    event      <count> [<unit>] <event>  [# <metric> <metric unit>]  [( +- x% )] [(<running>%)]
    more       # <metric> <metric unit>                              another metric of the line above
    group      <group name>  # <metric> <metric unit>                perf >= 6.5: TopdownL1 (cpu_core)
    metric-only header   <unit>  <unit> ...     rows of values under it   (--metric-only, --topdown)

Counts are ``%'18.0f`` (grouped by the locale: ``1,234,567``; none under LC_ALL=C) or
``%'18.2f`` for scaled events (``0.51 msec task-clock``), or ``<not counted>`` /
``<not supported>``. perf 4.x printed the unit after the name: ``8008.478891 cpu-clock (msec)``.
Metric values ``nan`` are kept as None. The banner, ``seconds time elapsed``, the
``# time counts unit events`` header and perf's hints are skipped.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from .perf_records import (
    AGGR_ALONE,
    AGGR_NR,
    NOT_COUNTED,
    NOT_SUPPORTED,
    Count,
    GroupHeader,
    Line,
    Metric,
    Record,
    error,
    is_number,
    is_prose,
    lines,
    metric_value,
    number,
)

_TIME = re.compile(r"^\s*(\d+\.\d{9})\s+")
_VALUE = r"(?P<value><not counted>|<not supported>|-?\d[\d.,']*\d|\d)"
_RUNNING = re.compile(r"\s*\((?P<pct>\d+(\.\d+)?)%\)\s*$")
_NOISE = re.compile(r"\s*\(\s*\+-\s*[\d.]+%\s*\)")
_METRIC = re.compile(
    r"^#\s*(?P<val>-?\d+([.,]\d+)?|-?nan|-?inf)(?P<pct>%)?\s*(?P<unit>.*?)\s*$", re.IGNORECASE
)
_SKIP = re.compile(
    r"^\s*(Performance counter stats for|[\d.]+( \+- [\d.]+)? seconds (time elapsed|user|sys)|"
    r"#\s+time\s+(counts|[a-z]+\s+cpus\s+counts|cpu\s+counts)|# Table of|# Final result|"
    r"[\d.]+ \([+-][\d.]+\) #*$)"
)


def _prefix(s: str) -> Tuple[Optional[str], Optional[str], str]:
    """(timestamp, aggregation id, the rest) of one line."""
    time = aggr = None
    m = _TIME.match(s)
    if m:
        time, s = m.group(1), s[m.end() :]
    s = s.lstrip()
    tok = s.split(None, 2)
    if tok and AGGR_NR.match(tok[0]) and len(tok) > 1 and tok[1].isdigit() and len(tok) > 2:
        aggr, s = tok[0], tok[2]
    elif tok and AGGR_ALONE.match(tok[0]) and len(tok) > 1:
        aggr, s = tok[0], s[len(tok[0]) :].lstrip()
    return time, aggr, s


def _metric(
    text: str,
    n: int,
    raw: str,
    group: Optional[str],
    event: Optional[str],
    time: Optional[str],
    aggr: Optional[str],
) -> Optional[Metric]:
    """The ``# <value> <unit>`` part, or None when blank."""
    text = _NOISE.sub("", text).strip()
    if not text:
        return None
    m = _METRIC.match(text)
    if not m or not m.group("unit"):
        raise error(n, raw, "metric is not '# <value> <unit>'")
    return Metric(
        m.group("unit"), metric_value(m.group("val").replace(",", ".")), group, None, event, time, aggr, n
    )


def parse_line(n: int, raw: str, group: Optional[str], event: Optional[str]) -> List[Line]:
    """Records of one human-readable line (a GroupHeader for a perf >= 6.5 group header)."""
    time, aggr, s = _prefix(raw)
    running = None
    m = _RUNNING.search(s)
    if m:
        running, s = float(m.group("pct")), s[: m.start()]
    s = _NOISE.sub("", s).rstrip()
    if s.startswith("#"):  # another metric of the line above
        met = _metric(s, n, raw, group, event, time, aggr)
        return [met] if met else []
    mv = re.match(_VALUE + r"\s+(?P<rest>.*)$", s)
    if mv:
        head, _sep, tail = mv.group("rest").partition("#")
        words = head.split()
        unit = ""
        if len(words) == 2 and re.match(r"^\(\w+\)$", words[1]):  # perf 4.x: cpu-clock (msec)
            words, unit = [words[0]], words[1][1:-1]
        if len(words) == 2:
            unit, name = words
        elif len(words) == 1:
            name = words[0]
        else:
            raise error(n, raw, "expected '<count> [<unit>] <event>' before the '#'")
        value = mv.group("value")
        if value in (NOT_COUNTED, NOT_SUPPORTED):
            cnt = Count(name, None, value, unit, running, time, aggr, n)
        else:
            try:
                cnt = Count(name, number(value), "counted", unit, running, time, aggr, n)
            except ValueError:
                raise error(n, raw, f"count {value!r} of {name!r} is not a number perf prints") from None
        met = _metric("#" + tail if _sep else "", n, raw, group, name, time, aggr)
        lines_: List[Line] = [cnt]
        return lines_ + ([met] if met else [])
    head, _sep, tail = s.partition("#")
    if _sep and head.strip() and not is_number(head.split()[0]):  # perf >= 6.5 group header
        met = _metric("#" + tail, n, raw, head.strip(), None, time, aggr)
        header: List[Line] = [GroupHeader(head.strip(), n)]
        return header + ([met] if met else [])
    raise error(n, raw, "not a perf stat line ('<count> [<unit>] <event> [# <metric>]')")


def _units(header: str, count: int) -> Optional[List[str]]:
    """Metric names of a metric-only header row holding ``count`` names, or None."""
    tries = [
        [u.replace("\0", "  ") for u in re.split(r"\s{2,}", header.strip().replace("%  ", "%\0"))],
        re.findall(r"%\s+\S+|\S+", header.strip()),
    ]
    return next((t for t in tries if len(t) == count and all(t)), None)


def parse_metric_only(text: str) -> List[Record]:
    """--metric-only / --topdown human output: a row of names, rows of values under it.

    Each row of values is matched to the latest line above it that splits into as many
    metric names (perf's own messages in between do not split that way)."""
    out: List[Record] = []
    heads: List[str] = []
    for n, raw in lines(text):
        s = raw.strip()
        if not s or _SKIP.match(raw):
            continue
        if s.startswith("#"):  # -I: '#   time  <names>'
            h = re.sub(r"^#\s*time\s*", "", s)
            heads.append(re.sub(r"^(core|die|socket|node|cpu|cache|cluster)\s+(cpus\s+)?", "", h))
            continue
        time, aggr, rest = _prefix(raw)
        vals = rest.split()
        if vals and _ROW.match(rest.strip()):
            units = next((u for u in (_units(h, len(vals)) for h in reversed(heads)) if u), None)
            if units is None:
                raise error(
                    n,
                    raw,
                    f"{len(vals)} metric-only values and no header row of {len(vals)} "
                    f"metric names above them (last: {heads[-1] if heads else None!r})",
                )
            for unit, v in zip(units, vals):
                out.append(Metric(unit, metric_value(v.rstrip("%")), None, None, None, time, aggr, n))
        elif vals and not is_number(vals[0]):
            heads.append(rest)
        else:
            raise error(n, raw, "neither a metric-only header nor a row of values")
    return out


_ROW = re.compile(r"^(-?\d[\d.]*%?|-?nan)(\s+(-?\d[\d.]*%?|-?nan))*$")


def looks_metric_only(text: str) -> bool:
    """No count line: rows of bare numbers under a row of names."""
    saw_values = False
    for _n, raw in lines(text):
        s = raw.strip()
        if not s or _SKIP.match(raw) or is_prose(s) or s.startswith("#"):
            continue
        rest = _prefix(raw)[2].strip()
        if _ROW.match(rest):
            saw_values = True
        elif re.match(_VALUE + r"\s+\S", rest):
            return False
    return saw_values


def parse_human(text: str) -> Tuple[List[Record], List[str]]:
    """(records, perf's own messages) of human-readable output."""
    if looks_metric_only(text):
        return parse_metric_only(text), []
    out: List[Record] = []
    messages: List[str] = []
    group: Optional[str] = None
    event: Optional[str] = None
    for n, raw in lines(text):
        s = raw.strip()
        if not s or _SKIP.match(raw) or raw.startswith("#"):
            continue  # '# started on ...', the -I column header
        if is_prose(s):
            messages.append(s)
            continue
        for rec in parse_line(n, raw, group, event):
            if isinstance(rec, GroupHeader):
                group = rec.name
                continue
            if isinstance(rec, Count):
                event, group = rec.event, None
            out.append(rec)
    return out, messages
