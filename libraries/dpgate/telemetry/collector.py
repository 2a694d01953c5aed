"""Capture telemetry on the SUT cores during a trial: perf stat (IPC, IPP, CPP, cache
misses, TMAM level 1), pcm-pcie (DDIO, PCIe bytes, MMIO writes) and pcm-memory, all over
the same window, on this machine or on a lab DUT through a dpgate.exec.remote node.

    c = TelemetryCollector([2, 3])                   # this machine (LocalNode)
    c = TelemetryCollector([2, 3], node=SshNode(..)) # a lab DUT
    c.probe()                       # (perf reason or None, pcm-pcie reason or None)
    rec = c.measure(2.0, packets)   # TelemetryRecord: numbers, or NotSupported with reasons

``probe()`` also chooses how TMAM level 1 is measured, first that works of:
``perf stat -M TopdownL1`` (perf's metric groups: Icelake and later, and Skylake-era CPUs
with current perf), ``perf stat --topdown``, pmu-tools ``toplev -l1`` when installed, and
the raw events of seed 000's equations. Tools that cannot count on the node give
NotSupported values without running anything: never a fake number.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from dpgate.model.protocols import Measure

from . import METRIC_KEYS, TMAM_KEYS, NotSupported, TelemetryError, TelemetryRecord
from ._run import run_tool
from .pcm import (
    mem_bytes_per_packet,
    memory_argv,
    parse_memory,
    parse_pcie,
    pcie_argv,
    pcie_per_packet,
    probe_pcm,
    reason_from_output,
)
from .perf import (
    CACHE_EVENTS,
    TMAM_RAW_EVENTS,
    derive,
    not_installed,
    parse_perf_stat,
    perf_stat_argv,
    probe_perf,
)
from .perf_records import Metric
from .tmam import Tmam, l1_name, parse_toplev_csv, tmam_from_events

PERF_EVENTS = ("cycles", "instructions") + CACHE_EVENTS
PROBE_S = 0.05
#: TMAM methods in the order they are tried.
TMAM_METHODS = ("perf-metric-TopdownL1", "perf-topdown", "toplev", "perf-raw-events")
#: perf options of each perf TMAM method; --topdown implies --metric-only (perf-stat.txt), which
#: would drop the cycles/instructions counts: --no-metric-only keeps the event lines.
PERF_TMAM_OPTIONS = {"perf-metric-TopdownL1": ("-M", "TopdownL1"), "perf-topdown": ("--topdown", "--no-metric-only")}


@dataclass(frozen=True)
class Plan:
    """What probe() found: a reason per tool that cannot count, and the TMAM method."""

    perf: Optional[NotSupported]
    pcie: Optional[NotSupported]
    memory: Optional[NotSupported]
    tmam: Optional[NotSupported]
    tmam_method: Optional[str] = None
    toplev: Optional[str] = None
    cores: Tuple[str, ...] = ()

    @property
    def anything(self) -> bool:
        return self.perf is None or self.pcie is None or self.memory is None


@dataclass(frozen=True)
class Capture:
    """Raw tool outputs of one window; ``record(packets)`` derives the per-packet values."""

    plan: Plan
    duration_s: float
    outputs: Dict[str, Any] = field(default_factory=dict)  # tool -> Result or NotSupported
    slots_per_cycle: int = 4

    def record(self, packets: float) -> TelemetryRecord:
        p = self.plan
        rec = TelemetryRecord.unsupported(p.perf, p.pcie, p.memory, p.tmam)
        values: Dict[str, Any] = dict(rec.values)
        info = {"telemetry_window_s": f"{self.duration_s:g}"} if self.outputs else {}
        pps = packets / self.duration_s if self.duration_s > 0 else 0.0
        no_pkts = NotSupported("no packets forwarded during the capture window")
        if "perf" in self.outputs:
            values.update(self._perf(self.outputs["perf"], packets))
            for key in ("ipc_pmu", "tmam_pmu"):  # hybrid CPUs: which core PMU the values are from
                if key in values:
                    info[key] = str(values.pop(key))
        if "toplev" in self.outputs:
            values.update(self._toplev(self.outputs["toplev"]))
        if p.tmam_method and ("toplev" in self.outputs or ("perf" in self.outputs and p.tmam_method != "toplev")):
            info["tmam_source"] = p.tmam_method
        if "pcm-pcie" in self.outputs:
            values.update(
                self._pcm(
                    "pcm-pcie",
                    [k for k in METRIC_KEYS if k.startswith(("ddio", "pcie", "wil"))],
                    lambda text: pcie_per_packet(parse_pcie(text, interval_s=self.duration_s), pps),
                    pps,
                    no_pkts,
                )
            )
        if "pcm-memory" in self.outputs:
            values.update(
                self._pcm(
                    "pcm-memory",
                    ["mem_bytes_per_packet"],
                    lambda text: {"mem_bytes_per_packet": mem_bytes_per_packet(parse_memory(text), pps)},
                    pps,
                    no_pkts,
                )
            )
        return TelemetryRecord(values, info)

    def _pcm(self, tool: str, keys: List[str], derive: Any, pps: float, no_pkts: NotSupported) -> Dict[str, Any]:
        """Values of one pcm tool's output, or its reason (tool's own, no packets, unparsable) for ``keys``."""
        out = self.outputs[tool]
        reason = (
            out
            if isinstance(out, NotSupported)
            else reason_from_output((out.stdout or "") + (out.stderr or ""), out.returncode, tool)
        )
        if reason is None and not pps > 0:
            reason = no_pkts
        if reason is None:
            try:
                return dict(derive(out.stdout))
            except TelemetryError as err:
                reason = NotSupported(f"{tool} output not understood: {err}")
        return {k: reason for k in keys}

    def _perf(self, out: Any, packets: float) -> Dict[str, Any]:
        keys = ["ipc", "ipp", "cpp_measured", "cache_misses_per_packet", "llc_load_misses_per_packet"]
        method = self.plan.tmam_method
        if method and method.startswith("perf"):
            keys += list(TMAM_KEYS)
        if isinstance(out, NotSupported):
            return {k: out for k in keys}
        if out.returncode != 0:
            tail = (out.stderr or out.stdout or "").strip().splitlines()[-1:] or ["no output"]
            why = not_installed(out) or NotSupported(f"perf stat failed (exit {out.returncode}): {tail[0]}")
            return {k: why for k in keys}
        try:
            stat = parse_perf_stat(out.stderr)
        except TelemetryError as err:
            return {k: NotSupported(f"perf stat output not understood: {err}") for k in keys}
        vals: Dict[str, Any] = dict(derive(stat, packets))
        if stat.ipc_pmu:
            vals["ipc_pmu"] = stat.ipc_pmu
        if method and method.startswith("perf"):
            try:
                pmu: Optional[str] = None
                if method == "perf-raw-events":
                    missing = [e for e in TMAM_RAW_EVENTS if e in stat.unsupported]
                    if missing:
                        raise TelemetryError(f"{', '.join(missing)} not counted")
                    tmam: Optional[Tmam] = tmam_from_events(stat.counts, self.slots_per_cycle)
                else:
                    tmam, pmu = stat.tmam_with_pmu()
                if tmam is None:
                    raise TelemetryError("perf printed no level-1 topdown metrics")
                if pmu:
                    vals["tmam_pmu"] = pmu
                vals.update(tmam.as_dict())
            except TelemetryError as err:
                vals.update({k: NotSupported(f"TMAM ({method}): {err}") for k in TMAM_KEYS})
        return vals

    @staticmethod
    def _toplev(out: Any) -> Dict[str, Any]:
        if isinstance(out, NotSupported):
            return {k: out for k in TMAM_KEYS}
        try:
            return dict(parse_toplev_csv((out.stderr or "") + "\n" + (out.stdout or "")).as_dict())
        except TelemetryError as err:
            why = f"toplev failed (exit {out.returncode}): {err}" if out.returncode else f"toplev: {err}"
            return {k: NotSupported(why) for k in TMAM_KEYS}


class TelemetryCollector:
    """perf and pcm on ``cpus`` (the SUT's data-plane cores) of ``node`` (default: here).

    ``pid`` counts perf on that process instead of the cores. ``slots_per_cycle`` is the
    TMAM issue width for the raw-event equations (4 on Haswell..Cascade Lake, the CPUs
    whose perf has no topdown metrics). ``pcm=False`` skips pcm-pcie and pcm-memory.
    """

    def __init__(
        self,
        cpus: Sequence[int],
        node: Any = None,
        *,
        pid: Optional[int] = None,
        slots_per_cycle: int = 4,
        pcm: bool = True,
        toplev: bool = True,
    ):
        self.cpus = [int(c) for c in cpus]
        if not self.cpus and pid is None:
            raise TelemetryError("telemetry needs the SUT's cpus (or a pid) to count on")
        if node is None:
            from ._run import local_node

            node = local_node()
        self.node = node
        self.pid = pid
        self.slots_per_cycle = int(slots_per_cycle)
        self.use_pcm = pcm
        self.use_toplev = toplev
        self._plan: Optional[Plan] = None

    # -- probing ---------------------------------------------------------------------------
    def probe(self) -> Tuple[Optional[NotSupported], Optional[NotSupported]]:
        """(perf reason, pcm-pcie reason): None where the tool can count. Cached."""
        plan = self.plan()
        return plan.perf, plan.pcie

    @property
    def supported(self) -> bool:
        return self.plan().anything

    def plan(self) -> Plan:
        if self._plan is None:
            self._plan = self._probe()
        return self._plan

    def _probe(self) -> Plan:
        perf = probe_perf(self.node, self.cpus, self.pid)
        off = NotSupported("pcm disabled for this collector")
        pcie = probe_pcm(self.node, "pcm-pcie") if self.use_pcm else off
        memory = probe_pcm(self.node, "pcm-memory") if self.use_pcm else off
        tmam, method, toplev, cores = perf, None, None, ()
        if perf is None:
            tmam, method, toplev, cores = self._probe_tmam()
        return Plan(perf, pcie, memory, tmam, method, toplev, cores)

    def _perf_try(self, extra: Sequence[str], events: Sequence[str] = PERF_EVENTS) -> Optional[str]:
        """None when this perf stat variant runs here, else perf's complaint."""
        res = run_tool(self.node, perf_stat_argv(self.cpus, events, PROBE_S, extra=extra, pid=self.pid), timeout=20)
        if isinstance(res, NotSupported):
            return res.reason
        text = (res.stderr or "") + (res.stdout or "")
        for needle in (
            "Cannot find metric or group",
            "does not support topdown",
            "event syntax error",
            "Topdown requested",
            "not supported",
        ):
            if needle in text and (needle != "not supported" or res.returncode != 0):
                return next((ln.strip() for ln in text.splitlines() if needle in ln), needle)
        if res.returncode != 0:
            return (text.strip().splitlines()[-1:] or [f"exit {res.returncode}"])[0]
        try:
            stat = parse_perf_stat(res.stderr)
        except TelemetryError as err:
            return str(err)
        missing = [e for e in events if e in TMAM_RAW_EVENTS and e in stat.unsupported]
        if missing:
            return f"{', '.join(missing)} <not supported>"
        if extra and not any(isinstance(r, Metric) and l1_name(r.name) for r in stat.records):
            return "perf printed no level-1 topdown metrics"
        return None

    def _probe_tmam(self):
        tried: List[str] = []
        for method in ("perf-metric-TopdownL1", "perf-topdown"):
            extra = list(PERF_TMAM_OPTIONS[method])
            why = self._perf_try(extra)
            if why is None:
                return None, method, None, ()
            tried.append(f"perf {' '.join(extra)}: {why}")
        if self.use_toplev and self.pid is None:
            res = run_tool(self.node, ["which", "toplev", "toplev.py"], timeout=10)
            path = None if isinstance(res, NotSupported) else next(iter((res.stdout or "").split()), None)
            if path:
                cores = self._cores()
                if isinstance(cores, NotSupported):
                    tried.append(f"toplev: {cores.reason}")
                else:
                    return None, "toplev", path, cores
            else:
                tried.append("toplev: not installed (pmu-tools)")
        why = self._perf_try([], PERF_EVENTS + TMAM_RAW_EVENTS)
        if why is None:
            return None, "perf-raw-events", None, ()
        tried.append(f"raw events {', '.join(TMAM_RAW_EVENTS)}: {why}")
        return NotSupported("TMAM level 1 unavailable: " + "; ".join(tried)), None, None, ()

    def _cores(self):
        """``S<socket>-C<core>`` of each SUT cpu, for toplev --core (from sysfs on the node)."""
        out = []
        for cpu in self.cpus:
            base = f"/sys/devices/system/cpu/cpu{cpu}/topology"
            res = run_tool(self.node, ["cat", f"{base}/physical_package_id", f"{base}/core_id"], timeout=10)
            if isinstance(res, NotSupported):
                return res
            parts = (res.stdout or "").split()
            if res.returncode != 0 or len(parts) != 2 or not all(p.isdigit() for p in parts):
                return NotSupported(f"cannot read the topology of cpu{cpu} from {base}")
            core = f"S{parts[0]}-C{parts[1]}"
            if core not in out:
                out.append(core)
        return tuple(out)

    # -- capturing -------------------------------------------------------------------------
    def commands(self, duration_s: float) -> Dict[str, List[str]]:
        """argv of every tool that runs during a window of ``duration_s`` (after probe)."""
        plan = self.plan()
        cmds: Dict[str, List[str]] = {}
        if plan.perf is None:
            extra = list(PERF_TMAM_OPTIONS.get(plan.tmam_method or "", ()))
            events = PERF_EVENTS + (TMAM_RAW_EVENTS if plan.tmam_method == "perf-raw-events" else ())
            cmds["perf"] = perf_stat_argv(self.cpus, events, duration_s, extra=extra, pid=self.pid)
        if plan.tmam_method == "toplev" and plan.toplev:
            cmds["toplev"] = [
                plan.toplev,
                "-l1",
                "-v",
                "--no-desc",
                "-x,",
                "--core",
                ",".join(plan.cores),
                "sleep",
                f"{duration_s:g}",
            ]
        if plan.pcie is None:
            cmds["pcm-pcie"] = pcie_argv(duration_s)
        if plan.memory is None:
            cmds["pcm-memory"] = memory_argv(duration_s)
        return cmds

    def capture(self, duration_s: float) -> Capture:
        """Run every usable tool at once over one window of ``duration_s``; raw outputs."""
        if not duration_s > 0:
            raise TelemetryError(f"capture window must be > 0 s, got {duration_s!r}")
        cmds = self.commands(duration_s)
        outputs: Dict[str, Any] = {}
        if cmds:
            with ThreadPoolExecutor(max_workers=len(cmds), thread_name_prefix="telemetry") as pool:
                futs = {name: pool.submit(run_tool, self.node, argv, duration_s + 30) for name, argv in cmds.items()}
                outputs = {name: f.result() for name, f in futs.items()}
        return Capture(self.plan(), float(duration_s), outputs, self.slots_per_cycle)

    def measure(self, duration_s: float, packets: float) -> TelemetryRecord:
        """Count for ``duration_s`` while traffic runs; ``packets`` forwarded meanwhile."""
        if not self.supported:
            return Capture(self.plan(), float(duration_s)).record(packets)
        return self.capture(duration_s).record(packets)


#: Telemetry trial: traffic for 5 s; counters over 2 s of it after 1 s of steady state,
#: which leaves 2 s for the tools' own start-up (pcm programs the uncore before sampling).
TRIAL_S, SETTLE_S, WINDOW_S = 5.0, 1.0, 2.0


def capture_during_trial(
    collector: TelemetryCollector,
    measure: Measure,
    load: float,
    suffix: str = "",
    trial_s: float = TRIAL_S,
    settle_s: float = SETTLE_S,
    window_s: float = WINDOW_S,
) -> Dict[str, Any]:
    """Telemetry metrics of one trial at ``load`` (``measure(load, duration)``, any generator).

    The trial runs in a thread; counting starts ``settle_s`` into it (steady state) and lasts
    ``window_s``, ending before the traffic does. Packets in the window come from the
    trial's *received* count, not the intended load. Keys get ``suffix`` (``_pdr``).
    A host that cannot count runs no trial: the tools' reasons (with a suffix, one line
    pointing at the unsuffixed values). A telemetry tool failing is reported under
    ``telemetry_error`` (the test's gates then see "not supported"), never fatal; a
    failing trial is re-raised, since that is the generator's or the SUT's failure.
    """
    import threading
    import time

    try:
        supported = collector.supported
    except Exception as err:  # probing runs tools on the (remote) node
        return {f"telemetry_error{suffix}": f"probe failed: {err}"}
    if not supported:
        if suffix:
            return {f"telemetry{suffix}": "not supported (same reasons as the NDR values)"}
        return collector.measure(window_s, 0.0).to_metrics()
    box: Dict[str, Any] = {}

    def trial() -> None:
        try:
            box["result"] = measure(load, trial_s)
        except BaseException as err:  # re-raised below, in the caller's thread
            box["error"] = err

    runner = threading.Thread(target=trial, name="telemetry-trial", daemon=True)
    runner.start()
    time.sleep(settle_s)
    capture = None
    try:
        capture = collector.capture(window_s)
    except Exception as err:
        box["telemetry_error"] = err
    finally:
        runner.join()
    if "error" in box:
        raise box["error"]
    if capture is None:
        return {f"telemetry_error{suffix}": str(box["telemetry_error"])}
    res = box["result"]
    packets = res.rx_packets * window_s / (res.actual_duration_s or trial_s)
    rec = capture.record(packets)
    return (rec.with_suffix(suffix) if suffix else rec).to_metrics()
