"""The embedded traffic generator: tcpreplay replaying a prebuilt pcap, pinned to the TG core.

``TcpreplayGenerator.measure(load_pps, duration_s) -> TrialResult`` is the seam every
search uses. ``load_pps`` is the aggregate over directions (bidirectional: half per port).

Trial discipline:

1. read port counters (TG tx, TG rx) and SUT drop counters;
2. run one tcpreplay per direction: ``-K`` (preloaded), ``--pps`` for the rate and
   ``--limit`` for the intended count, pinned to the TG cpus; a hung tcpreplay is killed
   after ``duration + budget`` and the trial fails;
3. wait for late packets: poll the rx counters until they stop moving (settle), so
   nothing still in flight is counted as lost (no phantom loss);
4. loss = intended - received; ``tg_shortfall`` = intended - sent; when the shortfall
   happens at a load at or above the calibrated generator ceiling, ``limited_by`` is
   ``"generator"``.
"""

from __future__ import annotations

import math
import os
import re
import time
from typing import Any, Callable, Dict, List, Optional

from dpgate.exec.cpu import busy_ratio, cpu_times
from dpgate.exec.runner import ns_argv, stop_process, tail
from dpgate.model.errors import ConfigError, TrialError
from dpgate.model.ndrpdr import CEILING_MARGIN
from dpgate.model.trial import LIMITED_BY_GENERATOR, TrialResult

from .pcap import frames, write_pcap
from .profiles import Profile, directions_for


def parse_tcpreplay_output(text: str) -> Dict[str, float]:
    """Counts from tcpreplay's summary ('Actual: N packets ... sent in T seconds', retries)."""
    out: Dict[str, float] = {}
    m = re.search(r"Actual:\s*(\d+)\s+packets\s+\((\d+)\s+bytes\)\s+sent in\s+([0-9.]+)\s+seconds", text)
    if m:
        out["sent"] = int(m.group(1))
        out["bytes"] = int(m.group(2))
        out["seconds"] = float(m.group(3))
    for key, pat in (("failed", r"Failed packets:\s*(\d+)"),
                     ("retried_enobufs", r"Retried packets \(ENOBUFS\):\s*(\d+)"),
                     ("retried_eagain", r"Retried packets \(EAGAIN\):\s*(\d+)")):
        m = re.search(pat, text)
        if m:
            out[key] = int(m.group(1))
    return out


