"""NDR/PDR search: ``find_ndr_pdr(measure, min_rate, max_rate, ...) -> SearchResult``.

Profiles: ``per-commit`` (MLRsearch with CSIT settings, :mod:`dpgate.search.mlr`),
``sign-off`` (60 s RFC 2544 definition, fast, :mod:`dpgate.search.signoff`) and
``rfc2544-binary`` (classic binary search, :mod:`dpgate.search.binary`).
Simulated SUTs for tests and benchmarks are in :mod:`dpgate.search.simulated`.
"""

from __future__ import annotations

from dpgate.search.api import PROFILES, find_ndr_pdr, profile_settings
from dpgate.search.latency import latency_trials
from dpgate.search.result import SearchAborted, SearchResult, counts_of

__all__ = [
    "PROFILES",
    "SearchAborted",
    "SearchResult",
    "counts_of",
    "find_ndr_pdr",
    "latency_trials",
    "profile_settings",
]
