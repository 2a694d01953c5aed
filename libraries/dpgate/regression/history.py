"""The history store: one JSON line per run and test in ``<store>/<testbed>/<test-id>.jsonl``
with the commit (``--commit``, else DPGATE_COMMIT / CI_COMMIT_SHA / GIT_COMMIT / GITHUB_SHA),
time, NDR, PDR, MRR and the run's samples of each (e.g. every MRR trial's rx rate), and the
CPU (``host_cpu_model`` and ``host_cpu_id``: the embedded host's, a lab DUT's): a run is compared
with runs of its CPU only (:func:`same_host`); and the run's NF, frame size and declared
allowances (:data:`DECLARED`), with which ``dpgate history replay`` judges it again.
Runs with injected faults (``injected_sut_cpu_steal``) are never added, nor the
throughput of tests whose verdict trials a neighbour disturbed (others' CPU time,
``disturbance_foreign``, above ``disturbance_max``, default 10 %): its slowdown in the
history would widen the noise the check allows and hide the next real regression. Such a
test's ``cpp_at_load`` is added when its own trials were clean (``cpp_at_load_disturbance``,
:func:`cpp_clean`): a neighbour during the search says nothing of the cycles per packet
measured before or after it. A run measured in a slow host phase
(``disturbance`` above it from the speed probe alone) is added with that figure: its
``cpp_at_load`` (trials timed at full speed) is compared, its throughput is not
(:func:`slow_host`, ``dpgate.regression.compare``); so a host that stays slow for days
still builds a history for the one metric it can measure.
"""

from __future__ import annotations

import json
import os
import time
from typing import Dict, List, Optional, Sequence, Tuple, Union

from dpgate.exec.appendfile import append_line, read_lines
from dpgate.model.errors import ConfigError
from dpgate.model.record import F
from dpgate.outputs.results import load_records, test_id
from dpgate.telemetry.disturbance import DISTURBANCE_MAX
from dpgate.telemetry.placement import CPP_KEY, SCALED_KEY, rests_where

#: The metrics the regression check compares (and the history keeps).
#: cpp_at_load is lower-is-better: the comparison turns it around (regression/compare.py)
METRICS = ("ndr_pps", "pdr_pps", "mrr_pps", "cpp_at_load")
#: kept beside the metrics: how fast the SUT core ran for cpp_at_load (dpgate.exec.awake), and
#: a SUT's cpp_at_load with every trial scaled to a reference speed, which the
#: cpp_at_load check uses when it can (dpgate.telemetry.cpp_scaled, regression/compare.py)
CONTEXT = (
    "sut_core_speed",
    "disturbance",
    "disturbance_foreign",
    "core_speed_min",
    "cpp_at_load_scaled",
    "cpp_scaled_speed",
    "cpp_speed_exponent",  # figures scaled by another exponent are not compared (compare.py)
    "cpp_memory_exponent",  # ... nor figures scaled by the memory probe with others (cycles.py)
    "cpp_memory_speed_exponent",
    "cpp_scaled_memory_ns",
    "cpp_at_load_per_kernel",  # a polling SUT's busy cycles per kernel cycle (regression/cycles.py)
    "cpp_at_load_per_kernel_scaled",  # the same, every trial at the reference speed
    "cpp_kernel_speed_exponent",  # ... by this exponent: others are not compared
    "cpp_at_load_disturbance",  # others' share of a core in its own trials (a replay holds on it)
)
#: the allowances the run declared (the thresholds of its case and machine class), kept so
#: ``dpgate history replay`` judges each run as its gate did (dpgate.regression.replay)
DECLARED = (
    "regression_noise",
    "regression_mrr_noise",
    "regression_cpp_noise",
    "regression_cpp_scaled_noise",
    "regression_cpp_kernel_noise",
)
#: The cycles figures an entry may hold; with any of them the entry keeps ``cpp_at_load``.
CYCLES_KEYS = ("cpp_at_load", "cpp_at_load_scaled", "cpp_at_load_per_kernel", "cpp_at_load_per_kernel_scaled")
#: One run's value of a metric: a number, or its samples when the run measured several.
RunValue = Union[float, List[float]]


def history_path(store: str, testbed: str, longname: str) -> str:
    return os.path.join(store, testbed or "unknown", test_id(longname) + ".jsonl")


