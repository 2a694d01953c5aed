"""Unit tests for traffic profiles and pcap building: flow counts, frame sizes (IMIX mix),
pairwise field increments, IPv4 and UDP checksums, the flow cap, pcap round trip."""

from __future__ import annotations

import collections
import doctest
import ipaddress
import os
import shutil
import struct
import subprocess

import pytest

import dpgate.traffic.pcap as pcapmod
import dpgate.traffic.profiles as profiles
from dpgate.config.topology import load_topology
from dpgate.config.units import IMIX_V4_1, UnitError
from dpgate.model.errors import ConfigError
from dpgate.traffic.pcap import build_frame, frames, ip_checksum, parse_frame, read_pcap, write_pcap
from dpgate.traffic.profiles import (
    DEFAULT_FLOWS,
    FCS,
    MAX_FLOWS,
    MAX_PCAP_BYTES,
    directions_for,
    imix_cycle,
    ip_add,
    mac_add,
    make_profile,
)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def topo():
    return load_topology(os.path.join(ROOT, "topologies", "embedded.yaml"), prefix="ut-")


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


def build(topo, tmp_path, kind, size, flows=None, bidirectional=False, direction=0):
    prof = make_profile(kind, size, flows, bidirectional)
    d = directions_for(topo, prof)[direction]
    path = str(tmp_path / f"{kind}-{size}-{direction}.pcap")
    n = write_pcap(path, frames(prof, d))
    pkts = read_pcap(path)
    assert n == len(pkts) == prof.frames_per_pcap
    return prof, d, pkts


def verify_checksums(frame: bytes) -> None:
    """Independent check: one's-complement sums over header and pseudo-header are 0xFFFF."""
    assert frame[12:14] == b"\x08\x00"  # IPv4 ethertype
    ihl = (frame[14] & 0x0F) * 4
    iph = frame[14 : 14 + ihl]
    assert ihl == 20 and frame[14] >> 4 == 4

    def fold(data: bytes) -> int:
        if len(data) % 2:
            data += b"\0"
        s = sum(struct.unpack(f"!{len(data) // 2}H", data))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return s

    assert fold(iph) == 0xFFFF, "IPv4 header checksum does not verify"
    total_len = struct.unpack("!H", iph[2:4])[0]
    assert total_len == len(frame) - 14
    assert iph[9] == 17  # UDP
    udp = frame[14 + ihl : 14 + total_len]
    udp_len = struct.unpack("!H", udp[4:6])[0]
    assert udp_len == len(udp)
    assert struct.unpack("!H", udp[6:8])[0] != 0  # checksum present
    pseudo = iph[12:20] + struct.pack("!BBH", 0, 17, udp_len)
    assert fold(pseudo + udp) == 0xFFFF, "UDP checksum does not verify"


def test_doctests():
    for mod in (pcapmod, profiles):
        res = doctest.testmod(mod)
        assert res.failed == 0
    assert doctest.testmod(pcapmod).attempted > 0


# -- single frames -----------------------------------------------------------------


@pytest.mark.parametrize("size", [64, 65, 128, 570, 1500, 1518, 9216])
def test_frame_length_is_size_minus_fcs(size):
    f = build_frame("02:00:00:00:00:01", "02:00:00:00:00:11", "198.18.0.1", "198.19.0.1", size, ident=7)
    assert len(f) == size - FCS == size - 4
    verify_checksums(f)
    assert parse_frame(f) == ("02:00:00:00:00:01", "02:00:00:00:00:11", "198.18.0.1", "198.19.0.1", size)


@pytest.mark.parametrize(
    "sip, dip, ident",
    [
        ("198.18.0.1", "198.19.0.1", 0),
        ("198.19.255.254", "198.18.0.255", 65535),
        ("198.18.12.34", "198.19.56.78", 70000),
    ],
)
def test_checksums_verify_for_various_fields(sip, dip, ident):
    f = build_frame("02:01:00:00:00:00", "02:02:00:00:0c:34", sip, dip, 64, ident=ident)
    verify_checksums(f)
    assert struct.unpack("!H", f[18:20])[0] == ident & 0xFFFF


def test_ip_checksum_known_vector():
    # RFC 1071 style example header (checksum field zeroed) -> 0xB861
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert ip_checksum(hdr) == 0xB861
    # odd length is padded
    assert ip_checksum(b"\x01") == (~0x0100) & 0xFFFF


def test_corrupted_frame_fails_verification():
    f = bytearray(build_frame("02:00:00:00:00:01", "02:00:00:00:00:11", "198.18.0.1", "198.19.0.1", 64))
    f[30] ^= 0x01  # flip a bit of the destination address
    with pytest.raises(AssertionError):
        verify_checksums(bytes(f))


