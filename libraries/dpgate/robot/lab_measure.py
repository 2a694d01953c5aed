"""SUT, DUT and traffic plumbing of :class:`dpgate.robot.lab.LabTestbed` (no keywords here).

``LabPlumbing`` holds what the lab keywords share: the topology and the SSH node of the
DUT (held under the DUT lock), starting, stopping and health-checking the SUT, one TRex
generator per traffic kind and frame size, the DUT core frequency for CPP, and the
trials after a search (latency at fractions of PDR, perf/pcm telemetry on the DUT).
``LabTestbed`` inherits it; tests replace the two seams ``_open_node`` and
``_make_generator``.

Example (what ``LabTestbed`` does for one search)::

    gen = self._gen("64B")          # TrexGenerator for the NF's traffic kind
    self._active(gen)               # one TRex session at a time
    hz, source = self.cpu_freq()    # (2.1e9, "declared")
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from robot.api import logger

from dpgate.config.topology import load_topology
from dpgate.config.units import frame_size_tag, parse_frame_size
from dpgate.exec.cpu import detect_cpu_hz
from dpgate.exec.lock import default_wait, to_stderr
from dpgate.exec.nodelock import NodeLock, lab_dut_lock
from dpgate.exec.remote import node_for
from dpgate.model.errors import ConfigError, DpgateError, SutError
from dpgate.model.protocols import TrafficGenerator
from dpgate.model.trial import TrialResult
from dpgate.robot.base import TestbedKeywords
from dpgate.search.latency import latency_trials
from dpgate.telemetry.collector import TelemetryCollector, capture_during_trial
from dpgate.testbeds.lab.nfs import lab_nf, make_sut
from dpgate.testbeds.lab.service import unit_log
from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex import TrexGenerator
from dpgate.traffic.trex.server import RunningTrex


class LabPlumbing(TestbedKeywords):
    """The lab testbed's state and helpers; :class:`~dpgate.robot.lab.LabTestbed` adds the keywords."""

    topology_path: str
    telemetry: bool
    latency_pps: float
    flows: Optional[int]
    topology: Any
    node: Any
    _dut_lock: Optional[NodeLock]
    cpus: Optional[list]
    cores: Any
    nf: Optional[str]
    sut: Any
    sut_key: Optional[Tuple[str, int, bool]]
    sut_version_text: str
    generators: Dict[Tuple[str, str], Any]
    _hz: Optional[Tuple[float, str]]
    _collector: Any
    _collector_cpus: List[int]

    # -- seams (tests override these two) --------------------------------------------
    def _open_node(self) -> Any:
        return node_for(self._topo().dut, log=logger.debug)

    def _make_generator(self, profile: Any) -> Any:
        topo = self._topo()
        # a TRex server dpgate started for this lab (lab on one machine): its death ends a trial at once
        running = RunningTrex.attach(getattr(topo, "run_dir", None))
        return TrexGenerator(topo, profile, latency_pps=self.latency_pps, trex_server=running)

    # -- topology and DUT ---------------------------------------------------------------
    def _topo(self):
        if self.topology is None:
            topo = load_topology(self.topology_path)
            if topo.kind == "embedded":
                raise ConfigError(
                    "LabTestbed needs a lab topology (kind: lab-2node), got an embedded one: "
                    "use dpgate.robotlib.EmbeddedTestbed for it",
                    self.topology_path,
                    "kind",
                )
            self.topology = topo
        return self.topology

    def _dut(self) -> Any:
        if self.node is None:
            node, topo = self._open_node(), self._topo()  # owned by this run until teardown:
            self._dut_lock = lab_dut_lock(
                node,
                getattr(topo.dut, "name", "DUT1"),
                topo.prefix,
                bool(getattr(topo.dut, "namespace", None)),
            ).acquire(default_wait(), to_stderr)
            self.node = node
        return self.node

    def _start_sut(self, nf: str) -> None:
        self.sut = make_sut(nf, self._dut(), self._topo(), self.cores, flows=self.flows)
        self.sut.configure()
        self.sut.start()
        try:
            self.sut_version_text = self.sut.version()
        except DpgateError as err:
            self.sut_version_text = f"unknown ({err})"
        logger.info(f"SUT {nf} started on {self.cores.tag}: {self.sut_version_text}")

    def _stop_sut(self) -> None:
        sut, self.sut, self.sut_key = self.sut, None, None
        if sut is not None:
            sut.stop()

    def _check_sut_alive(self) -> None:
        """SutError with the unit's last log lines when the SUT's process is not running (a
        systemd unit, or start-stop-daemon's pid on a DUT without systemd: the driver's ``alive``)."""
        unit = getattr(self.sut, "unit", None)
        if self.sut is None or not unit:
            return
        alive = getattr(self.sut, "alive", None)
        state = (
            alive()
            if callable(alive)
            else self._dut().run(["systemctl", "is-active", unit], check=False, timeout=15).stdout.strip()
        )
        if state == "active":
            return

        self.sut_key = None  # the next bring-up restarts it
        tail = " | ".join(unit_log(self._dut(), unit).strip().splitlines()[-5:])
        raise SutError(
            f"SUT {self.nf} ({unit}) is not running any more ({state or 'no state'})"
            + (f": {tail}" if tail else "")
        )

    def _sut_version(self) -> str:
        return self.sut_version_text

    # -- generators -----------------------------------------------------------------------
    def _gen(self, frame_size: str):
        if self.nf is None:
            raise ConfigError("lab testbed is not up: call 'Bring Up Lab Testbed' first")
        kind = lab_nf(self.nf).traffic
        tag = frame_size_tag(parse_frame_size(frame_size))
        key = (kind, tag)
        if key not in self.generators:
            gen = self._make_generator(
                make_profile(kind, parse_frame_size(frame_size), self.flows, bidirectional=True)
            )
            if not gen.max_pps:
                raise ConfigError(
                    "TG ports need speed (e.g. 10Gbps) or pps_limit so the search knows the maximum rate",
                    self._topo().source,
                    "nodes.TG.interfaces",
                )
            self.generators[key] = gen
        return self.generators[key]

    def _active(self, gen) -> None:
        """One TRex session at a time: the others release the ports first."""
        for other in self.generators.values():
            if other is not gen and getattr(other, "connected", False):
                other.close()

    def _measure(self, gen: TrafficGenerator, load: float, duration: float) -> TrialResult:
        result = gen.measure(load, duration)
        self._on_trial(result)
        return result

    def cpu_freq(self) -> Tuple[float, str]:
        """(Hz, source) of the DUT cores for CPP: declared in the topology, else detected on the DUT."""
        if self._hz is None:
            cf = self._topo().dut.cpu_freq
            if cf.source == "declared" and cf.hz:
                self._hz = (cf.hz, "declared")
            else:
                cpu = self.cores.workers[0] if self.cores and self.cores.workers else 0
                self._hz = (detect_cpu_hz(self._dut(), cpu), "detected")
        return self._hz

    # -- latency and telemetry trials ---------------------------------------------------
    def _latency_after(self, gen, pdr: float) -> Tuple[Optional[Dict[str, Any]], str]:
        """CSIT's latency trials after the search: 5 s at 90, 50 and 10 % of PDR with the TRex
        latency streams; per load the per-direction min/avg/max and hdrh percentiles (us)."""
        if self.latency_pps <= 0:
            return None, "not measured: import LabTestbed with latency_pps=<pps per direction> (LATENCY_PPS)"
        if pdr <= 0:
            return None, "not measured: PDR is 0"

        def one(load: float, duration: float):
            return self._measure(gen, load, duration).details.get("latency")

        out = {
            f"{round(load / pdr * 100)}% PDR": {"load_pps": round(load, 1), "directions": lat}
            for load, lat in latency_trials(one, pdr)
        }
        return out, (
            f"TRex latency streams at {self.latency_pps:g} pps per direction, 5 s trials at 90/50/10 % of PDR (CSIT)"
        )

    def _telemetry_at(self, gen, load: float, suffix: str = "") -> Dict[str, Any]:
        """perf/pcm on the DUT worker CPUs (run through the DUT's node) during a trial at
        ``load`` (NDR; PDR with ``_pdr`` keys), see
        ``dpgate.telemetry.collector.capture_during_trial``: reasons without a trial on DUTs
        without counters; a telemetry failure is reported, not fatal."""

        workers = list(self.cores.workers)
        if self._collector is None or self._collector_cpus != workers:
            self._collector = TelemetryCollector(workers, node=self._dut())  # perf and pcm on the DUT
            self._collector_cpus = workers
        metrics = capture_during_trial(self._collector, gen.measure, load, suffix)
        for key, value in metrics.items():
            if key.startswith("telemetry_error"):
                logger.warn(f"telemetry on the DUT failed: {value}")
        return metrics
