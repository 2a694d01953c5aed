"""The TRex STL trial: ``TrexGenerator.measure(load_pps, duration_s) -> TrialResult``.

Trial discipline (checked against the TRex v3.08 server, ../shared/notes/lab-audit.md):

* session: ``connect``; ``acquire`` the ports WITHOUT force (a port another client holds is
  one error naming the holder; ``reset`` alone would force-take it and kill their traffic);
  ``reset``; L2 profiles turn the ports promiscuous (``reset`` turns it off, and a NIC
  drops the profile's thousands of dst MACs otherwise);
* trial: (latency: re-add streams at absolute rates), **clear stats**,
  ``start(ports, mult="<R>pps", duration=D)`` without ``force`` (force skips the link-up,
  resolved and dst-MAC checks), poll ``is_traffic_active`` until TX ends (that instant is
  the trial's real duration), ``wait_on_traffic`` (its ``rx_delay_ms`` only matters with
  flow-stat/latency streams; TRex waits it only then), then ``get_stats`` until the rx
  counters stop moving (at most ``settle_s``; late frames are not lost);
* **duration stretching** (TRex needed longer than D to send R x D: on af_packet TRex falls
  behind rather than drops): retried up to ``max_retries``, then the trial is kept and
  marked ``limited_by=generator`` (the search goes on; the load is the generator's);
* a TX shortfall beyond ``ROUNDING_PACKETS_PER_PORT`` per port (memif: low_end TRex drops
  when the ring is full) also marks the trial generator-limited;
* **loss per direction**: bidirectional trials count each direction's received frames by
  TRex flow stats (one ``pg_id`` per data stream): a frame that comes back on the port it
  left from is lost, not delivered (``details["misdelivered"]``); unidirectional trials
  count the one receiving port;
* TG port errors (``ierrors``/``oerrors``) are ``tg_drops``, not blamed on the SUT;
* requested rates are clamped to line rate and the NIC's ``pps_limit``;
* server unreachable, port busy, link down, API mismatch: one clear error each (errors.py).

Load is the aggregate over directions (bidirectional: half per port).
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional, Tuple

from dpgate.config.units import average_frame_size
from dpgate.model.errors import EnvironmentProblem, TrialError
from dpgate.model.trial import LIMITED_BY_GENERATOR, TrialResult
from dpgate.traffic.profiles import Profile, directions_for
from dpgate.traffic.trex.errors import explain_trex_error
from dpgate.traffic.trex.install import OLD_CLIENT_MSG, import_trex_api  # noqa: F401  (public names)
from dpgate.traffic.trex.latency import latency_by_direction, latency_summary  # noqa: F401  (public names)
from dpgate.traffic.trex.rpclock import release_sockets, serialize_rpc
from dpgate.traffic.trex.streams import StreamBuilder

#: TG shortfall per port (packets) treated as TRex's start/stop granularity, not loss.
ROUNDING_PACKETS_PER_PORT = 2
#: pg_ids: latency streams 1.., data flow-stat streams 100 + 10 x direction + stream index
LAT_PG, DATA_PG = 1, 100


def _get(d: Dict[Any, Any], key: Any, default: Any = None) -> Any:
    return d.get(key, d.get(str(key), default))


class TrexGenerator:
    def __init__(
        self,
        topology,
        profile: Profile,
        client: Any = None,
        api: Any = None,
        settle_s: float = 0.5,
        rx_delay_ms: int = 100,
        max_retries: int = 2,
        stretch_tolerance: float = 0.01,
        latency_pps: float = 0.0,
        per_direction: Optional[bool] = None,
        trex_server: Any = None,
        link_wait_s: float = 10.0,
    ):
        self.topology = topology
        self.profile = profile
        tg = topology.tg
        self.server = tg.trex.server if tg.trex else "?"
        self.api = api if api is not None else import_trex_api(tg.trex.client_path if tg.trex else None)
        self.client = (
            client
            if client is not None
            else self.api.STLClient(
                server=self.server,
                sync_port=tg.trex.sync_port,
                async_port=tg.trex.async_port,
                verbose_level="none",
            )
        )
        self.ports = list(tg.trex.ports) if tg.trex else [0, 1]
        self.settle_s = settle_s
        self.rx_delay_ms = rx_delay_ms
        self.max_retries = max(1, max_retries)
        self.stretch_tolerance = stretch_tolerance
        #: pps of the latency stream per direction (0: no latency streams); capped at 10 % of a
        #: port's rate so low-rate trials stay data-dominated.
        self.latency_pps = latency_pps
        #: count rx per direction with flow stats (default: bidirectional profiles)
        self.per_direction = profile.bidirectional if per_direction is None else per_direction
        self.builder = StreamBuilder(self.api)
        #: the ``TrexServer`` we started, if any: its death ends a trial at once (else the client
        #: notices a dead server only after its ~12 s heartbeat timeout)
        self.trex_server = trex_server
        #: how long a down TG link may take to come up at connect (memif: the SUT connects after TRex)
        self.link_wait_s = link_wait_s
        self.connected = False
        self.version: Optional[str] = None
        self.promiscuous: Optional[bool] = None

    @property
    def tg_name(self) -> str:
        """The generator and its version for results/JUnit, e.g. ``TRex v3.08``."""
        return f"TRex {self.version}" if self.version else "TRex"

    # -- limits ------------------------------------------------------------------------
    def port_limit_pps(self, port_index: int) -> Optional[float]:
        """min(line rate at this frame size, NIC pps_limit) of one TG port, if known."""
        iface = self.topology.tg.port(port_index)
        limits = []
        if iface.link_bps:
            limits.append(iface.link_bps / ((average_frame_size(self.profile.frame_size) + 20) * 8))
        if iface.pps_limit:
            limits.append(iface.pps_limit)
        return min(limits) if limits else None

    @property
    def max_pps(self) -> Optional[float]:
        per_port = [self.port_limit_pps(i) for i in range(self.profile.directions)]
        if any(p is None for p in per_port):
            return None
        return sum(per_port)  # type: ignore[arg-type]

    # -- session ------------------------------------------------------------------------
    def connect(self) -> None:
        serialize_rpc(self.client)  # the client's two threads take turns on its RPC socket
        try:
            self.client.connect()
            self.version = str((self.client.get_server_version() or {}).get("version") or "") or None
            self.client.acquire(ports=self.ports, force=False)
            self.client.reset(ports=self.ports)  # ours now: reset's force-acquire takes nothing from anyone
            if self.profile.kind == "l2":
                self._promiscuous()
            self._check_links()
            if not self.latency_pps:  # with latency, streams are built per trial (absolute pps)
                for i, d in enumerate(self._dirs()):
                    self.client.add_streams(self._data_streams(d, i, None), ports=[self.ports[d.tx_port]])
        except EnvironmentProblem:
            raise
        except Exception as err:  # the client raises its own TRexError
            raise explain_trex_error(err, self.server) from None
        self.connected = True

    def _promiscuous(self) -> None:
        """L2 profiles: ports promiscuous where the port supports it (``prom_supported``)."""
        attrs = {p: self.client.get_port_attr(p) or {} for p in self.ports}
        able = [p for p, a in attrs.items() if str(a.get("prom_supported", "yes")).lower() != "no"]
        if able:
            self.client.set_port_attr(ports=able, promiscuous=True)
        self.promiscuous = len(able) == len(self.ports)

    def _check_links(self) -> None:
        """Fail before any trial if a TG port's link stays down (``get_port_attr(port)["link"]``)
        for ``link_wait_s`` (a memif peer connects a moment after it starts)."""
        deadline = time.monotonic() + self.link_wait_s
        while True:
            down = [
                p
                for p in self.ports
                if str((self.client.get_port_attr(p) or {}).get("link", "UP")).upper() == "DOWN"
            ]
            if not down:
                return
            if time.monotonic() >= deadline:
                raise EnvironmentProblem(
                    f"TRex port link down on {self.server}: ports {down}. Check cabling, the "
                    "DUT NIC (is the SUT started and its ports up?) and transceivers"
                )
            time.sleep(0.5)

    def disconnect(self) -> None:
        if self.connected:
            try:
                self.client.disconnect()
            except Exception:  # a dead server: nothing to release
                pass
            finally:
                self.connected = False
                release_sockets(self.client)

    def _drop_session(self) -> None:
        """Close the client's sockets without talking to a dead server (else libzmq's reconnect
        machinery can abort the process at exit: "Assertion failed ... session_base.cpp")."""
        self.connected = False
        try:
            self.client.disconnect(stop_traffic=False, release_ports=False)
        except Exception:
            pass
        release_sockets(self.client)

    def close(self) -> None:
        """The TrafficGenerator seam's end: release the ports and the TRex session."""
        self.disconnect()

    def _dirs(self):
        return directions_for(self.topology, self.profile)

    def _data_pgs(self, di: int) -> List[int]:
        return (
            [DATA_PG + 10 * di + k for k in range(len(self.builder.sizes(self.profile)))]
            if self.per_direction
            else []
        )

    def _data_streams(self, d, di: int, port_pps: Optional[float], lat_pps: float = 0.0) -> List[Any]:
        pgs = self._data_pgs(di)
        streams = (
            self.builder.streams(self.profile, d, pg_ids=pgs or None)
            if port_pps is None
            else self.builder.trial_streams(
                self.profile, d, port_pps, lat_pps, LAT_PG + di, pg_ids=pgs or None
            )
        )
        return streams

    # -- the seam ------------------------------------------------------------------------
    def measure(self, load_pps: float, duration_s: float) -> TrialResult:
        if not self.connected:
            self.connect()
        result: Optional[TrialResult] = None
        for attempt in range(1, self.max_retries + 1):
            result, stretched = self._trial(load_pps, duration_s, attempt)
            if not stretched:
                return result
        assert result is not None
        # TRex could not send this rate in time: the generator's limit, not the SUT's
        result.details["stretched_attempts"] = self.max_retries
        return _limited(result)

    def _trial(self, load_pps: float, duration_s: float, attempt: int) -> Tuple[TrialResult, bool]:
        dirs = self._dirs()
        tx_ports = [self.ports[d.tx_port] for d in dirs]
        per_port = load_pps / len(dirs)
        limits = [self.port_limit_pps(d.tx_port) for d in dirs]
        clamped = min([per_port] + [lim for lim in limits if lim])
        lat_pps = min(self.latency_pps, clamped * 0.1) if self.latency_pps else 0.0
        lat_pgs = (
            {f"{self.ports[d.tx_port]}->{self.ports[d.rx_port]}": LAT_PG + i for i, d in enumerate(dirs)}
            if self.latency_pps
            else {}
        )
        flow_stat_streams = bool(lat_pgs) or self.per_direction
        try:
            if self.latency_pps:
                self.client.remove_all_streams(ports=tx_ports)
                for i, d in enumerate(dirs):
                    self.client.add_streams(
                        self._data_streams(d, i, clamped, lat_pps), ports=[self.ports[d.tx_port]]
                    )
            self.client.clear_stats()
            t0 = time.monotonic()
            self.client.start(ports=tx_ports, mult=f"{clamped:.3f}pps", duration=duration_s)
            deadline = t0 + duration_s * 4 + 30
            while self.client.is_traffic_active(ports=tx_ports):
                self._check_server(load_pps)
                if time.monotonic() > deadline:
                    raise TrialError(
                        f"TRex still sending {duration_s * 4 + 30:g} s after a {duration_s:g} s trial"
                    )
                time.sleep(0.01)
            elapsed = time.monotonic() - t0
            self.client.wait_on_traffic(
                ports=tx_ports, rx_delay_ms=self.rx_delay_ms if flow_stat_streams else None
            )
            stats = self._settled_stats(rx_ports=[self.ports[d.rx_port] for d in dirs])
        except (EnvironmentProblem, TrialError):
            raise
        except Exception as err:
            self._check_server(load_pps)
            clear = explain_trex_error(err, self.server)
            if "lost" in str(clear) or "unreachable" in str(clear):
                self._drop_session()
            raise clear from None
        return self._result(
            load_pps, duration_s, attempt, dirs, stats, elapsed, per_port, clamped, lat_pps, lat_pgs
        )

    def _settled_stats(self, rx_ports: List[int], step_s: float = 0.05) -> Dict[Any, Any]:
        """Stats once the rx counters of ``rx_ports`` read the same twice ``step_s`` apart, or
        after ``settle_s``: frames still in flight are counted, not called lost."""
        deadline = time.monotonic() + self.settle_s
        stats = self.client.get_stats()
        while time.monotonic() < deadline:
            time.sleep(step_s)
            again = self.client.get_stats()
            if [int((_get(again, p) or {}).get("ipackets", 0)) for p in rx_ports] == [
                int((_get(stats, p) or {}).get("ipackets", 0)) for p in rx_ports
            ]:
                return again
            stats = again
        return stats

    def _check_server(self, load_pps: float) -> None:
        srv = self.trex_server
        if srv is not None and not srv.alive():
            self._drop_session()
            raise TrialError(
                f"TRex server {self.server} died during the trial at {load_pps:.0f} pps ({srv.describe_exit()})"
            )

    def _result(
        self, load_pps, duration_s, attempt, dirs, stats, elapsed, per_port, clamped, lat_pps, lat_pgs
    ):
        tx_ports = [self.ports[d.tx_port] for d in dirs]
        rx_ports = [self.ports[d.rx_port] for d in dirs]
        for p in tx_ports + rx_ports:
            if _get(stats, p) is None:
                raise TrialError(f"TRex stats lack port {p}: got keys {sorted(map(str, stats))}")
        ps = {p: _get(stats, p) for p in set(tx_ports + rx_ports)}
        tx = sum(int(ps[p]["opackets"]) for p in tx_ports)
        details: Dict[str, Any] = {
            "generator": "trex",
            "tg": self.tg_name,
            "server": self.server,
            "attempt": attempt,
            "elapsed_s": round(elapsed, 3),
            "requested_per_port_pps": per_port,
            "clamped_per_port_pps": clamped,
            "port_stats": {
                str(p): {k: ps[p].get(k) for k in ("opackets", "ipackets", "oerrors", "ierrors")} for p in ps
            },
        }
        if self.per_direction:
            rx, per_dir, wrong = self._rx_per_direction(stats, dirs, lat_pgs)
            details["rx_per_direction"] = per_dir
            details["misdelivered"] = wrong
        else:
            rx = sum(int(ps[p]["ipackets"]) for p in rx_ports)
        tg_errors = sum(int(ps[p].get("oerrors", 0)) for p in tx_ports) + sum(
            int(ps[p].get("ierrors", 0)) for p in rx_ports
        )
        asked = int(round(load_pps * duration_s))
        sendable = int(round(clamped * duration_s)) * len(dirs)
        stretched = elapsed > duration_s * (1 + self.stretch_tolerance) + 0.2
        details["stretched"] = stretched
        if lat_pgs:
            details["latency_pps"] = lat_pps
            details["latency"] = latency_by_direction(stats, lat_pgs)
        # TRex sends whole packets and stops on its own timer: a few packets per port short of
        # load x duration is that granularity (never sent, so never lost), not SUT loss.
        slack = ROUNDING_PACKETS_PER_PORT * len(dirs)
        rounding = asked - tx if clamped >= per_port and 0 < asked - tx <= slack else 0
        if rounding:
            details["rounding_packets"] = rounding
        limited = None
        if clamped < per_port:
            limited = LIMITED_BY_GENERATOR
        elif sendable - tx > slack:
            limited = LIMITED_BY_GENERATOR
            details["tg_tx_shortfall"] = sendable - tx  # TRex dropped them itself (low_end, full TX ring)
        result = TrialResult.from_counts(
            load_pps,
            duration_s,
            tx_packets=tx,
            rx_packets=rx,
            actual_duration_s=elapsed,
            intended_packets=asked - rounding,
            limited_by=limited,
            tg_drops=tg_errors,
            frame_size=str(self.profile.frame_size),
            details=details,
        )
        return result, stretched

    def _rx_per_direction(self, stats, dirs, lat_pgs) -> Tuple[int, Dict[str, int], int]:
        """Frames each direction delivered to ITS receiving port (flow stats per pg_id)."""
        fs = stats.get("flow_stats") or {}
        total, per_dir, wrong = 0, {}, 0
        for i, d in enumerate(dirs):
            name = f"{self.ports[d.tx_port]}->{self.ports[d.rx_port]}"
            pgs = self._data_pgs(i) + ([lat_pgs[name]] if name in lat_pgs else [])
            got = 0
            for pg in pgs:
                entry = _get(fs, pg)
                if entry is None:
                    raise TrialError(
                        f"TRex flow stats lack pg_id {pg} (direction {name}): got {sorted(map(str, fs))}"
                    )
                rxp = entry.get("rx_pkts") or {}
                got += int(_get(rxp, self.ports[d.rx_port], 0))
                wrong += sum(
                    int(v) for k, v in rxp.items() if str(k) not in ("total", str(self.ports[d.rx_port]))
                )
            per_dir[name] = got
            total += got
        return total, per_dir, wrong


def _limited(result: TrialResult) -> TrialResult:
    import dataclasses

    return dataclasses.replace(result, limited_by=LIMITED_BY_GENERATOR)