# -- profiles ------------------------------------------------------------------------


def test_default_flow_counts():
    assert DEFAULT_FLOWS == {"l2": 3125, "ip4": 62500}
    assert make_profile("l2", 64).effective_flows == 3125
    assert make_profile("ip4", 64).effective_flows == 62500
    assert make_profile("ip4", "IMIX").effective_flows == 62500


def test_flow_cap_matches_documentation():
    """profiles.py documents the cap: 1518 B -> 22,104 flows; IMIX -> 62,500 fit."""
    doc = profiles.__doc__
    cap_1518 = MAX_PCAP_BYTES // 1518
    assert cap_1518 == 22104
    assert f"{cap_1518:,}" in doc and "1518 B" in doc
    assert make_profile("ip4", 1518).effective_flows == cap_1518
    assert make_profile("ip4", 1518, flows=100).effective_flows == 100
    assert make_profile("ip4", 9216).effective_flows == MAX_PCAP_BYTES // 9216 == 3640
    assert make_profile("l2", 9216).effective_flows == 3125  # the L2 default fits
    prof = make_profile("ip4", 1518)
    # the pcap holds at most MAX_PCAP_BYTES of frames (with FCS counted)
    assert prof.frames_per_pcap * 1518 <= MAX_PCAP_BYTES
    imix = make_profile("ip4", "IMIX")
    assert imix.frames_per_pcap * 353.84 <= MAX_PCAP_BYTES + 48 * 1518


@pytest.mark.parametrize(
    "kind, flows, what",
    [
        ("l3", None, "unknown traffic profile"),
        ("l2", 0, "flows must be"),
        ("ip4", MAX_FLOWS["ip4"] + 1, "flows must be"),
        ("l2", -5, "flows must be"),
        ("l2", True, "flows must be"),
        ("l2", 2.5, "flows must be"),
    ],
)
def test_make_profile_errors(kind, flows, what):
    with pytest.raises(ConfigError, match=what):
        make_profile(kind, 64, flows)


def test_make_profile_bad_frame_size():
    with pytest.raises(UnitError):
        make_profile("l2", 32)


def test_imix_cycle_mix():
    cycle = imix_cycle()
    assert len(cycle) == 48
    assert collections.Counter(cycle) == {64: 28, 570: 16, 1518: 4}
    assert dict(IMIX_V4_1) == {64: 28, 570: 16, 1518: 4}
    # interleaved, not three blocks: no run of 1518 B frames, each 12-frame quarter has one
    assert all(cycle[i : i + 12].count(1518) == 1 for i in range(0, 48, 12))
    assert max(len(list(g)) for _, g in __import__("itertools").groupby(cycle)) <= 3


def test_mac_and_ip_add():
    assert mac_add("02:00:00:00:00:ff", 1) == "02:00:00:00:01:00"
    assert mac_add("02:01:00:00:00:00", 3124) == "02:01:00:00:0c:34"
    assert ip_add("198.18.0.255", 1) == "198.18.1.0"
    assert ip_add("198.19.0.1", 62499) == "198.19.244.36"


# -- pcaps -----------------------------------------------------------------------------


def test_l2_pcap_pairwise_mac_increments(topo, tmp_path):
    prof, d, pkts = build(topo, tmp_path, "l2", 64)
    n = prof.effective_flows
    assert len(pkts) == n == 3125
    base_s, base_d = mac_int(d.src_mac_base), mac_int(d.dst_mac_base)
    pairs = set()
    for i, f in enumerate(pkts):
        smac, dmac, sip, dip, size = parse_frame(f)
        # pairwise: both fields advance together, packet by packet
        assert mac_int(smac) - base_s == i % n
        assert mac_int(dmac) - base_d == i % n
        assert (sip, dip) == (d.src_ip_base, d.dst_ip_base)
        assert size == 64 and len(f) == 60
        pairs.add((smac, dmac))
    assert len(pairs) == n
    for f in pkts[::97]:
        verify_checksums(f)


def test_ip4_pcap_pairwise_ip_increments_default_flows(topo, tmp_path):
    prof, d, pkts = build(topo, tmp_path, "ip4", 64)
    n = prof.effective_flows
    assert len(pkts) == n == 62500
    tg0, sut0 = topo.pairs()[0]
    bs, bd = ip_int(d.src_ip_base), ip_int(d.dst_ip_base)
    srcs, dsts = set(), set()
    for i, f in enumerate(pkts):
        smac, dmac, sip, dip, size = parse_frame(f)
        assert (smac, dmac) == (tg0.mac, sut0.mac)  # addressed to the DUT port
        assert ip_int(sip) - bs == i and ip_int(dip) - bd == i
        assert ipaddress.ip_address(sip) in ipaddress.ip_network("198.18.0.0/15")
        assert ipaddress.ip_address(dip) in ipaddress.ip_network("198.18.0.0/15")
        srcs.add(sip)
        dsts.add(dip)
        assert size == 64
    assert len(srcs) == len(dsts) == n
    for f in pkts[::499] + [pkts[-1]]:
        verify_checksums(f)


