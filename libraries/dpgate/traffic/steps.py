"""The steps of an embedded trial around the generator: start detection, end of sending,
late packets, leftover generators. Mixed into :class:`~dpgate.traffic.trialflow.EmbeddedGenerator`
(which provides ``tb``, ``settle_s``, ``budget_s``, ``_procs``, ``_exiting``); the start and end
detection is tcpreplay's, the settle is every embedded generator's."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from dpgate.exec.runner import tail
from dpgate.model.errors import TrialError


def delta(before, after, names, key: str) -> int:
    """How much counter ``key`` of ports ``names`` moved from one ``ns_stats`` read to another."""
    return sum(after[n][key] - before[n][key] for n in names)


class TrialSteps:
    # provided by the generator this is mixed into
    tb: Any
    settle_s: float
    budget_s: float
    _procs: List[Any]
    _exiting: List[Any]
    _trial_no: int

    def _wait_sent(
        self, tx_ports: List[str], tg0, count: int, duration_s: float, grace: float, load_pps: float
    ) -> tuple[int, Dict[str, float]]:
        """Wait until every TG port sent its ``count`` frames (counters), not for tcpreplay to
        exit. A generator still short of it at ``started + duration + grace`` is cut there
        (SIGINT): a generator that falls behind shows as shortfall and never stretches the
        trial. Returns (generators cut, {log: time its count was reached})."""
        first = min(r.started_at for r in self._procs)
        nap = first + duration_s - 0.004 - time.monotonic()
        if nap > 0:
            time.sleep(nap)
        pending = dict(zip(tx_ports, self._procs))
        sent_at: Dict[str, float] = {}
        cut = 0
        while pending:
            stats = self.tb.ns_stats(self.tb.tg_ns)
            now = time.monotonic()
            for port, r in list(pending.items()):
                if stats[port]["tx_packets"] - tg0[port]["tx_packets"] >= count:
                    sent_at[r.log] = now
                    del pending[port]
                    continue
                code = r.proc.poll()
                if code is not None:
                    if code != 0:
                        raise TrialError(
                            f"generator exited ({exit_how(code)}) during trial at {load_pps:.0f} pps\n"
                            f"--- tcpreplay output ---\n{tail(r.log, 8)}"
                        )
                    del pending[port]  # done by its own account (failed sends show as shortfall)
                elif now > r.started_at + duration_s + grace:
                    if r.finish(now, self.budget_s) == "cut":
                        cut += 1
                    del pending[port]
            if pending:
                time.sleep(0.001)
        return cut, sent_at

    def _reap_exiting(self) -> None:
        """Generators of earlier trials, left to exit by themselves (closing packet sockets
        takes them ~10-20 ms): the last trial's may still be exiting (not waited for: they
        send nothing more and their logs have other names), older ones are reaped or killed."""
        keep = []
        for r in self._exiting:
            if r.proc.poll() is not None:
                continue
            if getattr(r, "trial", 0) >= self._trial_no - 1:
                keep.append(r)
                continue
            try:
                r.proc.wait(2.0)
            except Exception:  # still there after 2 s: it will not say more
                r.kill()
        self._exiting = keep

    def _wait_started(self, tx_ports: List[str], timeout: float, load_pps: Optional[float] = None) -> None:
        """Sending starts only after tcpreplay preloaded the pcap (tens of ms for large
        pcaps): poll each TG port's tx counter and note when it first moves. A generator that
        dies first fails the trial as one that dies while sending does, said the same way."""
        base = {p: self.tb.port_stats(self.tb.tg_ns, p)["tx_packets"] for p in tx_ports}
        end = time.monotonic() + timeout
        pending = dict(zip(tx_ports, self._procs))
        while pending:
            stats = self.tb.ns_stats(self.tb.tg_ns)
            for port, r in list(pending.items()):
                if stats[port]["tx_packets"] != base[port]:
                    r.started_at = time.monotonic()
                    del pending[port]
                elif (code := r.proc.poll()) is not None:
                    at = f" during trial at {load_pps:.0f} pps" if load_pps is not None else ""
                    raise TrialError(
                        f"generator exited ({exit_how(code)}){at}, before sending its first frame\n"
                        f"--- tcpreplay output ---\n{tail(r.log, 8)}"
                    )
            if time.monotonic() > end:
                raise TrialError(f"generator (tcpreplay) did not start sending within {timeout:g} s: killed")
            if pending:
                time.sleep(0.0005)

    def _settle(
        self, tx_ports: List[str], rx_ports: List[str], tg0, claimed: Optional[int] = None
    ) -> tuple[Optional[float], tuple]:
        """Wait for late packets after the generator stopped: done at once when every sent
        frame is back (rx == tx on the TG ports), else when no counter of either namespace
        moved for the quiet time (:meth:`quiet_s`; bounded by ``max(1 s, 20 x`` it), so
        nothing in flight is counted as lost. Returns (ms from stop to the last counter change, or None
        when nothing moved after the stop; the final (TG, SUT) counters).

        ``claimed``: frames the generator says the kernel took. A TG port whose peer runs
        NAPI (our SUT ports: GRO and threaded NAPI) counts a frame as sent only when the
        SUT's NAPI thread takes it off the veth ring, and that thread shares the SUT core
        with a polling SUT: until the TG ports' tx reach ``claimed`` frames are still in
        flight, whatever the quiet time says (rx == tx there is both lagging). Frames veth
        dropped (ring full: ``tx_dropped``) were refused to the generator, which sent them
        again, so they are not part of ``claimed``."""
        t_stop = time.monotonic()
        settle_s = self.quiet_s()
        last_change: Optional[float] = None
        tg_ns, sut_ns = self.tb.tg_ns, self.tb.sut_ns

        def read():
            return self.tb.ns_stats(tg_ns), self.tb.ns_stats(sut_ns)

        def counted(tg, key: str, ports: List[str]) -> int:
            return sum(tg[p][key] - tg0[p][key] for p in ports)

        def in_flight(tg) -> bool:
            return claimed is not None and counted(tg, "tx_packets", tx_ports) < claimed

        def sent_back(tg) -> bool:
            return not in_flight(tg) and counted(tg, "rx_packets", rx_ports) >= counted(
                tg, "tx_packets", tx_ports
            )

        now_c = read()
        seen = now_c
        end = t_stop + max(1.0, settle_s * 20)
        while not sent_back(now_c[0]):
            now = time.monotonic()
            quiet = now - (last_change or t_stop) >= settle_s
            if (quiet and not in_flight(now_c[0])) or now > end:
                break
            time.sleep(0.001)
            now_c = read()
            if now_c != seen:
                last_change, seen = time.monotonic(), now_c
        self.tb.settled_rx = (tuple(rx_ports), sum(now_c[0][p]["rx_packets"] for p in rx_ports))
        return (round((last_change - t_stop) * 1e3, 2) if last_change else None), now_c

    def quiet_s(self) -> float:
        """The settle's quiet time: the SUT's own (its driver's ``settle_s``) where it has one,
        else the generator's."""
        own = getattr(getattr(self, "sut", None), "settle_s", None)
        if isinstance(own, (int, float)) and not isinstance(own, bool) and own > 0:
            return float(own)
        return self.settle_s

    def _late_after_settle(self, tg0, rx_ports: List[str]) -> Optional[int]:
        """Frames that reached the TG's rx ports after the last trial's settle gave them up for
        lost and before this trial began (None for a testbed's first trial or other ports): what
        a too short quiet time loses, counted rather than assumed. The last trial is the
        testbed's, whichever of its generators ran it. (Our namespaces send nothing of their
        own between trials; anything else there would show here too, never hide.)"""
        last = getattr(self.tb, "settled_rx", None)
        if not last or last[0] != tuple(rx_ports):
            return None
        late = sum(tg0[p]["rx_packets"] for p in rx_ports) - last[1]
        return late if late >= 0 else None


class Phases:
    """Milliseconds spent in each phase of a trial, in order."""

    def __init__(self) -> None:
        self.ms: Dict[str, float] = {}
        self._t = time.monotonic()

    def mark(self, name: str, add: float = 0.0) -> None:
        now = time.monotonic()
        self.ms[name] = round((now - self._t + add) * 1e3, 2)
        self._t = now


def exit_how(code: int) -> str:
    """How a generator process ended, from its return code.

    >>> exit_how(-9), exit_how(1)
    ('signal 9', 'code 1')
    """
    return f"signal {-code}" if code < 0 else f"code {code}"
