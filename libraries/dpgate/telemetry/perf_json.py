"""``perf stat -j`` (``--json``) lines to records (linux tools/perf/util/stat-display.c, JSON mode).

One JSON object per line (``print_counter_aggrdata``, ``new_line_json``,
``print_metricgroup_header_json``)::

    {["interval" : <s>, ]["cpu" : "3" | "core" : "S0-D0-C1", "aggregate-number" : 2 | ...,]
     "counter-value" : "<%f>" | "<not counted>" | "<not supported>", "unit" : "msec", "event" : "task-clock",
     "event-runtime" : <ns>, "pcnt-running" : <pct>[, "variance" : <pct>]
     [, "metric-value" : <v>, "metric-unit" : "<unit>"[, "metric-threshold" : "bad"]]}
    {"metric-value" : "12.5", "metric-unit" : "%  tma_frontend_bound"}      another metric of the line above
    {"event-runtime" : <ns>, "pcnt-running" : <pct>, "metricgroup" : "TopdownL1 (cpu_core)"}   perf >= 6.5
    {["interval" : <s>, ]"<unit>" : "<value>", ...}                          --metric-only

``metric-value`` is a number or a string (``"nan"``); a metric with an empty unit is perf's
placeholder for none. ``{}`` (nothing countable in metric-only mode) is skipped.

>>> recs, _ = parse_json('{"counter-value" : "4000.000000", "unit" : "", "event" : "cycles", '
...                      '"event-runtime" : 1000, "pcnt-running" : 100.00, "metric-value" : 0.5, "metric-unit" : "GHz"}')
>>> recs[0].value, recs[1].name
(4000.0, 'GHz')
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Tuple

from .perf_records import (
    NOT_COUNTED,
    NOT_SUPPORTED,
    Count,
    Metric,
    Record,
    error,
    is_prose,
    lines,
    metric_value,
)

_AGGR_KEYS = ("core", "cache", "cluster", "die", "socket", "node", "thread")
_NOT_METRICS = {
    "interval",
    "cpu",
    "aggregate-number",
    "cgroup",
    "event-runtime",
    "pcnt-running",
    "variance",
    *_AGGR_KEYS,
}


def _aggr(obj: Dict[str, Any]) -> Optional[str]:
    if "cpu" in obj:
        return f"CPU{obj['cpu']}"
    return next((str(obj[k]) for k in _AGGR_KEYS if k in obj), None)


def _value(obj: Dict[str, Any], key: str, n: int, raw: str) -> Optional[float]:
    v = obj[key]
    try:
        return metric_value(str(v))
    except ValueError:
        raise error(n, raw, f"{key} {v!r} is not a number") from None


def parse_json(text: str) -> Tuple[List[Record], List[str]]:
    """(records, perf's own messages) of ``perf stat -j`` output."""
    out: List[Record] = []
    messages: List[str] = []
    group: Optional[str] = None
    event: Optional[str] = None
    for n, raw in lines(text):
        s = raw.strip()
        if not s:
            continue
        if not s.startswith("{"):
            if is_prose(s):
                messages.append(s)
                continue
            raise error(n, raw, "not a JSON object (perf stat -j prints one per line)")
        try:
            obj = json.loads(s)
        except ValueError as err:
            raise error(n, raw, f"not valid JSON ({err})") from None
        if not isinstance(obj, dict):
            raise error(n, raw, "not a JSON object")
        time = f"{float(obj['interval']):.9f}" if "interval" in obj else None
        aggr = _aggr(obj)
        if "metricgroup" in obj:
            group = str(obj["metricgroup"])
            continue
        if "counter-value" in obj:
            name, cv = obj.get("event"), str(obj["counter-value"])
            if not name:
                raise error(n, raw, "counter without an 'event'")
            run = obj.get("pcnt-running")
            if cv in (NOT_COUNTED, NOT_SUPPORTED):
                out.append(Count(str(name), None, cv, str(obj.get("unit", "")), run, time, aggr, n))
            else:
                out.append(
                    Count(
                        str(name),
                        _value(obj, "counter-value", n, raw),
                        "counted",
                        str(obj.get("unit", "")),
                        run,
                        time,
                        aggr,
                        n,
                    )
                )
            event, group = str(name), None
        if "metric-unit" in obj or "metric-value" in obj:
            unit = str(obj.get("metric-unit", ""))
            if unit:
                if "metric-value" not in obj:
                    raise error(n, raw, f"metric {unit!r} without a metric-value")
                out.append(
                    Metric(
                        unit,
                        _value(obj, "metric-value", n, raw),
                        group,
                        obj.get("metric-threshold"),
                        event if "counter-value" in obj or group is None else None,
                        time,
                        aggr,
                        n,
                    )
                )
            continue
        if "counter-value" in obj:
            continue
        for key, v in obj.items():  # --metric-only: {"<unit>" : "<value>", ...}
            if key in _NOT_METRICS:
                continue
            val = None if str(v) == "none" else _value(obj, key, n, raw)
            out.append(Metric(key, val, None, None, None, time, aggr, n))
    return out, messages
