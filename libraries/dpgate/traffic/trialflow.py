"""One embedded trial, whatever sends the frames: the flow both embedded generators share.

``EmbeddedGenerator.measure(load_pps, duration_s) -> TrialResult`` is the seam every search
uses. ``load_pps`` is the aggregate over directions (bidirectional: half per port).
A generator subclass only says how frames are sent (:class:`~dpgate.traffic.tcpreplay.
TcpreplayGenerator`: one tcpreplay per direction and trial; :class:`~dpgate.traffic.dpgen.
DpgenGenerator`: one persistent ``dpgen`` per session):

* ``_send(plan, clock)``: send ``plan.count`` frames per direction at ``plan.per_dir_pps``,
  return once they are sent (or cut at the deadline); a dead or hung generator raises
  :class:`~dpgate.model.errors.TrialError`;
* ``_report(plan)``: the generator's own account (:class:`SendReport`);
* ``_tg_pids()``: the generator's processes, whose CPU time is the TG's own.

Trial discipline:

1. read port counters (TG tx, TG rx) and SUT drop counters;
2. send, pinned to the TG cpus; a generator that falls behind is cut at the deadline
   (it shows as shortfall and never stretches the trial);
3. wait for late packets: poll the rx counters until they stop moving (settle), so nothing
   in flight is counted as lost (frames later still: the next trial's ``late_after_last_settle``);
4. loss = intended - received; ``tg_shortfall`` = intended - sent; when the shortfall
   happens at a load at or above the calibrated generator ceiling, ``limited_by`` is
   ``"generator"``. A lossy trial whose cores were disturbed (others' CPU time, or a slow host
   phase read by ``dpgate.exec.speedprobe`` around it) is measured again unless it lasts.

>>> TrialPlan(per_dir_pps=50e3, count=50_000, duration_s=1.0, directions=2).intended
100000
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from dpgate.exec.cpu import busy_ratio, cpu_times
from dpgate.exec.speedprobe import TrialSpeeds, slow_share
from dpgate.exec.stopped import stopped_once
from dpgate.exec.xcore import TrialPlacement
from dpgate.model.errors import ConfigError
from dpgate.model.ndrpdr import CEILING_MARGIN
from dpgate.model.trial import LIMITED_BY_GENERATOR, TrialResult
from dpgate.telemetry.cpuacct import CpuAccount, pids_in_netns
from dpgate.telemetry.neighbour import NeighbourWatch

from .pcap import frames, write_pcap
from .profiles import Profile, directions_for
from .steps import Phases, TrialSteps, delta
from .sutcore import MODERATION_FRAMES, SutCore  # noqa: F401 (MODERATION_FRAMES: re-exported)

#: Quiet time (s) after which late packets are given up for lost (see ``_settle``): late
#: frames on veth arrived within a few ms of the generator's stop in measured trials.
SETTLE_S = 0.02
#: Largest foreign share of a TG/SUT core (0..1) a trial may see before it is measured again.
DISTURBANCE_MAX = 0.10
#: How many times a disturbed trial is measured again before its result is kept as it is.
REMEASURE = 2
#: Round trips of the cross-core probe before and after each trial: ~0.2 ms near, 1-1.6 ms far.
XCORE_ROUNDS = 2000


@dataclass
class TrialPlan:
    """What one trial sends: ``count`` frames per direction at ``per_dir_pps`` each."""

    per_dir_pps: float
    count: int
    duration_s: float
    directions: int
    load_pps: float = 0.0

    @property
    def intended(self) -> int:
        return self.count * self.directions

    @property
    def grace_s(self) -> float:
        """How long after ``duration_s`` a generator still short of its count is cut."""
        return 0.005 + 0.5 / self.per_dir_pps


@dataclass
class SendReport:
    """The generator's own account of a trial (None: it did not say)."""

    seconds: float
    retried: Optional[int] = None
    failed: Optional[int] = None
    cut: int = 0
    exited: bool = True


