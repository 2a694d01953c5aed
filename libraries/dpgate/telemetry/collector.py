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
NotSupported values without running anything: never a fake number. ``Plan`` and ``Capture``
(turning raw outputs into values) are ``dpgate.telemetry.capture`` (re-exported here).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple

from dpgate.model.protocols import Measure

from . import NotSupported, TelemetryError, TelemetryRecord
from ._run import run_tool
from .capture import PERF_EVENTS, PERF_TMAM_OPTIONS, PROBE_S, TMAM_METHODS, Capture, Plan
from .pcm import memory_argv, pcie_argv, probe_pcm
from .perf import TMAM_RAW_EVENTS, parse_perf_stat, perf_stat_argv, probe_perf
from .perf_records import Metric
from .tmam import l1_name

__all__ = [
    "PERF_EVENTS",
    "PERF_TMAM_OPTIONS",
    "PROBE_S",
    "TMAM_METHODS",
    "Capture",
    "Plan",
    "TelemetryCollector",
    "capture_during_trial",
    "TRIAL_S",
    "SETTLE_S",
    "WINDOW_S",
]


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
        res = run_tool(
            self.node, perf_stat_argv(self.cpus, events, PROBE_S, extra=extra, pid=self.pid), timeout=20
        )
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
                futs = {
                    name: pool.submit(run_tool, self.node, argv, duration_s + 30)
                    for name, argv in cmds.items()
                }
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
