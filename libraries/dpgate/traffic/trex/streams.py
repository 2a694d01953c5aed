"""TRex STL streams for the dpgate profiles (the same flows as the embedded pcaps).

* ``l2``: one flow variable 0..N-1 written into the low 4 bytes of both the source and the
  destination MAC (pairwise increment, 3,125 flows per port by default);
* ``ip4``: one flow variable written into both IPv4 source and destination (with their
  base as ``add_val``), then the IPv4 checksum fixed (62,500 flows per port by default).
  The server parses ``add_value`` as a signed 32-bit int (``'add_value' is 'uint',
  expecting 'int'`` for 198.18.0.1 = 3323068417) and adds modulo 2^32, so bases >= 2^31 are
  sent as ``base - 2**32``. The UDP checksum of the template is set to 0 ("none", RFC 768):
  the rewritten addresses would otherwise leave a wrong one;
* IMIX: three continuous streams of 64/570/1518 B weighted 28:16:4; otherwise one stream.
* MACs: every stream says ``mac_src_override_by_pkt=True`` and
  ``mac_dst_override_mode=STLStreamDstMAC_PKT``; without them the server overwrites the
  frames' MACs with its config file's (raw-buffer streams count as "default MAC").
* latency: one low-rate single-flow stream per direction with ``STLFlowLatencyStats(pg_id)``.
  ``mult`` scales every stream of a port, so with latency the streams are rebuilt per trial
  with absolute pps (data = R - L split by weight, latency = L): the trial's ``mult="<R>pps"``
  then scales by exactly 1 and the latency stream really runs at L.

Everything is built through ``api`` (the ``trex.stl.api`` module), so tests pass a fake.
"""

from __future__ import annotations

import ipaddress
from typing import Any, List, Optional, Sequence

from dpgate.config.units import IMIX_V4_1
from dpgate.traffic.pcap import build_frame
from dpgate.traffic.profiles import Direction, Profile

ETH_DST_LOW, ETH_SRC_LOW = 2, 8  # offsets of the low 4 bytes of dst / src MAC
IP_SRC, IP_DST = 26, 30
UDP_CSUM = 40  # Ethernet 14 + IPv4 20 + UDP checksum at 6


def signed32(value: int) -> int:
    """The field engine's ``add_val`` as the server accepts it (signed 32-bit, wraps mod 2^32).

    >>> signed32(3323068417), signed32(5)
    (-971898879, 5)
    """
    return value - 2**32 if value >= 2**31 else value


def without_udp_checksum(frame: bytes) -> bytes:
    """The frame with UDP checksum 0 (no checksum), for templates whose IPs the field engine rewrites."""
    return frame[:UDP_CSUM] + b"\x00\x00" + frame[UDP_CSUM + 2 :]