def read_history(store: str, testbed: str, longname: str) -> List[Dict]:
    path = history_path(store, testbed, longname)
    out = []  # complete lines only, under a shared flock: a concurrent append is never half-read
    for n, line in enumerate(read_lines(path), 1):
        if line.strip():
            try:
                entry = json.loads(line)
            except ValueError:
                raise ConfigError(f"line {n} is not JSON (corrupted history?)", path) from None
            if not isinstance(entry, dict):
                raise ConfigError(f"line {n} is not a JSON object (corrupted history?)", path)
            out.append(entry)
    return out


def same_host(hist: List[Dict], model: Optional[str], cpu: Optional[str] = None) -> Tuple[List[Dict], int]:
    """The history runs measured on CPU ``model`` (model name) and ``cpu`` (``host_cpu_id``,
    ``<vendor_id> family F model M``), and how many runs of other CPUs were left out. A run or
    entry that recorded neither (from before dpgate recorded it, or a testbed that cannot tell)
    matches on what the other side names; the id is compared where both sides have it, as a
    hypervisor may cut the model name to the vendor's line (``AMD EPYC`` on Zen 3 and Zen 4
    alike). The same SUT costs two VMs of one speed class differently (testpmd-mac ~11,000
    cycles a packet on the Zen 3 host, ~4,500 on the Xeon one): a CI pool that changes its
    hosts must not read the change as the SUT's. A run without either keeps them all.

    >>> h = [{"host_cpu_model": "A"}, {"host_cpu_model": "B"}, {"host_cpu_model": None}]
    >>> same_host(h, "A")
    ([{'host_cpu_model': 'A'}, {'host_cpu_model': None}], 1)
    >>> same_host(h, None)[1]
    0
    >>> z3 = {"host_cpu_model": "AMD EPYC", "host_cpu_id": "AuthenticAMD family 25 model 1"}
    >>> z4 = {"host_cpu_model": "AMD EPYC", "host_cpu_id": "AuthenticAMD family 25 model 17"}
    >>> old = {"host_cpu_model": "AMD EPYC"}
    >>> same_host([z3, z4, old], "AMD EPYC", "AuthenticAMD family 25 model 17") == ([z4, old], 1)
    True
    """
    if not model and not cpu:
        return list(hist), 0

    def mine(entry: Dict) -> bool:
        theirs_model, theirs_cpu = entry.get("host_cpu_model"), entry.get("host_cpu_id")
        if model and theirs_model and theirs_model != model:
            return False
        return not (cpu and theirs_cpu and theirs_cpu != cpu)

    kept = [h for h in hist if mine(h)]
    return kept, len(hist) - len(kept)


def run_value(entry: Dict, metric: str) -> Optional[RunValue]:
    """The value of ``metric`` in one history entry or record: its samples when several."""
    samples = (entry.get(F.SAMPLES) or {}).get(metric)
    if samples and len(samples) > 1:
        return [float(x) for x in samples]
    m = entry.get(F.METRICS, entry)
    v = m.get(metric)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def with_values(entries: Sequence[Dict], metric: str) -> Tuple[List[Dict], List[RunValue]]:
    """(the entries with a value of ``metric``, those values): a verdict's history and the
    entries whose times it spans (:func:`span_h`)."""
    pairs = [(e, v) for e in entries if (v := run_value(e, metric)) is not None]
    return [e for e, _ in pairs], [v for _, v in pairs]


def span_h(entries: Sequence[Dict]) -> Optional[float]:
    """Hours between the first and the last of ``entries`` (their ``time``, written as each run
    is added); None when fewer than two have one (``regression.classify.allowance``).

    >>> span_h([{"time": 1000.0}, {"time": 8200.0}, {}]), span_h([{"time": 1000.0}, {}])
    (2.0, None)
    """
    times = [
        float(t) for e in entries if isinstance(t := e.get("time"), (int, float)) and not isinstance(t, bool)
    ]
    return (max(times) - min(times)) / 3600 if len(times) >= 2 else None


def injected(rec: Dict) -> bool:
    """A run with a fault injected on purpose (``injected_sut_cpu_steal``, ``injected_cost``)."""
    return any(k.startswith("injected_") and v for k, v in (rec.get("metrics") or {}).items())


def disturbed(rec: Dict, disturbance_max: float = DISTURBANCE_MAX) -> bool:
    """A test whose verdict trials saw more than ``disturbance_max`` of a core used by others
    (``disturbance_foreign``; records from before the speed probe: ``disturbance``).

    >>> disturbed({"metrics": {"disturbance": 0.31}}), disturbed({"metrics": {"disturbance": 0.02}})
    (True, False)
    >>> disturbed({"metrics": {"disturbance": 0.5, "disturbance_foreign": 0.03}})  # a slow host
    False
    """
    m = rec.get("metrics") or {}
    d = m.get("disturbance_foreign", m.get("disturbance"))
    return isinstance(d, (int, float)) and d > disturbance_max


