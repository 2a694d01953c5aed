"""FAKE TRex STL client and api module for unit tests (the boundary: ``trex.stl.api``).

The fake refuses what TRex v3.08 refuses, with the texts of its sources:

* ``connect`` to a dead server: ``*** [RPC] - Failed to get server response from tcp://...``
  (common/trex_req_resp_client.py);
* ``acquire`` of a port another user holds: ``Port 0 : *** port is already taken by 'alice'``
  (server acquire RPC, seen on the real server);
* ``add_streams`` on a port not acquired: ``port(s) [0]: must be acquired`` (common/trex_psv.py);
  a field-engine ``add_val`` outside signed 32 bits: ``'add_value' is 'uint', expecting 'int'``
  (server JSON check, seen on the real server);
* ``start`` on a link-down port without force: ``port(s) [1]: link is DOWN - check the
  connection or specify 'force'`` (trex_stl_client.py __pre_start_check);
* ``reset`` force-acquires like the real one: taking another user's port is recorded in
  ``stolen`` (the driver must never cause it).

Streams may be the real client's ``STLStream`` objects (their ``to_json()`` is checked) or the
recording tuples of ``fake_api()``.
"""

from __future__ import annotations

import time
import types
from typing import Any, Dict, List, Optional


def fake_api():
    """A stand-in for trex.stl.api: every constructor records its keyword arguments."""
    api = types.SimpleNamespace()
    for name in (
        "STLStream",
        "STLPktBuilder",
        "STLTXCont",
        "STLVmFlowVar",
        "STLVmWrFlowVar",
        "STLVmFixIpv4",
        "STLFlowLatencyStats",
        "STLFlowStats",
    ):
        setattr(api, name, (lambda n: lambda *a, **k: (n, a, k))(name))
    api.STLScVmRaw = lambda cmds: ("STLScVmRaw", cmds)
    api.STLStreamDstMAC_PKT = 1
    return api


def _stream_facts(stream: Any) -> Dict[str, Any]:
    """pps, pg_id, latency?, add_vals of a fake-api tuple or a real STLStream."""
    if isinstance(stream, tuple):
        k = stream[2]
        fs = k.get("flow_stats")
        vm = (k["packet"][2].get("vm") or ("", []))[1]
        return {
            "pps": k["mode"][2]["pps"],
            "pg_id": fs[2]["pg_id"] if fs else None,
            "latency": bool(fs) and fs[0] == "STLFlowLatencyStats",
            "add_vals": [c[2].get("add_val", 0) for c in vm if c[0] == "STLVmWrFlowVar"],
        }
    j = stream.to_json()
    fs = j.get("flow_stats") or {}
    instrs = (j.get("vm") or {}).get("instructions", [])
    return {
        "pps": j["mode"]["rate"]["value"],
        "pg_id": fs.get("stream_id") if fs.get("enabled") else None,
        "latency": fs.get("rule_type") == "latency",
        "add_vals": [i.get("add_value", 0) for i in instrs if i.get("type") == "write_flow_var"],
    }