class StreamBuilder:
    def __init__(self, api: Any, latency_pps: float = 1000.0):
        self.api = api
        self.latency_pps = latency_pps

    def sizes(self, profile: Profile):
        """[(frame size, weight)]: the IMIX mix or the single size."""
        if profile.frame_size == "IMIX":
            return [(s, n) for s, n in IMIX_V4_1]
        return [(int(profile.frame_size), 1)]

    def vm(self, profile: Profile, direction: Direction) -> Any:
        a = self.api
        n = profile.flows
        var = a.STLVmFlowVar(name="flow", min_value=0, max_value=n - 1, size=4, op="inc")
        if profile.kind == "l2":
            cmds = [
                var,
                a.STLVmWrFlowVar(fv_name="flow", pkt_offset=ETH_SRC_LOW),
                a.STLVmWrFlowVar(fv_name="flow", pkt_offset=ETH_DST_LOW),
            ]
        else:
            src = int(ipaddress.IPv4Address(direction.src_ip_base))
            dst = int(ipaddress.IPv4Address(direction.dst_ip_base))
            cmds = [
                var,
                a.STLVmWrFlowVar(fv_name="flow", pkt_offset=IP_SRC, add_val=signed32(src)),
                a.STLVmWrFlowVar(fv_name="flow", pkt_offset=IP_DST, add_val=signed32(dst)),
                a.STLVmFixIpv4(offset=14),
            ]
        return a.STLScVmRaw(cmds)

    def base_frame(self, profile: Profile, direction: Direction, size: int) -> bytes:
        if profile.kind == "l2":
            smac, dmac = direction.src_mac_base, direction.dst_mac_base
        else:
            smac = direction.l2_fixed_src or direction.src_mac_base
            dmac = direction.l2_fixed_dst or direction.dst_mac_base
        # ip4: the flow variable adds the base address, so the template carries 0.0.0.0
        sip = direction.src_ip_base if profile.kind == "l2" else "0.0.0.0"
        dip = direction.dst_ip_base if profile.kind == "l2" else "0.0.0.0"
        frame = build_frame(smac, dmac, sip, dip, size)
        return frame if profile.kind == "l2" else without_udp_checksum(frame)

    def stream(self, pkt: Any, pps: float, flow_stats: Any = None) -> Any:
        """An STLStream that keeps the packet's own MACs (see the module doc)."""
        a = self.api
        return a.STLStream(
            packet=pkt,
            mode=a.STLTXCont(pps=pps),
            flow_stats=flow_stats,
            mac_src_override_by_pkt=True,
            mac_dst_override_mode=a.STLStreamDstMAC_PKT,
        )

    def _flow_stats(self, pg_ids: Optional[Sequence[int]], k: int) -> Any:
        return self.api.STLFlowStats(pg_id=pg_ids[k]) if pg_ids else None

    def streams(
        self, profile: Profile, direction: Direction, pg_ids: Optional[Sequence[int]] = None
    ) -> List[Any]:
        """Continuous streams of one direction; their pps are weights (the trial's ``mult``
        sets the port's total rate). ``pg_ids``: one flow-stats id per stream (per-direction rx)."""
        a = self.api
        total = sum(w for _, w in self.sizes(profile))
        out = []
        for k, (size, weight) in enumerate(self.sizes(profile)):
            pkt = a.STLPktBuilder(
                pkt_buffer=self.base_frame(profile, direction, size), vm=self.vm(profile, direction)
            )
            out.append(self.stream(pkt, weight / total, self._flow_stats(pg_ids, k)))
        return out

    def latency_stream(self, profile: Profile, direction: Direction, pg_id: int, pps: float) -> Any:
        """One continuous single-flow stream of the profile's (smallest) frame size, measured
        by TRex latency flow stats under ``pg_id``."""
        a = self.api
        size = min(s for s, _ in self.sizes(profile))
        pkt = a.STLPktBuilder(pkt_buffer=self.base_frame_latency(profile, direction, size))
        return self.stream(pkt, pps, flow_stats=a.STLFlowLatencyStats(pg_id=pg_id))

    def base_frame_latency(self, profile: Profile, direction: Direction, size: int) -> bytes:
        """The first flow of the direction, as a fixed frame (no field engine)."""
        if profile.kind == "l2":
            return build_frame(
                direction.src_mac_base,
                direction.dst_mac_base,
                direction.src_ip_base,
                direction.dst_ip_base,
                size,
            )
        return build_frame(
            direction.l2_fixed_src or direction.src_mac_base,
            direction.l2_fixed_dst or direction.dst_mac_base,
            direction.src_ip_base,
            direction.dst_ip_base,
            size,
        )

    def trial_streams(
        self,
        profile: Profile,
        direction: Direction,
        port_pps: float,
        latency_pps: float,
        pg_id: int,
        pg_ids: Optional[Sequence[int]] = None,
    ) -> List[Any]:
        """Data streams at absolute pps summing to ``port_pps - latency_pps``, plus the latency stream.

        Example: 64B, ``port_pps=1e6``, ``latency_pps=1e3`` → one data stream at 999,000 pps
        and one latency stream at 1,000 pps (pg_id).
        """
        a = self.api
        sizes = self.sizes(profile)
        total = sum(w for _, w in sizes)
        data_pps = max(port_pps - latency_pps, 0.0)
        out = []
        for k, (size, weight) in enumerate(sizes):
            pkt = a.STLPktBuilder(
                pkt_buffer=self.base_frame(profile, direction, size), vm=self.vm(profile, direction)
            )
            out.append(self.stream(pkt, data_pps * weight / total, self._flow_stats(pg_ids, k)))
        out.append(self.latency_stream(profile, direction, pg_id, latency_pps))
        return out