def test_ip4_flows_wrap_to_flow_count(topo, tmp_path):
    prof, d, pkts = build(topo, tmp_path, "ip4", "IMIX", flows=10)
    # 10 flows rounded up to a whole IMIX cycle: 48 frames, flow = i mod 10
    assert prof.frames_per_pcap == 48 and len(pkts) == 48
    for i, f in enumerate(pkts):
        _, _, sip, dip, _ = parse_frame(f)
        assert ip_int(sip) - ip_int(d.src_ip_base) == i % 10
        assert ip_int(dip) - ip_int(d.dst_ip_base) == i % 10


def test_imix_pcap_sizes(topo, tmp_path):
    prof, d, pkts = build(topo, tmp_path, "l2", "IMIX")
    assert len(pkts) % 48 == 0 and len(pkts) >= prof.effective_flows
    sizes = [len(f) + FCS for f in pkts]
    assert set(sizes) == {64, 570, 1518}
    for c in range(0, len(sizes), 48):
        assert collections.Counter(sizes[c : c + 48]) == {64: 28, 570: 16, 1518: 4}, f"cycle at frame {c}"
    for f in pkts[:96]:
        verify_checksums(f)


@pytest.mark.parametrize("size", [64, 128, 1518])
def test_fixed_size_pcaps(topo, tmp_path, size):
    prof, d, pkts = build(topo, tmp_path, "l2", size, flows=50)
    assert {len(f) for f in pkts} == {size - 4}
    assert len({parse_frame(f)[:2] for f in pkts}) == 50


def test_bidirectional_second_direction_is_reverse(topo, tmp_path):
    prof = make_profile("ip4", 64, flows=20, bidirectional=True)
    assert prof.directions == 2
    d0, d1 = directions_for(topo, prof)
    assert (d0.tx_port, d0.rx_port, d1.tx_port, d1.rx_port) == (0, 1, 1, 0)
    f0 = [parse_frame(f) for f in frames(prof, d0)]
    f1 = [parse_frame(f) for f in frames(prof, d1)]
    (tg0, sut0), (tg1, sut1) = topo.pairs()
    assert f1[0][:2] == (tg1.mac, sut1.mac)
    assert [(s, d) for _, _, s, d, _ in f1] == [(d, s) for _, _, s, d, _ in f0]
    assert len(directions_for(topo, make_profile("ip4", 64, flows=20))) == 1


def test_pcap_file_format(tmp_path):
    path = str(tmp_path / "x.pcap")
    pkts = [
        build_frame("02:00:00:00:00:01", "02:00:00:00:00:11", "198.18.0.1", "198.19.0.1", 64, i)
        for i in range(3)
    ]
    assert write_pcap(path, pkts) == 3
    raw = open(path, "rb").read()
    magic, vmaj, vmin, _, _, snap, link = struct.unpack("<IHHiIII", raw[:24])
    assert (magic, vmaj, vmin, link) == (0xA1B2C3D4, 2, 4, 1)
    assert snap >= 9216
    assert len(raw) == 24 + 3 * (16 + 60)
    assert read_pcap(path) == pkts
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"\x0a\x0d\x0d\x0a" + b"\0" * 20)
    with pytest.raises(ValueError, match="not a little-endian classic pcap"):
        read_pcap(str(bad))


@pytest.mark.skipif(shutil.which("tcpdump") is None, reason="tcpdump not installed (independent decoder)")
def test_tcpdump_decodes_frames_with_good_checksums(topo, tmp_path):
    """A second, independent decoder: tcpdump -vv flags bad IP or UDP checksums."""
    prof = make_profile("ip4", "IMIX", flows=48)
    d = directions_for(topo, prof)[0]
    path = str(tmp_path / "imix.pcap")
    write_pcap(path, frames(prof, d))
    out = subprocess.run(
        ["tcpdump", "-nn", "-vv", "-e", "-r", path], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    lines = [ln for ln in out.stdout.splitlines() if "ethertype IPv4" in ln]
    assert len(lines) == 48
    assert "bad" not in out.stdout.lower() and "truncated" not in out.stdout.lower()
    assert "198.18.0.1.1024 > 198.19.0.1.1024: [udp sum ok] UDP" in out.stdout
    assert sum("length 60:" in ln for ln in lines) == 28  # 64 B on the wire: tcpdump shows 60 (no FCS)