class TcpreplayGenerator:
    """Real frames through real SUTs. ``sut`` (optional) is checked for liveness and asked for
    per-trial counters; ``max_pps`` is the calibrated ceiling once :meth:`calibrate` ran."""

    def __init__(self, testbed, profile: Profile, sut=None, settle_s: float = 0.05,
                 budget_s: float = 10.0, on_trial: Optional[Callable[[TrialResult], None]] = None):
        self.tb = testbed
        self.profile = profile
        self.sut = sut
        self.settle_s = settle_s
        self.budget_s = budget_s
        self.on_trial = on_trial
        self.max_pps: Optional[float] = None
        self.calibration: Dict[str, Any] = {}
        self._pcaps: Optional[List[str]] = None
        self._procs: List = []

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
        if not load_pps > 0:
            raise ConfigError(f"trial load must be > 0 pps, got {load_pps!r}", path="load")
        if not duration_s > 0:
            raise ConfigError(f"trial duration must be > 0 s, got {duration_s!r}", path="duration")
        if self.sut is not None:
            self.sut.check_alive()
        pcaps = self.pcaps()
        tx_ports, rx_ports = self._ports()
        ndir = len(pcaps)
        per_dir_pps = load_pps / ndir
        per_dir_count = max(1, int(round(per_dir_pps * duration_s)))
        intended = per_dir_count * ndir
        sut_ports = [s.name for _, s in self.tb.topology.pairs()]
        tg0, sut0 = self.tb.ns_stats(self.tb.tg_ns), self.tb.ns_stats(self.tb.sut_ns)
        sock_drops0 = self.tb.packet_socket_drops()
        busy0 = cpu_times(self.tb.sut_cpus)
        if self.sut is not None:
            self.sut.trial_begin()
        logs = [os.path.join(self.tb.workdir, f"tcpreplay-{i}.log") for i in range(ndir)]
        for log in logs:
            if os.path.exists(log):
                os.unlink(log)
        t0 = time.monotonic()
        self._procs = [
            _Replay([
                "tcpreplay", "-i", port, "-K", "--loop=0", f"--pps={per_dir_pps:.3f}",
                f"--limit={per_dir_count}", f"--duration={int(math.ceil(duration_s)) + 1}", pcap,
            ], self.tb.tg_ns, self.tb.tg_cpus, log)
            for port, pcap, log in zip(tx_ports, pcaps, logs)
        ]
        stopped_early = 0
        try:
            self._wait_started(tx_ports, self.budget_s)
            # Hard stop at the intended duration (plus half a packet gap and 5 ms): a
            # generator that falls behind is cut off, so its lag shows as shortfall and
            # never stretches the trial.
            grace = 0.005 + 0.5 / per_dir_pps
            for r in self._procs:
                code = r.finish(r.started_at + duration_s + grace, self.budget_s)
                if code == "cut":
                    stopped_early += 1
                elif code != 0:
                    how = f"signal {-code}" if code < 0 else f"code {code}"
                    raise TrialError(
                        f"generator exited ({how}) during trial at {load_pps:.0f} pps\n"
                        f"--- tcpreplay output ---\n{tail(r.log, 8)}"
                    )
        except TrialError:
            raise
        finally:
            for r in self._procs:
                r.kill()
            self._procs = []
        wall = time.monotonic() - t0
        busy1 = cpu_times(self.tb.sut_cpus)
        self._settle(rx_ports)
        tg1, sut1 = self.tb.ns_stats(self.tb.tg_ns), self.tb.ns_stats(self.tb.sut_ns)

        def delta(before, after, names, key):
            return sum(after[n][key] - before[n][key] for n in names)

        tx = delta(tg0, tg1, tx_ports, "tx_packets")
        rx = delta(tg0, tg1, rx_ports, "rx_packets")
        tg_drops = delta(tg0, tg1, tx_ports, "tx_dropped")
        reports = [parse_tcpreplay_output(tail(log, 40)) for log in logs]
        actual = max((r.get("seconds", duration_s) for r in reports), default=duration_s)
        # Loss attribution: frames that entered the SUT namespace but never left it were
        # dropped by the SUT (af_packet rings, OVS, testpmd), whatever its own counters say.
        sut_in = delta(sut0, sut1, sut_ports, "rx_packets")
        sut_out = delta(sut0, sut1, sut_ports, "tx_packets")
        extra: Dict = {"sut_drops": max(0, sut_in - sut_out), "sut_busy_ratio": busy_ratio(busy0, busy1)}
        sock_drops = self.tb.packet_socket_drops() - sock_drops0
        per_trial: Dict = {}
        if self.sut is not None:
            self.sut.check_alive()
            per_trial = self.sut.trial_end(rx)
            if "cycles_per_packet" in per_trial:
                extra["sut_cycles_per_packet"] = per_trial["cycles_per_packet"]
        limited = None
        if tx < intended and self.max_pps and load_pps >= CEILING_MARGIN * self.max_pps:
            limited = LIMITED_BY_GENERATOR
        details = {
            "frame_size": str(self.profile.frame_size),
            "profile": self.profile.kind,
            "flows": self.profile.effective_flows,
            "directions": ndir,
            "retried_enobufs": int(sum(r.get("retried_enobufs", 0) for r in reports)),
            "tcpreplay_failed": int(sum(r.get("failed", 0) for r in reports)),
            "generator_max_pps": self.max_pps,
            "wall_s": round(wall, 3),
            "generator_cut_at_deadline": stopped_early,
            "sut_rx_packets": sut_in,
            "sut_tx_packets": sut_out,
            "sut_socket_drops": sock_drops,
            "sut_counters": per_trial,
        }
        result = TrialResult.from_counts(
            load_pps, duration_s, tx_packets=tx, rx_packets=rx, actual_duration_s=actual,
            intended_packets=intended, limited_by=limited, tg_drops=tg_drops,
            frame_size=str(self.profile.frame_size), details=details, **extra,
        )
        if self.on_trial:
            self.on_trial(result)
        return result

    def _wait_started(self, tx_ports: List[str], timeout: float) -> None:
        """Sending starts only after tcpreplay preloaded the pcap (tens of ms for large
        pcaps): poll each TG port's tx counter and note when it first moves."""
        base = {p: self.tb.port_stats(self.tb.tg_ns, p)["tx_packets"] for p in tx_ports}
        end = time.monotonic() + timeout
        pending = dict(zip(tx_ports, self._procs))
        while pending:
            for port, r in list(pending.items()):
                if self.tb.port_stats(self.tb.tg_ns, port)["tx_packets"] != base[port]:
                    r.started_at = time.monotonic()
                    del pending[port]
                elif r.proc.poll() is not None:
                    raise TrialError(
                        f"generator exited (code {r.proc.returncode}) before sending\n{tail(r.log, 8)}")
            if time.monotonic() > end:
                raise TrialError(f"generator (tcpreplay) did not start sending within {timeout:g} s: killed")
            time.sleep(0.001)

    def _settle(self, rx_ports: List[str]) -> int:
        """Wait for late packets: rx counters unchanged for two polls ``settle_s`` apart
        (bounded by 20 x settle_s), so nothing in flight is counted as lost."""
        last = self._counters(rx_ports, "rx_packets")
        stable = 0
        end = time.monotonic() + max(1.0, self.settle_s * 20)
        while time.monotonic() < end and stable < 2:
            time.sleep(self.settle_s)
            now = self._counters(rx_ports, "rx_packets")
            stable = stable + 1 if now == last else 0
            last = now
        return last

    def abort(self) -> None:
        for p in self._procs:
            stop_process(p, timeout=1.0)

    def close(self) -> None:
        """The TrafficGenerator seam's end: stop any replay still running."""
        self.abort()

    # -- calibration -----------------------------------------------------------
    def calibrate(self, duration_s: float = 1.0, probe_pps: float = 5e6, repeats: int = 3) -> float:
        """Measure the generator's own ceiling and keep it as the testbed max rate.

        Paced trials far above any reachable rate are sent while the SUT namespace only
        receives and discards (no SUT started, so nothing forwards or pushes back). The
        ceiling is the *lowest* of ``repeats`` rates the TG ports really sent: what the
        generator sustains reliably, so that rates up to 90 % of it are sent accurately
        (the best probe overstated it by 10-15 % on a shared VM). A probe far below the
        others (a hiccup: it once made a 0.28 Mpps ceiling of a 0.68 Mpps generator) is
        measured again, see :func:`ceiling_from_probes`. Like line rate on a
        physical testbed, searches never go above it and results at it are marked.
        """
        if self.sut is not None and self.sut.started:
            raise TrialError("calibrate the generator before starting the SUT (the SUT must not push back)")
        saved, self.max_pps = self.max_pps, None
        hook, self.on_trial = self.on_trial, None
        results = {}

        def probe() -> float:
            res = self.measure(probe_pps, duration_s)
            rate = res.tx_packets / duration_s
            results[rate] = res
            return rate

        try:
            best, probes = ceiling_from_probes(probe, repeats)
        finally:
            self.max_pps, self.on_trial = saved, hook
        res = results[best]
        samples = [(r, results[r]) for r in probes]
        self.max_pps = best
        if not self.max_pps:
            raise TrialError("generator calibration sent nothing: is tcpreplay working? see the logs in "
                             + self.tb.workdir)
        self.calibration = {"max_pps": self.max_pps, "tx_packets": res.tx_packets, "seconds": duration_s,
                            "sink_rx_packets": res.rx_packets,
                            "samples_pps": [round(x, 1) for x, _ in samples]}
        return self.max_pps


