"""Traffic profiles as in the methodology papers (seed 000, App. 13.4).

* ``l2``: N distinct (src MAC, dst MAC) flows per direction, both incremented pairwise
  packet by packet (default 3,125 per direction).
* ``ip4``: N distinct (src IP, dst IP) flows per direction, both incremented pairwise
  (default 62,500 per direction), UDP inside, frames addressed to the DUT port's MAC.

Frame sizes are L2 sizes *including* the 4 B FCS (64 B on the wire = 60 B in a pcap), or
IMIX (IMIX_v4_1: 64/570/1518 B in a 28:16:4 ratio, interleaved in a 48-frame cycle).

Flow-count cap: the embedded generator replays one pcap per direction that holds every
flow once (``flows`` frames, rounded up to a whole IMIX cycle). To keep pcap build time
and memory sensible the pcap holds at most ``MAX_PCAP_BYTES`` (32 MiB) of frames, so for
large frames the flow count is capped: 1518 B frames -> 22,104 flows; IMIX -> 62,500
flows fit. The applied count is reported (``Profile.effective_flows``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import List, Literal, Optional, Tuple

from dpgate.config.units import IMIX_V4_1, FrameSize, parse_frame_size
from dpgate.model.errors import ConfigError

#: Bases of the flow fields (pairwise increment from here), shared by every generator and the
#: lab SUTs' routes: direction 0 sends from 198.18.0.1 to 198.19.0.1 (RFC 2544 benchmark range).
L2_SRC_BASE, L2_DST_BASE = "02:01:00:00:00:00", "02:02:00:00:00:00"
IP_DIR0_SRC, IP_DIR0_DST = "198.18.0.1", "198.19.0.1"

MAX_PCAP_BYTES = 32 * 1024 * 1024
DEFAULT_FLOWS = {"l2": 3125, "ip4": 62500}
MAX_FLOWS = {"l2": 1 << 20, "ip4": 1 << 16}
FCS = 4


@dataclass(frozen=True)
class Direction:
    """One direction of traffic: leaves TG port ``tx_port`` and returns on ``rx_port``."""

    tx_port: int
    rx_port: int
    src_mac_base: str
    dst_mac_base: str
    src_ip_base: str
    dst_ip_base: str
    l2_fixed_dst: Optional[str] = None  # ip4: the DUT port MAC
    l2_fixed_src: Optional[str] = None  # ip4: the TG port MAC


@dataclass(frozen=True)
class Profile:
    kind: Literal["l2", "ip4"]
    frame_size: FrameSize
    flows: int
    bidirectional: bool = False

    @property
    def sizes_cycle(self) -> List[int]:
        """Frame sizes (with FCS) in replay order, one IMIX cycle or one size."""
        if self.frame_size == "IMIX":
            return imix_cycle()
        return [int(self.frame_size)]

    @property
    def effective_flows(self) -> int:
        cycle = self.sizes_cycle
        avg = sum(cycle) / len(cycle)
        cap = int(MAX_PCAP_BYTES // avg)
        return max(1, min(self.flows, cap))

    @property
    def frames_per_pcap(self) -> int:
        n = self.effective_flows
        c = len(self.sizes_cycle)
        return ((n + c - 1) // c) * c

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1


def imix_cycle() -> List[int]:
    """IMIX_v4_1 interleaved so any window of the replay has the 28:16:4 mix (48 frames)."""
    total = sum(n for _, n in IMIX_V4_1)
    out: List[int] = []
    credit = {s: 0.0 for s, _ in IMIX_V4_1}
    for _ in range(total):
        for s, n in IMIX_V4_1:
            credit[s] += n / total
        pick = max(credit, key=lambda s: (credit[s], -s))
        credit[pick] -= 1.0
        out.append(pick)
    return out


def make_profile(kind: str, frame_size, flows: Optional[int] = None, bidirectional: bool = False) -> Profile:
    if kind not in DEFAULT_FLOWS:
        raise ConfigError(
            f"unknown traffic profile {kind!r}; accepted: {', '.join(DEFAULT_FLOWS)}", path="profile"
        )
    size = parse_frame_size(frame_size)
    n = DEFAULT_FLOWS[kind] if flows is None else flows
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_FLOWS[kind]:
        raise ConfigError(
            f"flows must be an integer in 1..{MAX_FLOWS[kind]} for {kind}, got {flows!r}", path="flows"
        )
    return Profile(kind=kind, frame_size=size, flows=n, bidirectional=bidirectional)  # type: ignore[arg-type]  # kind checked above


def mac_add(mac: str, n: int) -> str:
    v = int(mac.replace(":", ""), 16) + n
    return ":".join(f"{(v >> s) & 0xFF:02x}" for s in range(40, -8, -8))


def ip_add(ip: str, n: int) -> str:
    return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address(ip)) + n))


def flow_addresses(direction: Direction, kind: str, i: int) -> Tuple[str, str, str, str]:
    """(src_mac, dst_mac, src_ip, dst_ip) of flow ``i`` (pairwise increment)."""
    if kind == "l2":
        return (
            mac_add(direction.src_mac_base, i),
            mac_add(direction.dst_mac_base, i),
            direction.src_ip_base,
            direction.dst_ip_base,
        )
    return (
        direction.l2_fixed_src or direction.src_mac_base,
        direction.l2_fixed_dst or direction.dst_mac_base,
        ip_add(direction.src_ip_base, i),
        ip_add(direction.dst_ip_base, i),
    )


def directions_for(topology, profile: Profile, dst_macs: Optional[List[str]] = None) -> List[Direction]:
    """Direction 0: TG port0 -> SUT -> TG port1; direction 1 the reverse."""
    (tg0, sut0), (tg1, sut1) = topology.pairs()[:2]
    d0 = Direction(
        tx_port=0,
        rx_port=1,
        src_mac_base=L2_SRC_BASE,
        dst_mac_base=L2_DST_BASE,
        src_ip_base=IP_DIR0_SRC,
        dst_ip_base=IP_DIR0_DST,
        l2_fixed_src=tg0.mac,
        l2_fixed_dst=sut0.mac,
    )
    d1 = Direction(
        tx_port=1,
        rx_port=0,
        src_mac_base=L2_DST_BASE,
        dst_mac_base=L2_SRC_BASE,
        src_ip_base=IP_DIR0_DST,
        dst_ip_base=IP_DIR0_SRC,
        l2_fixed_src=tg1.mac,
        l2_fixed_dst=sut1.mac,
    )
    return [d0, d1] if profile.bidirectional else [d0]
