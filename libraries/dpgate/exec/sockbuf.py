"""A running process's af_packet sockets: find them (``ss -p``) and give them a receive buffer.

A packet socket's receive buffer is ``net.core.rmem_default`` (208 KiB on Debian) unless its
program sets one. A userspace switch that reads its ports through such sockets (OVS's
netdev-linux ports) then holds only ~75 frames of 1518 bytes: 3 ms of traffic at 25 kpps. A
3 ms stall of its thread on a shared host drops frames, so its zero-loss throughput becomes a
coin toss. Changing ``rmem_default`` would change every socket of the host; instead we take a
duplicate of the SUT's own socket (``pidfd_getfd(2)``, Linux >= 5.6, root) and set
``SO_RCVBUFFORCE`` on it: the socket is shared, the SUT sees the larger buffer, nothing else
changes, and it ends with the SUT.
"""

from __future__ import annotations

import ctypes
import os
import re
import socket
from dataclasses import dataclass
from typing import List, Optional

#: <asm-generic/socket.h>; not exported by Python's socket module
SO_RCVBUFFORCE = 33
#: the same number on x86_64 and in the generic table (arm64, riscv)
NR_PIDFD_GETFD = 438

_LINE = re.compile(
    r"^p_raw\s.*?\s(?:\*|\[?\d+\]?):(?P<ifname>\S+)\s.*?"
    r'users:\(\("(?P<comm>[^"]+)",pid=(?P<pid>\d+),fd=(?P<fd>\d+)\)\).*?'
    r"skmem:\((?P<skmem>[^)]*)\)",
    re.M,
)


@dataclass(frozen=True)
class PacketSocket:
    ifname: str
    comm: str
    pid: int
    fd: int
    #: the kernel's receive buffer (bytes, ``rb`` of skmem) and drops so far (``d``)
    rcvbuf: int
    drops: int


def parse_packet_sockets(text: str) -> List[PacketSocket]:
    """Packet sockets bound to one interface, with their owner, from ``ss -f link -a -m -p -n``.

    >>> ss = ('p_raw UNCONN 0 0 *:sut0 * users:(("ovs-vswitchd",pid=24542,fd=38)) '
    ...       'skmem:(r0,rb212992,t0,tb212992,f0,w0,o176,bl0,d7)\\n'
    ...       'p_raw UNCONN 0 0 [0]:* * skmem:(r0,rb212992,t0,tb212992,f0,w0,o0,bl0,d0)\\n')
    >>> parse_packet_sockets(ss)
    [PacketSocket(ifname='sut0', comm='ovs-vswitchd', pid=24542, fd=38, rcvbuf=212992, drops=7)]
    """
    out = []
    for m in _LINE.finditer(text):
        if m.group("ifname") == "*":
            continue
        mem = dict(re.findall(r"([a-z]+)(\d+)", m.group("skmem")))
        out.append(
            PacketSocket(
                m.group("ifname"),
                m.group("comm"),
                int(m.group("pid")),
                int(m.group("fd")),
                int(mem.get("rb", 0)),
                int(mem.get("d", 0)),
            )
        )
    return out


def force_rcvbuf(pid: int, fd: int, size: int) -> int:
    """Set the receive buffer of socket ``fd`` of process ``pid`` (``SO_RCVBUFFORCE``, so above
    ``net.core.rmem_max`` too; the kernel doubles it for its bookkeeping) and return the buffer
    the socket now has. Raises ``OSError`` naming the process when the kernel refuses (no
    pidfd_getfd before Linux 5.6, EPERM without CAP_SYS_PTRACE and CAP_NET_ADMIN)."""
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    try:
        dup = libc.syscall(NR_PIDFD_GETFD, pidfd, fd, 0)
        if dup < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"pidfd_getfd(pid {pid}, fd {fd}): {os.strerror(err)}")
    finally:
        os.close(pidfd)
    sock = socket.socket(fileno=dup)  # closes only our duplicate
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, size)
        return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))
    finally:
        sock.close()


def enlarge(sockets: List[PacketSocket], size: int, pid: Optional[int] = None) -> List[str]:
    """:func:`force_rcvbuf` on each socket (those of ``pid`` only, when given); returns one
    line per socket, ``sut0: 212992 -> 4194304 bytes`` or ``sut0: not enlarged: <why>``."""
    lines = []
    for s in sockets:
        if pid is not None and s.pid != pid:
            continue
        try:
            lines.append(f"{s.ifname}: {s.rcvbuf} -> {force_rcvbuf(s.pid, s.fd, size)} bytes")
        except OSError as err:
            lines.append(f"{s.ifname}: not enlarged: {err}")
    return lines
