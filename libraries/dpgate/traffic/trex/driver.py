"""The TRex STL trial: ``TrexGenerator.measure(load_pps, duration_s) -> TrialResult``.

Trial discipline (the TRex/CSIT users' top pains, handled):

* reset, add streams, **clear stats**, ``start(ports, mult="<R>pps", duration=D)``;
* ``wait_on_traffic(rx_delay_ms=...)`` plus a settle delay before reading counters, so late
  packets are not counted as lost (no phantom loss);
* **duration stretching** (the TG needed longer than D to send R x D): the trial is invalid
  and retried, up to ``max_retries``, then fails with a clear error;
* TG port errors (``ierrors``/``oerrors``) are reported as ``tg_drops``, not blamed on the SUT;
* a shortfall of at most ``ROUNDING_PACKETS_PER_PORT`` packets per port against load x
  duration is TRex's whole-packet/timer granularity: those packets were never sent, so the
  trial's intended count is lowered by them (reported as ``details["rounding_packets"]``);
  any larger shortfall counts as loss, as everywhere in dpgate;
* requested rates are clamped to line rate (frame + 20 B preamble/IFG) and the NIC's
  ``pps_limit`` from the topology; the clamp is reported in ``details``;
* server unreachable, port owned by another user, link down: one clear error each.

Load is the aggregate over directions (bidirectional: half per port), as in the embedded
generator.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Any, Callable, Dict, Optional

from dpgate.config.units import average_frame_size
from dpgate.model.errors import EnvironmentProblem, TrialError
from dpgate.model.trial import LIMITED_BY_GENERATOR, TrialResult
from dpgate.traffic.profiles import Profile, directions_for
from dpgate.traffic.trex.streams import StreamBuilder

#: TG shortfall per port (packets) treated as TRex's start/stop granularity, not loss.
ROUNDING_PACKETS_PER_PORT = 2

OLD_CLIENT_MSG = (
    "the TRex client found is PyPI trex-stl-lib 0.3 (package trex_stl_lib), which speaks RPC API 4.1; "
    "TRex v3.x servers require API 5.x. Fix: set trex.client_path in the topology to "
    "<trex>/scripts/automation/trex_control_plane/interactive of your TRex install, "
    "or 'pip install lbr-trex-client' (TRex v3.04 client)"
)


def import_trex_api(client_path: Optional[str] = None, importer: Callable = importlib.import_module):
    """The ``trex.stl.api`` module of a TRex v3.x client, or one clear error."""
    if client_path:
        if not os.path.isdir(client_path):
            raise EnvironmentProblem(f"trex.client_path {client_path!r} does not exist: point it at "
                                     "<trex>/scripts/automation/trex_control_plane/interactive")
        if client_path not in sys.path:
            sys.path.insert(0, client_path)
    try:
        return importer("trex.stl.api")
    except ImportError as first:
        err: ImportError = first
    if not client_path:
        # PyPI lbr-trex-client ships the client as lbr_trex_client/interactive/trex/...; importing
        # lbr_trex_client puts that directory on sys.path, after which trex.stl.api imports.
        try:
            importer("lbr_trex_client")
            return importer("trex.stl.api")
        except ImportError:
            pass
    try:
        importer("trex_stl_lib")
    except ImportError:
        pass
    else:
        raise EnvironmentProblem(OLD_CLIENT_MSG) from None
    raise EnvironmentProblem(
        f"no TRex v3.x Python client ({err}): set trex.client_path in the topology to your TRex install's "
        "scripts/automation/trex_control_plane/interactive, or 'pip install lbr-trex-client'") from None


def explain_trex_error(err: Exception, server: str) -> Exception:
    """Map TRex client errors to one clear dpgate error."""
    text = str(err)
    low = text.lower()
    # the v3.x client says "Mismatch between client and server versions" when the server lacks
    # api_sync_v2 (v2.30 and older); servers reject a wrong API major with an "API" version error
    if ("api" in low and ("version" in low or "mismatch" in low)) or ("mismatch" in low and "version" in low):
        return EnvironmentProblem(f"TRex client/server API mismatch with {server}: {text.strip()}. "
                                  "dpgate needs a TRex v3.x server and its client (STL RPC API 5.x); "
                                  "servers v2.30 and older, and PyPI trex-stl-lib 0.3 (API 4.1), do not fit. "
                                  "Use the client shipped with the server's TRex version (trex.client_path) "
                                  "or upgrade the server")
    if "connection refused" in low or "timeout" in low or "unable to connect" in low or "not connected" in low:
        return EnvironmentProblem(f"TRex server {server} unreachable: {text.strip()}. Is t-rex-64 -i running, "
                                  "and are the sync/async ports (4501/4500) open?")
    if "owned by" in low or "is not owned" in low or "acquire" in low:
        return EnvironmentProblem(f"TRex port busy on {server}: {text.strip()}. Another user holds it; "
                                  "release it (or use force acquire only if you know it is stale)")
    if "link" in low and "down" in low:
        return EnvironmentProblem(f"TRex port link down on {server}: {text.strip()}. Check cabling and the DUT NIC")
    return TrialError(f"TRex error on {server}: {text.strip()}")


class TrexGenerator:
    def __init__(self, topology, profile: Profile, client: Any = None, api: Any = None,
                 settle_s: float = 0.5, rx_delay_ms: int = 100, max_retries: int = 3,
                 stretch_tolerance: float = 0.01, latency_pps: float = 0.0):
        self.topology = topology
        self.profile = profile
        tg = topology.tg
        self.server = tg.trex.server if tg.trex else "?"
        self.api = api if api is not None else import_trex_api(tg.trex.client_path if tg.trex else None)
        self.client = client if client is not None else self.api.STLClient(
            server=self.server, sync_port=tg.trex.sync_port, async_port=tg.trex.async_port)
        self.ports = list(tg.trex.ports) if tg.trex else [0, 1]
        self.settle_s = settle_s
        self.rx_delay_ms = rx_delay_ms
        self.max_retries = max_retries
        self.stretch_tolerance = stretch_tolerance
        #: pps of the latency stream per direction (0: no latency streams); CSIT-like 10 kpps
        #: is typical. Capped at 10 % of a port's rate so low-rate trials stay data-dominated.
        self.latency_pps = latency_pps
        self.builder = StreamBuilder(self.api)
        self.connected = False

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
        try:
            self.client.connect()
            self.client.reset(ports=self.ports)
            self._check_links()
            if not self.latency_pps:  # with latency, streams are built per trial (absolute pps)
                for d in directions_for(self.topology, self.profile):
                    port = self.ports[d.tx_port]
                    self.client.add_streams(self.builder.streams(self.profile, d), ports=[port])
        except Exception as err:  # the client raises its own STLError
            raise explain_trex_error(err, self.server) from None
        self.connected = True

    def _check_links(self) -> None:
        """Fail before any trial if a TG port's link is down (``get_port_attr(port)["link"]``)."""
        get_attr = getattr(self.client, "get_port_attr", None)
        if get_attr is None:
            return
        down = [p for p in self.ports if str((get_attr(p) or {}).get("link", "UP")).upper() == "DOWN"]
        if down:
            raise EnvironmentProblem(f"TRex port link down on {self.server}: ports {down}. Check cabling, the "
                                     "DUT NIC (is the SUT started and its ports up?) and transceivers")

    def disconnect(self) -> None:
        if self.connected:
            try:
                self.client.disconnect()
            finally:
                self.connected = False

    def close(self) -> None:
        """The TrafficGenerator seam's end: release the ports and the TRex session."""
        self.disconnect()

    # -- the seam ------------------------------------------------------------------------
    def measure(self, load_pps: float, duration_s: float) -> TrialResult:
        if not self.connected:
            self.connect()
        for attempt in range(1, self.max_retries + 1):
            result, stretched = self._trial(load_pps, duration_s, attempt)
            if not stretched:
                return result
        raise TrialError(
            f"TRex stretched the trial duration {self.max_retries} times at {load_pps:.0f} pps "
            f"({duration_s:g} s intended): the TG cannot send this rate; lower max_rate or check the TG host")

    def _trial(self, load_pps: float, duration_s: float, attempt: int):
        dirs = directions_for(self.topology, self.profile)
        tx_ports = [self.ports[d.tx_port] for d in dirs]
        rx_ports = [self.ports[d.rx_port] for d in dirs]
        per_port = load_pps / len(dirs)
        limits = [self.port_limit_pps(d.tx_port) for d in dirs]
        clamped = min([per_port] + [lim for lim in limits if lim])
        intended_per_port = int(round(clamped * duration_s))
        lat_pps = min(self.latency_pps, clamped * 0.1) if self.latency_pps else 0.0
        pg_ids = {}
        try:
            if self.latency_pps:
                self.client.remove_all_streams(ports=tx_ports)
                for i, d in enumerate(dirs):
                    pg_ids[f"{self.ports[d.tx_port]}->{self.ports[d.rx_port]}"] = pg_id = 1 + i
                    self.client.add_streams(self.builder.trial_streams(self.profile, d, clamped, lat_pps, pg_id),
                                            ports=[self.ports[d.tx_port]])
            self.client.clear_stats()
            t0 = time.monotonic()
            self.client.start(ports=tx_ports, mult=f"{clamped:.3f}pps", duration=duration_s, force=True)
            self.client.wait_on_traffic(ports=tx_ports, rx_delay_ms=self.rx_delay_ms)
            elapsed = time.monotonic() - t0 - self.rx_delay_ms / 1000.0
            time.sleep(self.settle_s)
            stats = self.client.get_stats()
        except Exception as err:
            raise explain_trex_error(err, self.server) from None
        for p in tx_ports + rx_ports:
            if p not in stats and str(p) not in stats:
                raise TrialError(f"TRex stats lack port {p}: got keys {sorted(map(str, stats))}")
        ps = {p: stats.get(p, stats.get(str(p))) for p in set(tx_ports + rx_ports)}
        tx = sum(int(ps[p]["opackets"]) for p in tx_ports)
        rx = sum(int(ps[p]["ipackets"]) for p in rx_ports)
        tg_errors = sum(int(ps[p].get("oerrors", 0)) for p in tx_ports) + \
            sum(int(ps[p].get("ierrors", 0)) for p in rx_ports)
        intended = intended_per_port * len(dirs)
        stretched = elapsed > duration_s * (1 + self.stretch_tolerance) + 0.2 and tx >= intended * 0.999
        details: Dict[str, Any] = {
            "generator": "trex", "server": self.server, "attempt": attempt, "elapsed_s": round(elapsed, 3),
            "stretched": stretched, "requested_per_port_pps": per_port, "clamped_per_port_pps": clamped,
            "port_stats": {str(p): {k: ps[p].get(k) for k in ("opackets", "ipackets", "oerrors", "ierrors")}
                           for p in ps},
        }
        if pg_ids:
            details["latency_pps"] = lat_pps
            details["latency"] = latency_by_direction(stats, pg_ids)
        limited = LIMITED_BY_GENERATOR if clamped < per_port else None
        asked = int(round(load_pps * duration_s))
        # TRex sends whole packets and stops on its own timer: a few packets per port short of
        # load x duration is that granularity (never sent, so never lost), not SUT loss.
        rounding = asked - tx if limited is None and 0 < asked - tx <= ROUNDING_PACKETS_PER_PORT * len(dirs) else 0
        if rounding:
            details["rounding_packets"] = rounding
        result = TrialResult.from_counts(
            load_pps, duration_s, tx_packets=tx, rx_packets=rx, actual_duration_s=elapsed,
            intended_packets=asked - rounding, limited_by=limited, tg_drops=tg_errors,
            frame_size=str(self.profile.frame_size), details=details)
        return result, stretched


def latency_by_direction(stats: Dict[Any, Any], pg_ids: Dict[str, int]) -> Dict[str, Any]:
    """Per direction ("0->1"): latency summary and error counters from ``stats["latency"][pg_id]``.

    TRex reports ``{"latency": {pg_id: {"latency": {"total_min", "average", "total_max",
    "hdrh", ...}, "err_cntrs": {"dropped", "out_of_order", ...}}}}``.
    """
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
    """min/avg/max (us) and, with an hdrh histogram, p50/p90/p99/p99.9 decoded by hdrhistogram."""
    out: Dict[str, Any] = {"min_us": lat.get("total_min"), "avg_us": lat.get("average"), "max_us": lat.get("total_max")}
    hdrh = lat.get("hdrh")
    if hdrh:
        from hdrh.histogram import HdrHistogram

        h = HdrHistogram.decode(hdrh)
        for q in (50, 90, 99, 99.9):
            out[f"p{q:g}_us"] = h.get_value_at_percentile(q)
    return out

