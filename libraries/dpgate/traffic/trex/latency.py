"""TRex latency stats -> per-direction min/avg/max and hdrh percentiles (us).

TRex reports ``stats["latency"][pg_id] = {"latency": {"total_min", "average", "total_max",
"hdrh", ...}, "err_cntrs": {"dropped", "out_of_order", ...}}``; ``hdrh`` is a base64
HdrHistogram of microseconds, decoded with the ``hdrhistogram`` package.
"""

from __future__ import annotations

from typing import Any, Dict

PERCENTILES = (50, 90, 99, 99.9)


def latency_by_direction(stats: Dict[Any, Any], pg_ids: Dict[str, int]) -> Dict[str, Any]:
    """Per direction ("0->1"): latency summary and the non-zero error counters."""
    lat_all = stats.get("latency") or {}
    out: Dict[str, Any] = {}
    for name, pg in pg_ids.items():
        entry = lat_all.get(pg, lat_all.get(str(pg)))
        if not entry:
            out[name] = {"error": f"no latency stats for pg_id {pg}"}
            continue
        summary = latency_summary(entry.get("latency", {}))
        summary["errors"] = {k: v for k, v in (entry.get("err_cntrs") or {}).items() if v}
        out[name] = summary
    return out


def latency_summary(lat: Dict[str, Any]) -> Dict[str, Any]:
    """min/avg/max (us) and, with an hdrh histogram, p50/p90/p99/p99.9.

    >>> latency_summary({"total_min": 5, "average": 6.5, "total_max": 30})
    {'min_us': 5, 'avg_us': 6.5, 'max_us': 30}
    """
    out: Dict[str, Any] = {"min_us": lat.get("total_min"), "avg_us": lat.get("average"), "max_us": lat.get("total_max")}
    hdrh = lat.get("hdrh")
    if hdrh:
        from hdrh.histogram import HdrHistogram

        h = HdrHistogram.decode(hdrh)
        for q in PERCENTILES:
            out[f"p{q:g}_us"] = h.get_value_at_percentile(q)
    return out


def latency_metrics(latency: Dict[str, Any]) -> Dict[str, Any]:
    """Flat JUnit/record metrics from ``{"90% PDR": {"load_pps", "directions": {"0->1": summary}}}``:
    ``latency_<load>_<dir>_<stat>_us``.

    >>> latency_metrics({"90% PDR": {"load_pps": 9e5, "directions": {"0->1": {"min_us": 5, "p99.9_us": 40,
    ...                                                                       "errors": {}}}}})
    {'latency_90pdr_0to1_min_us': 5, 'latency_90pdr_0to1_p999_us': 40}
    """
    out: Dict[str, Any] = {}
    for load, entry in (latency or {}).items():
        tag = load.replace("% PDR", "pdr").replace(" ", "")
        for direction, summary in ((entry or {}).get("directions") or {}).items():
            d = direction.replace("->", "to")
            for key, value in (summary or {}).items():
                if key.endswith("_us") and value is not None:
                    out[f"latency_{tag}_{d}_{key[:-3].replace('.', '')}_us"] = value
    return out
