"""Frame building and pcap writing (Ethernet / IPv4 / UDP), with correct checksums.

Each pcap holds one replay cycle of a :class:`~dpgate.traffic.profiles.Profile` direction:
frame ``i`` carries flow ``i mod flows`` and size ``cycle[i mod len(cycle)]``.

>>> f = build_frame("02:00:00:00:00:01", "02:00:00:00:00:11", "198.18.0.1", "198.19.0.1", 64)
>>> len(f)  # 64 B on the wire minus the 4 B FCS
60
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Iterator, List, Tuple

from .profiles import FCS, Direction, Profile, flow_addresses

PCAP_MAGIC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
UDP_SRC_PORT = 1024
UDP_DST_PORT = 1024


def _mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def ip_checksum(header: bytes) -> int:
    if len(header) % 2:
        header += b"\0"
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def build_frame(src_mac: str, dst_mac: str, src_ip: str, dst_ip: str, size: int, ident: int = 0) -> bytes:
    """An Ethernet/IPv4/UDP frame of ``size`` bytes on the wire (pcap length size-4)."""
    length = size - FCS
    ip_len = length - 14
    udp_len = ip_len - 20
    src = ipaddress.IPv4Address(src_ip).packed
    dst = ipaddress.IPv4Address(dst_ip).packed
    iph = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, ident & 0xFFFF, 0, 64, 17, 0, src, dst)
    iph = iph[:10] + struct.pack("!H", ip_checksum(iph)) + iph[12:]
    payload = bytes(udp_len - 8)
    udph = struct.pack("!HHHH", UDP_SRC_PORT, UDP_DST_PORT, udp_len, 0)
    pseudo = src + dst + struct.pack("!BBH", 0, 17, udp_len)
    csum = ip_checksum(pseudo + udph + payload) or 0xFFFF
    udph = udph[:6] + struct.pack("!H", csum)
    eth = _mac_bytes(dst_mac) + _mac_bytes(src_mac) + b"\x08\x00"
    return eth + iph + udph + payload


def frames(profile: Profile, direction: Direction) -> Iterator[bytes]:
    cycle = profile.sizes_cycle
    n = profile.effective_flows
    for i in range(profile.frames_per_pcap):
        flow = i % n
        smac, dmac, sip, dip = flow_addresses(direction, profile.kind, flow)
        yield build_frame(smac, dmac, sip, dip, cycle[i % len(cycle)], ident=i)


def write_pcap(path: str, packets) -> int:
    """Write packets to a classic pcap file; returns the number written."""
    count = 0
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", PCAP_MAGIC, 2, 4, 0, 0, 65535, LINKTYPE_ETHERNET))
        for i, pkt in enumerate(packets):
            fh.write(struct.pack("<IIII", i // 1_000_000, i % 1_000_000, len(pkt), len(pkt)))
            fh.write(pkt)
            count += 1
    return count


def read_pcap(path: str) -> List[bytes]:
    """Read back a classic pcap (for tests and inspection)."""
    out = []
    with open(path, "rb") as fh:
        hdr = fh.read(24)
        magic = struct.unpack("<I", hdr[:4])[0]
        if magic != PCAP_MAGIC:
            raise ValueError(f"{path}: not a little-endian classic pcap (magic {magic:#x})")
        while True:
            rec = fh.read(16)
            if len(rec) < 16:
                break
            _, _, incl, _ = struct.unpack("<IIII", rec)
            out.append(fh.read(incl))
    return out


def parse_frame(frame: bytes) -> Tuple[str, str, str, str, int]:
    """(src_mac, dst_mac, src_ip, dst_ip, wire size) of a frame built here."""
    dst = ":".join(f"{b:02x}" for b in frame[0:6])
    src = ":".join(f"{b:02x}" for b in frame[6:12])
    sip = str(ipaddress.IPv4Address(frame[26:30]))
    dip = str(ipaddress.IPv4Address(frame[30:34]))
    return src, dst, sip, dip, len(frame) + FCS