class EmbeddedGenerator(TrialSteps, SutCore):
    """Real frames through real SUTs. ``sut`` (optional) is checked for liveness and asked for
    per-trial counters; ``max_pps`` is the calibrated ceiling once :meth:`calibrate` ran."""

    #: the generator's name in messages and the ``failed`` detail key
    name = "generator"

    def __init__(
        self,
        testbed,
        profile: Profile,
        sut=None,
        settle_s: float = SETTLE_S,
        budget_s: float = 10.0,
        on_trial: Optional[Callable[[TrialResult], None]] = None,
        disturbance_max: Optional[float] = DISTURBANCE_MAX,
        remeasure: int = REMEASURE,
    ):
        self.tb, self.profile = testbed, profile
        self.sut = sut
        self.settle_s = settle_s
        self.budget_s = budget_s
        self.on_trial = on_trial
        self.max_pps: Optional[float] = None
        self.calibration: Dict[str, Any] = {}
        self._pcaps: Optional[List[str]] = None
        self._procs: List = []
        self._exiting: List = []
        self._trial_no = 0
        self.disturbance_max = disturbance_max
        self.remeasure = int(remeasure)
        self.neighbour = NeighbourWatch()  # a lasting neighbour's trials are not measured again
        #: also measure again a disturbed trial that lost nothing (e.g. for cycles per packet)
        self.remeasure_clean = False
        #: pids whose CPU time counts as the SUT's (e.g. an injected CPU stealer)
        self.extra_sut_pids: List[int] = []
        #: pids of loops holding the SUT cores awake (ours, not the SUT's), see hold_sut_awake
        self.awake_pids: List[int] = []
        self._awake: Optional[Any] = None  # the CoreAwake holding the SUT cores
        self._moderated = 0.0
        #: the fastest SUT core speed (awake loop, M it/s) seen so far (telemetry.disturbance)
        self.core_speed_best: Optional[float] = None
        #: full core speed (M it/s, the case's ``core_speed``) the probe between trials is
        #: judged against; None: this session's own readings (``dpgate.exec.speedprobe``)
        self.core_speed_ref: Optional[float] = None
        tg, sut = list(getattr(testbed, "tg_cpus", [])), list(getattr(testbed, "sut_cpus", []))
        self.speeds = TrialSpeeds(tg + sut, memory_cpu=sut[0] if sut else None) if tg + sut else None
        #: TG-SUT core round trip before and after each trial (dpgate.exec.xcore); None: never
        self.xcore = TrialPlacement(tg[0], sut[0], XCORE_ROUNDS) if tg and sut and tg[0] != sut[0] else None
        self.cpu = CpuAccount(
            testbed,
            extra_sut_pids=lambda: self.extra_sut_pids,
            extra_tg_pids=self._tg_pids,
            own_pids=lambda: self.awake_pids,
        )
        self._sock_drops: Optional[int] = None
        #: also read af_packet socket drops (``ss``, ~15 ms per trial) into details; the loss
        #: attribution does not need them (``sut_drops`` = frames in minus frames out)
        self.socket_drops = False
        self._hz: Optional[float] = None

    # -- what a generator provides ----------------------------------------------
    def _tg_pids(self) -> List[int]:
        raise NotImplementedError

    def _send(self, plan: TrialPlan, tx_ports: List[str], tg0, clock: Phases) -> None:
        raise NotImplementedError

    def _report(self, plan: TrialPlan) -> SendReport:
        raise NotImplementedError

    def _claimed_sent(self) -> Optional[int]:
        """Frames the generator says the kernel took in the last trial (None: it does not say)."""
        return None

    def abort(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """The TrafficGenerator seam's end: stop any generator (and speed probe) still running."""
        try:
            self.abort()
        finally:
            self.release_sut_core()
            for probe in (self.speeds, self.xcore):
                if probe:
                    probe.close()

    # -- frames --------------------------------------------------------------
    def pcaps(self) -> List[str]:
        if self._pcaps is None:
            dirs = directions_for(self.tb.topology, self.profile)
            tag = f"{self.profile.kind}-{self.profile.frame_size}-{self.profile.effective_flows}"
            paths = []
            for i, d in enumerate(dirs):
                path = os.path.join(self.tb.workdir, f"{tag}-dir{i}.pcap")
                if not os.path.exists(path):
                    write_pcap(path + ".tmp", frames(self.profile, d))
                    os.replace(path + ".tmp", path)
                paths.append(path)
            self._pcaps = paths
        return self._pcaps

    def _ports(self):
        pairs = self.tb.topology.pairs()
        dirs = directions_for(self.tb.topology, self.profile)
        tx = [pairs[d.tx_port][0].name for d in dirs]
        rx = [pairs[d.rx_port][0].name for d in dirs]
        return tx, rx

    def _counters(self, names: List[str], key: str) -> int:
        return sum(self.tb.port_stats(self.tb.tg_ns, n)[key] for n in names)

    # -- the seam ------------------------------------------------------------
    def measure(self, load_pps: float, duration_s: float) -> TrialResult:
        """One trial; a lossy trial whose cores were disturbed beyond ``disturbance_max``
        (foreign share of a core, ``dpgate.telemetry.cpuacct``, or the share a slow host phase
        took, ``dpgate.exec.speedprobe``) is measured again, at most ``remeasure`` times (none
        if the disturbance lasts, :meth:`_passing`); the last attempt is returned and every
        attempt is reported to ``on_trial`` (superseded ones marked)."""
        attempt = 0
        while True:
            result = self.neighbour.saw(self._measure_once(load_pps, duration_s), self.disturbance_max)
            d = result.disturbance
            # A neighbour can only make a trial look worse: a disturbed trial that lost
            # nothing stands (unless ``remeasure_clean``), a lossy one is measured again.
            again = (
                d is not None
                and self.disturbance_max is not None
                and d > self.disturbance_max
                and attempt < self.remeasure
                and (result.loss_packets > 0 or self.remeasure_clean)
                and self._passing(result)
            )
            if again:
                result.details["superseded"] = (
                    f"disturbed {d:.1%} > {self.disturbance_max:.0%}: measured again"
                )
            if self.on_trial:
                self.on_trial(result)
            if not again:
                return result
            attempt += 1

    def _passing(self, result: TrialResult) -> bool:
        """Whether the disturbance may be gone in the next trial: a neighbour's time or a slow
        host phase that is not lasting (``dpgate.telemetry.neighbour``, ``TrialSpeeds.transient``);
        a lasting one is kept as measured (its verdicts inconclusive), not costing search time."""
        if self.neighbour.disturbed(result, self.disturbance_max or 0.0):
            return self.neighbour.passing(result, self.disturbance_max)
        if self.speeds is None or self.speeds.transient(self.speeds.probe.reference(self.core_speed_ref)):
            return True
        result.details["slow_host_lasting"] = True
        return False

    def _measure_once(self, load_pps: float, duration_s: float) -> TrialResult:
        if not load_pps > 0:
            raise ConfigError(f"trial load must be > 0 pps, got {load_pps!r}", path="load")
        if not duration_s > 0:
            raise ConfigError(f"trial duration must be > 0 s, got {duration_s!r}", path="duration")
        clock = Phases()
        if self.sut is not None:
            self.sut.check_alive()
        # how fast the host runs our cores (a slow phase is a disturbance); beside a polling
        # SUT only its own cores (see dpgate.exec.speedprobe)
        probed = self.tb.sut_cpus if getattr(self.sut, "polls", False) else None
        stop = pids_in_netns(self.tb.sut_ns) if probed and self.xcore else []  # a poller: stopped to read
        with stopped_once(stop) as left:  # both probes in one stop of a poller (half the time)
            if self.speeds:  # a kernel SUT's core held awake (cpp_at_load): its memory too (memprobe)
                self.speeds.begin(probed, memory=probed is None and bool(self.awake_pids))
                clock.mark("speed_before")
            if self.xcore:
                self.xcore.begin(left)
                clock.mark("placement_before")
        pcaps = self.pcaps()
        tx_ports, rx_ports = self._ports()
        ndir = len(pcaps)
        per_dir_pps = load_pps / ndir
        plan = TrialPlan(
            per_dir_pps, max(1, int(round(per_dir_pps * duration_s))), duration_s, ndir, load_pps
        )
        intended = plan.intended
        sut_ports = [s.name for _, s in self.tb.topology.pairs()]
        tg0, sut0 = self.tb.ns_stats(self.tb.tg_ns), self.tb.ns_stats(self.tb.sut_ns)
        late_before = self._late_after_settle(tg0, rx_ports)
        sockets = self.socket_drops and self.sut is not None and getattr(self.sut, "has_process", False)
        if sockets and self._sock_drops is None:
            self._sock_drops = self.tb.packet_socket_drops()
        sock_drops0 = self._sock_drops or 0
        clock.mark("counters_before")
        if self.sut is not None:
            self.sut.trial_begin()
        clock.mark("sut_begin")
        self._trial_no += 1
        self.cpu.begin(id(self.sut))
        speed0 = self._awake.sample() if self._awake else None
        busy0 = cpu_times(self.tb.sut_cpus)
        clock.mark("cpu_before")
        t0 = time.monotonic()
        self._send(plan, tx_ports, tg0, clock)
        wall = time.monotonic() - t0
        clock.mark("sending", add=-duration_s)
        busy1 = cpu_times(self.tb.sut_cpus)
        speed = self._awake.speed(speed0) if self._awake and speed0 else None
        acct = self.cpu.end()
        clock.mark("cpu_after")
        settle_ms, (tg1, sut1) = self._settle(tx_ports, rx_ports, tg0, self._claimed_sent())
        clock.mark("settle")
        with stopped_once(stop) as left:
            ref = self.speeds.probe.reference(self.core_speed_ref) if self.speeds else None
            core_speeds = self.speeds.end(probed, ref) if self.speeds else {}
            clock.mark("speed_after")
            placed = self.xcore.end(left) if self.xcore else {}
        polled = [core_speeds[c] for c in probed or () if c in core_speeds]
        if speed is None and polled:  # beside a poller (no awake loop): the probe's SUT-core speed
            speed = 1e6 * min(polled)
        slow = slow_share(core_speeds, ref) if self.speeds else None
        acct["slow_share"] = slow
        clock.mark("placement_after")

        tx = delta(tg0, tg1, tx_ports, "tx_packets")
        rx = delta(tg0, tg1, rx_ports, "rx_packets")
        tg_drops = delta(tg0, tg1, tx_ports, "tx_dropped")
        rep = self._report(plan)
        # Loss attribution: frames that entered the SUT namespace but never left it were
        # dropped by the SUT (af_packet rings, OVS, testpmd), whatever its own counters say.
        sut_in = delta(sut0, sut1, sut_ports, "rx_packets")
        sut_out = delta(sut0, sut1, sut_ports, "tx_packets")
        extra: Dict = {
            "sut_drops": max(0, sut_in - sut_out),
            "sut_busy_ratio": busy_ratio(busy0, busy1),
            "disturbance": max((d for d in (acct.get("disturbance"), slow) if d is not None), default=None),
        }
        if sockets:
            self._sock_drops = self.tb.packet_socket_drops()
        sock_drops = (self._sock_drops or 0) - sock_drops0 if sockets else 0
        per_trial: Dict = {}
        if self.sut is not None:
            self.sut.check_alive()
            per_trial = self.sut.trial_end(rx)
            if "cycles_per_packet" in per_trial:
                extra["sut_cycles_per_packet"] = per_trial["cycles_per_packet"]
        clock.mark("sut_end")
        if self.sut is not None and acct.get("sut_own_s") is not None and sut_out > 0:
            extra["sut_cpu_cycles_per_packet"] = round(acct["sut_own_s"] * self.cpu_hz() / sut_out, 1)
        limited = None
        if tx < intended and self.max_pps and load_pps >= CEILING_MARGIN * self.max_pps:
            limited = LIMITED_BY_GENERATOR
        details = {
            "frame_size": str(self.profile.frame_size),
            "profile": self.profile.kind,
            "flows": self.profile.effective_flows,
            "directions": ndir,
            "generator": self.name,
            "retried_enobufs": rep.retried,
            f"{self.name}_failed": rep.failed,
            "generator_max_pps": self.max_pps,
            "wall_s": round(wall, 3),
            "generator_cut_at_deadline": rep.cut,
            "generator_exited": rep.exited,
            "sut_rx_packets": sut_in,
            "sut_tx_packets": sut_out,
            "sut_socket_drops": sock_drops,
            "sut_counters": per_trial,
            "cpu": acct,
            "settle_ms": settle_ms,
            "settle_quiet_ms": round(self.quiet_s() * 1e3, 1),
            "late_after_last_settle": late_before,
            "phases_ms": clock.ms,
        }
        # how fast the cores ran: the probe between trials (M it/s per TG/SUT core) and the
        # awake loop on the SUT core during the trial (M iterations per CPU second)
        held = dict(
            core_speeds=core_speeds,
            core_speeds_first=self.speeds.rechecked if self.speeds else None,  # read again (speedprobe)
            sut_core_awake=bool(self.awake_pids),
            sut_napi_deferral_us=self._moderated,
            sut_memory_ns=self.speeds.memory_ns if self.speeds else None,
            **placed,
        )
        details.update(
            {k: v for k, v in held.items() if v},
            **({"sut_core_speed": round(speed / 1e6, 2)} if speed else {}),
        )
        return TrialResult.from_counts(
            load_pps,
            duration_s,
            tx_packets=tx,
            rx_packets=rx,
            actual_duration_s=rep.seconds,
            intended_packets=intended,
            limited_by=limited,
            tg_drops=tg_drops,
            frame_size=str(self.profile.frame_size),
            details=details,
            **extra,
        )

    # -- calibration -----------------------------------------------------------
    def calibrate(self, duration_s: float = 1.0, probe_pps: float = 5e6, repeats: int = 3) -> float:
        """Measure the generator's own ceiling and keep it as ``max_pps`` (see
        :func:`dpgate.traffic.calibration.calibrate`)."""
        from .calibration import calibrate

        return calibrate(self, duration_s, probe_pps, repeats)