class FakeTrexClient:
    """Records calls; returns TRex-shaped stats (per-port counters, flow_stats per pg_id).

    ``forward``: fraction of sent frames delivered to the other port; ``bounce``: fraction
    that comes back on the sending port (an NF sending misses back where they came from).
    """

    def __init__(
        self,
        forward=1.0,
        send=1.0,
        stretch_s=0.0,
        fail=None,
        ierrors=0,
        bounce=0.0,
        held_by: Optional[Dict[int, str]] = None,
        link_down=(),
        unreachable=False,
        server="10.30.51.20",
        short=0,
        shared: Optional[Dict[int, str]] = None,
        username: str = "root",
    ):
        self.calls: List = []
        self.forward, self.send, self.stretch_s, self.fail, self.ierrors = (
            forward,
            send,
            stretch_s,
            fail,
            ierrors,
        )
        self.bounce = bounce
        self.short = short  # packets per port fewer than rate x duration (TRex's timer granularity)
        self.stretches_left = 99 if stretch_s else 0
        self.held_by = dict(held_by or {})
        self.link_down = set(link_down)
        self.unreachable = unreachable
        self.server = server
        self.acquired: set = set()
        #: port -> user over all clients of one fake server (``shared``); ``held_by`` seeds it
        self.holders = shared if shared is not None else {}
        self.holders.update(self.held_by)
        self.username = username
        self.stolen: List[int] = []
        self.prom: Dict[int, bool] = {}
        self.streams: Dict[int, List[Dict[str, Any]]] = {0: [], 1: []}
        self.tx_ports: List[int] = []
        self.pps = 0.0
        self.duration = 0.0

    def _rec(self, name, **k):
        self.calls.append((name, k))
        if self.fail and self.fail[0] == name:
            raise RuntimeError(self.fail[1])

    def connect(self):
        self._rec("connect")
        if self.unreachable:
            raise RuntimeError(f"*** [RPC] - Failed to get server response from tcp://{self.server}:4501")

    def get_server_version(self):
        return {"version": "v3.08", "mode": "STL", "build_date": "Nov 23 2026"}

    def acquire(self, ports, force=False):
        self._rec("acquire", ports=ports, force=force)
        taken = [p for p in ports if p in self.holders and p not in self.acquired and not force]
        if taken:
            raise RuntimeError(
                "\n".join(f"Port {p} : *** port is already taken by '{self.holders[p]}'" for p in taken)
            )
        self.acquired.update(ports)
        self.holders.update({p: self.username for p in ports})

    def reset(self, ports):
        self._rec("reset", ports=ports)
        self.stolen += [p for p in ports if p in self.holders and p not in self.acquired]
        self.acquired.update(ports)
        self.holders.update({p: self.username for p in ports})
        for p in ports:
            self.prom[p] = False
            self.streams[p] = []

    def get_port_attr(self, port):
        return {
            "link": "DOWN" if port in self.link_down else "UP",
            "prom": "on" if self.prom.get(port) else "off",
            "prom_supported": "yes",
        }

    def set_port_attr(self, ports, promiscuous=None):
        self._rec("set_port_attr", ports=ports, promiscuous=promiscuous)
        for p in ports:
            self.prom[p] = bool(promiscuous)

    def _check_acquired(self, ports):
        bad = [p for p in ports if p not in self.acquired]
        if bad:
            raise RuntimeError(f"port(s) {bad}: must be acquired")

    def add_streams(self, streams, ports):
        self._rec("add_streams", streams=streams, ports=ports)
        self._check_acquired(ports)
        facts = [_stream_facts(s) for s in streams]
        for f in facts:
            if any(not -(2**31) <= v < 2**31 for v in f["add_vals"]):
                raise RuntimeError(
                    f"Port {ports[0]} : *** error at offset: 719 - 'add_value' is 'uint', expecting 'int'"
                )
        for p in ports:
            self.streams[p] = self.streams.get(p, []) + facts

    def remove_all_streams(self, ports):
        self._rec("remove_all_streams", ports=ports)
        for p in ports:
            self.streams[p] = []

    def clear_stats(self):
        self._rec("clear_stats")

    def start(self, ports, mult, duration, force=False):
        self._rec("start", ports=ports, mult=mult, duration=duration, force=force)
        self._check_acquired(ports)
        down = sorted(p for p in ports if p in self.link_down)
        if down and not force:
            raise RuntimeError(f"port(s) {down}: link is DOWN - check the connection or specify 'force'")
        self.pps, self.duration, self.tx_ports = float(mult[:-3]), duration, ports
        self.t0 = time.monotonic()
        self.active_s = self.stretch_s if self.stretches_left else 0.0
        if self.stretches_left:
            self.stretches_left -= 1

    def is_traffic_active(self, ports):
        return time.monotonic() - self.t0 < self.active_s

    def wait_on_traffic(self, ports, rx_delay_ms=None, timeout=None):
        self._rec("wait_on_traffic", ports=ports, rx_delay_ms=rx_delay_ms)

    def _sent(self, port) -> int:
        return int(self.pps * self.duration * self.send) - self.short if port in self.tx_ports else 0

    def get_stats(self):
        self._rec("get_stats")
        out: Dict[Any, Any] = {}
        fs: Dict[Any, Any] = {}
        for p in (0, 1):
            out[p] = {"opackets": self._sent(p), "ipackets": 0, "oerrors": 0, "ierrors": 0}
        for p in self.tx_ports:
            other = 1 - p
            sent = self._sent(p)
            out[other]["ipackets"] += int(sent * self.forward)
            out[p]["ipackets"] += int(sent * self.bounce)
            streams = self.streams.get(p) or []
            total_pps = sum(s["pps"] for s in streams) or 1.0
            left = sent
            for i, s in enumerate(streams):
                n = left if i == len(streams) - 1 else round(sent * s["pps"] / total_pps)
                left -= n
                if s["pg_id"] is None:
                    continue
                fs[s["pg_id"]] = {
                    "tx_pkts": {p: n, other: 0, "total": n},
                    "rx_pkts": {
                        other: int(n * self.forward),
                        p: int(n * self.bounce),
                        "total": int(n * (self.forward + self.bounce)),
                    },
                }
        for p in (0, 1):
            if out[p]["ipackets"]:
                out[p]["ierrors"] = self.ierrors
        out["flow_stats"] = fs
        return out

    def disconnect(self, stop_traffic=True, release_ports=True):
        self._rec(
            "disconnect",
            **(
                {}
                if stop_traffic and release_ports
                else {"stop_traffic": stop_traffic, "release_ports": release_ports}
            ),
        )
        for p in self.acquired:  # the real disconnect releases the ports it holds
            if self.holders.get(p) == self.username:
                del self.holders[p]
        self.acquired = set()
