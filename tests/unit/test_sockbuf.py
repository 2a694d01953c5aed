"""dpgate.exec.sockbuf: packet sockets from real ``ss`` output, and a receive buffer set on
another process's socket through pidfd_getfd (here: this process's own sockets, the same
kernel path; the kernel refuses what it refuses, nothing is faked)."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pytest

from dpgate.exec import sockbuf

FIXTURE = Path(__file__).parent.parent / "fixtures" / "ovs" / "ss-packet-sockets-ovs-xconnect.txt"


def test_parse_recorded_ss_output():
    socks = sockbuf.parse_packet_sockets(FIXTURE.read_text())
    assert [s.ifname for s in socks] == ["sut0", "sut1"]
    assert {s.comm for s in socks} == {"ovs-vswitchd"}
    assert len({s.pid for s in socks}) == 1 and socks[0].fd != socks[1].fd
    assert all(s.rcvbuf == 212992 for s in socks)  # net.core.rmem_default, not raised
    assert socks[0].drops > 0 and socks[1].drops == 0  # the recorded trial lost frames on sut0


def test_parse_skips_unbound_and_ownerless_lines():
    text = "Netid State Recv-Q Send-Q Local Address:Port Peer Address:Port Process\n" + (
        "p_raw UNCONN 0 0 [0]:* * skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d0)\n"
    )
    assert sockbuf.parse_packet_sockets(text) == []
    assert sockbuf.parse_packet_sockets("") == []


def _own_socket():
    """An af_packet socket when we may open one (root), else a UDP socket: SO_RCVBUFFORCE
    and pidfd_getfd treat both alike."""
    try:
        return socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except PermissionError:
        return socket.socket(socket.AF_INET, socket.SOCK_DGRAM)


def test_force_rcvbuf_sets_the_shared_socket():
    with _own_socket() as s:
        before = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        try:
            got = sockbuf.force_rcvbuf(os.getpid(), s.fileno(), 1 << 20)
        except PermissionError:
            pytest.skip("SO_RCVBUFFORCE needs CAP_NET_ADMIN (run as root)")
        assert got == 2 << 20 != before  # the kernel doubles the value asked for
        # our socket is the same kernel socket: it sees the new buffer
        assert s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) == got


def test_force_rcvbuf_names_the_process_when_refused():
    fd = 100_000  # not open here (a just-closed one would be reused by the pidfd itself)
    with pytest.raises(OSError) as ei:
        sockbuf.force_rcvbuf(os.getpid(), fd, 1 << 20)
    assert ei.value.errno == errno.EBADF
    assert f"pid {os.getpid()}, fd {fd}" in str(ei.value)


def test_force_rcvbuf_refuses_a_non_socket():
    with open(os.devnull) as fh, pytest.raises(OSError) as ei:
        sockbuf.force_rcvbuf(os.getpid(), fh.fileno(), 1 << 20)
    assert ei.value.errno == errno.ENOTSOCK


def test_enlarge_reports_each_socket_and_keeps_others_alone():
    with _own_socket() as s:
        mine = sockbuf.PacketSocket("sut0", "python", os.getpid(), s.fileno(), 212992, 0)
        gone = sockbuf.PacketSocket("sut1", "python", os.getpid(), 10_000, 212992, 0)
        other = sockbuf.PacketSocket("tg0", "dpgen", 1, 3, 212992, 0)
        lines = sockbuf.enlarge([mine, gone, other], 1 << 20, pid=os.getpid())
    assert len(lines) == 2  # the other process's socket is not touched
    assert lines[1].startswith("sut1: not enlarged: ") and "Bad file descriptor" in lines[1]
    if "not enlarged" not in lines[0]:  # root: set
        assert lines[0] == f"sut0: 212992 -> {2 << 20} bytes"