#: A probe below this share of the probes' median is a hiccup (a stalled vCPU, a burst of
#: other work), not the generator's rate: it is measured again.
OUTLIER_SHARE = 0.85
EXTRA_PROBES = 2


def ceiling_from_probes(probe, repeats: int = 3) -> tuple[float, list]:
    """(ceiling, every probe's rate): the lowest of ``repeats`` consistent probes.

    The lowest, not the best, so that rates up to 90 % of the ceiling are sent accurately;
    but a probe below ``OUTLIER_SHARE`` of the others' median is replaced by a new one (at
    most ``EXTRA_PROBES`` times), so one hiccup does not become the ceiling of a whole suite.

    >>> rates = iter([700e3, 280e3, 690e3, 705e3])
    >>> ceiling_from_probes(lambda: next(rates))
    (690000.0, [700000.0, 280000.0, 690000.0, 705000.0])
    """
    import statistics

    probes = [probe() for _ in range(max(1, repeats))]
    kept = list(probes)
    for _ in range(EXTRA_PROBES):
        if len(kept) < 3 or min(kept) >= OUTLIER_SHARE * statistics.median(kept):
            break
        kept.remove(min(kept))
        new = probe()
        probes.append(new)
        kept.append(new)
    return min(kept), probes


class _Replay:
    """One tcpreplay process, its output copied to a log as it comes (line-buffered)."""

    def __init__(self, argv, ns, cpus, log):
        import subprocess
        import threading

        self.log = log
        self.started_at: Optional[float] = None
        self._fh = open(log, "w")
        full = ns_argv(["stdbuf", "-oL", "-eL"] + list(argv), ns, cpus)
        self.proc = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for raw in self.proc.stdout:  # type: ignore[union-attr]
            self._fh.write(raw.decode(errors="replace"))
            self._fh.flush()

    def finish(self, deadline: float, budget: float):
        """Exit code, or "cut" when it had to be stopped at the deadline."""
        import signal
        import subprocess

        try:
            return self.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(min(budget, 2.0))
        except subprocess.TimeoutExpired:
            self.kill()
            raise TrialError("generator (tcpreplay) ignored SIGINT at the end of the trial: killed") from None
        return "cut"

    def kill(self) -> None:

        if self.proc.poll() is None:
            stop_process(self.proc, timeout=1.0)
        self._reader.join(2.0)
        self._fh.close()