def cpp_clean(rec: Dict, disturbance_max: float = DISTURBANCE_MAX) -> bool:
    """A test whose ``cpp_at_load`` trials others' CPU time left alone
    (``cpp_at_load_disturbance`` measured and within ``disturbance_max``), whatever its
    throughput trials saw.

    >>> cpp_clean({"metrics": {"cpp_at_load": 5900.0, "cpp_at_load_disturbance": 0.02}})
    True
    >>> cpp_clean({"metrics": {"cpp_at_load": 5900.0}}), cpp_clean({"metrics": {"cpp_at_load_disturbance": 0.0}})
    (False, False)
    """
    m = rec.get("metrics") or {}
    d = m.get("cpp_at_load_disturbance")
    return (
        isinstance(m.get("cpp_at_load"), (int, float))
        and isinstance(d, (int, float))
        and d <= disturbance_max
    )


def slow_host(entry: Dict, disturbance_max: float = DISTURBANCE_MAX) -> bool:
    """A history entry measured in a slow host phase (disturbed, though not by others' time):
    its throughput says how fast the host was, not the SUT.

    >>> slow_host({"disturbance": 0.5, "disturbance_foreign": 0.02}), slow_host({"ndr_pps": 1.0})
    (True, False)
    """
    d = (entry.get("metrics") or entry).get("disturbance")
    return isinstance(d, (int, float)) and d > disturbance_max


def add_to_history(
    outdir: str,
    store: str,
    commit: Optional[str] = None,
    only_passed: bool = False,
    disturbance_max: float = DISTURBANCE_MAX,
) -> int:
    """Append the run's tests to the store (PASS and FAIL, or PASS only); never injected runs
    or disturbed tests (of a test disturbed in its throughput trials only: its cpp_at_load)."""
    commit = (
        commit
        or os.environ.get("DPGATE_COMMIT")
        or os.environ.get("CI_COMMIT_SHA")
        or os.environ.get("GIT_COMMIT")
        or os.environ.get("GITHUB_SHA")
        or "unknown"
    )
    n = 0
    for rec in load_records(outdir):
        m = rec.get(F.METRICS, {})
        allowed = ("PASS",) if only_passed else ("PASS", "FAIL")
        if rec.get(F.STATUS) not in allowed or "ndr_pps" not in m or injected(rec):
            continue
        keep: Tuple[str, ...] = METRICS
        if disturbed(rec, disturbance_max):
            if not cpp_clean(rec, disturbance_max):
                continue
            keep = ("cpp_at_load",)  # its throughput is the neighbour's; its cpp_at_load is not
        path = history_path(store, rec.get(F.TESTBED, ""), rec[F.LONGNAME])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        entry = {
            "commit": rec.get(F.COMMIT) or commit,
            "time": rec.get(F.STARTED, time.time()),
            "sut_version": rec.get(F.SUT_VERSION),
            "limited_by": m.get("limited_by"),
            "host_cpu_model": m.get("host_cpu_model"),
            "host_cpu_id": m.get("host_cpu_id"),
            "mrr_limited_by": m.get("mrr_limited_by"),
            "nf": rec.get(F.NF),
            "frame_size": m.get("frame_size"),
            **{k: m[k] for k in keep + CONTEXT + DECLARED if isinstance(m.get(k), (int, float))},
        }
        # each cycles figure by the placement of the trials it rests on (telemetry.placement):
        # a mix of the cores' two placements compares with nothing, a far one with far ones
        for k, key in (("cpp_at_load", CPP_KEY), ("cpp_at_load_scaled", SCALED_KEY)):
            where = rests_where(m, key)
            if where == "mixed":
                entry.pop(k, None)
            elif where in ("near", "far") and k in entry:
                entry[key] = where
        cycles = any(k in entry for k in CYCLES_KEYS)
        keep = tuple(k for k in keep if k in entry or (k == "cpp_at_load" and cycles))
        if not keep:  # nothing of it left to compare with
            continue
        samples = {k: v for k, v in (rec.get(F.SAMPLES) or {}).items() if k in keep and k in entry}
        if samples:
            entry["samples"] = samples
        append_line(path, json.dumps(entry))  # flock'd: concurrent runs never tear the file
        n += 1
    return n
