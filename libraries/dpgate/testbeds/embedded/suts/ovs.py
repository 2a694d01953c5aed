"""OVS userspace datapath (dpif-netdev) with af_packet ports, in_port -> output flows.

Runs a private ovsdb-server and ovs-vswitchd in the SUT namespace (no systemd, no kernel
module; "ovs_datapath does not exist" in the log is harmless), with its own run, db and
log directories under the testbed's scratch directory, ovs-vswitchd pinned to the SUT core.
Loss shows as af_packet socket drops (``ss -f link -a -m``), not in OVS interface stats.
The ports' receive buffers are raised to :attr:`OvsXconnect.rx_buffer` (:mod:`dpgate.exec.sockbuf`):
at the 208 KiB default a 3 ms stall of the main thread dropped 1518B frames at a third of NDR.
Cycles per packet come from ``ovs-appctl dpif-netdev/pmd-stats-show``.
"""

from __future__ import annotations

import os
import re
from typing import Dict, Optional

from dpgate.exec.runner import require_tool, run, spawn, stop_process
from dpgate.testbeds.embedded.suts.base import EmbeddedSut, register

SCHEMA = "/usr/share/openvswitch/vswitch.ovsschema"
#: What a trial keeps of :func:`parse_pmd_stats` (``details.sut_counters``).
TRIAL_KEYS = ("cycles_per_packet", "output_batch")


def parse_pmd_stats(text: str) -> Dict[str, float]:
    """Sum packets and cycles over the threads of ``dpif-netdev/pmd-stats-show``, and the
    packets per output batch (``output_batch``, the threads' figures weighted by their packets):
    a PMD's cycles per packet fall as its batches grow, so a run's figure is read with it.

    >>> parse_pmd_stats("main thread:\\n  packets received: 10\\n  avg processing cycles per packet: 500.0 (5000/10)\\n")
    {'packets': 10.0, 'processing_cycles': 5000.0, 'cycles_per_packet': 500.0}
    >>> parse_pmd_stats("pmd:\\n  packets received: 30\\n  avg. packets per output batch: 4.00\\n"
    ...                 "main thread:\\n  packets received: 10\\n  avg. packets per output batch: 8.00\\n")["output_batch"]
    5.0
    """
    packets = 0.0
    cycles = 0.0
    cycled_packets = 0.0  # packets of the threads that report cycles (PMD threads only)
    batched = 0.0  # sum over threads of packets x their packets per output batch
    for block in re.split(r"\n(?=\S)", text):
        m = re.search(r"packets received:\s*(\d+)", block)
        if not m:
            continue
        n = float(m.group(1))
        packets += n
        b = re.search(r"avg\. packets per output batch:\s*([0-9.]+)", block)
        if b:
            batched += n * float(b.group(1))
    for m in re.finditer(r"avg processing cycles per packet:\s*[0-9.]+\s*\((\d+)/(\d+)\)", text):
        cycles += float(m.group(1))
        cycled_packets += float(m.group(2))
    out = {"packets": packets, "processing_cycles": cycles}
    if cycled_packets:
        out["cycles_per_packet"] = cycles / cycled_packets
    if batched and packets:
        out["output_batch"] = round(batched / packets, 2)
    return out


def unixctl_call(path: str, method: str, *params: str, timeout: float = 5.0) -> str:
    """Send one unixctl request (JSON-RPC 1.0 over a unix socket, what ovs-appctl does) and
    return its text result; raises ``OSError`` when the socket fails, ``ValueError`` on an
    error reply."""
    import json
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall(json.dumps({"method": method, "params": list(params), "id": 0}).encode())
        buf, dec = b"", json.JSONDecoder()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError(f"{path}: connection closed before a reply to {method}")
            buf += chunk
            try:
                reply, _ = dec.raw_decode(buf.decode())
                break
            except ValueError:
                continue
    if reply.get("error"):
        raise ValueError(f"{method}: {reply['error']}")
    return str(reply.get("result") or "")


def unixctl_text(path: str, method: str, *params: str) -> str:
    """:func:`unixctl_call` for per-trial counters: one ovs-appctl command without starting
    ovs-appctl (a process start per trial); "" when the daemon does not answer (no counters
    for that trial, the trial stands)."""
    try:
        return unixctl_call(path, method, *params)
    except (OSError, ValueError):
        return ""


@register
class OvsXconnect(EmbeddedSut):
    name = "ovs-xconnect"
    traffic = "l2"
    description = "Open vSwitch userspace datapath, af_packet ports, in_port->output flows"
    has_process = True
    #: with af_packet ports the userspace datapath's main thread busy-polls them: measured
    #: CPU time per packet was exactly Hz / load (128k cycles at 20 kpps), not a cost
    polls = True
    #: its paired check's saturation pairs per pair asked for (``dpgate.telemetry.saturation``):
    #: its pairs' log ratios scatter about 1.8 x l3fwd's (sd from the gate's 99 % intervals on
    #: the Xeon host, gk27-gk42: median 0.145 over 32 runs, l3fwd 0.080 over 24), and at twice
    #: the pairs a true +10 % read +8.3 % undecided (-0.5..+17.8 %); at four times 2 of 2 FAILED
    saturation_pairs = 4
    bridge = "dpgbr0"
    #: SO_RCVBUFFORCE for the af_packet ports' sockets (the kernel doubles it: 4 MiB, ~60 ms
    #: of 1518B frames at 25 kpps); 0 leaves ``net.core.rmem_default``. Measured (1518B, 25 kpps,
    #: 1 s trials): 208 KiB lost 7-46 frames in 3 of 12-15 trials, 4 MiB none of 15
    rx_buffer = 2 * 1024 * 1024

    def __init__(self, testbed, flows=None):
        super().__init__(testbed, flows)
        self.dir = os.path.join(testbed.workdir, "ovs")
        self.db_sock = os.path.join(self.dir, "db.sock")
        self.proc = None
        self.db_proc = None
        #: what :meth:`_enlarge_rx_buffers` did, one line per port (kept in the SUT log)
        self.rx_buffers: list = []

    def env(self) -> Dict[str, str]:
        e = dict(os.environ)
        for var in ("OVS_RUNDIR", "OVS_DBDIR", "OVS_LOGDIR", "OVS_SYSCONFDIR", "OVS_PKGDATADIR"):
            e[var] = self.dir if var != "OVS_PKGDATADIR" else "/usr/share/openvswitch"
        return e

    def vsctl(self, *args: str, check: bool = True):
        return run(
            ["ovs-vsctl", f"--db=unix:{self.db_sock}", "--timeout=10", *args],
            ns=self.ns,
            env=self.env(),
            check=check,
        )

    def appctl(self, *args: str, check: bool = True):
        target = os.path.join(self.dir, "ovs-vswitchd.ctl")
        return run(["ovs-appctl", "-t", target, *args], ns=self.ns, env=self.env(), check=check)

    def _daemon(self, prog: str, *args: str, log: str):
        """``prog`` in the SUT namespace on the SUT CPUs, its control socket ``<dir>/<prog>.ctl``,
        its log file ``log``, stdout/stderr in ``<dir>/<prog>.out``."""
        return spawn(
            [prog, *args, f"--unixctl={os.path.join(self.dir, prog + '.ctl')}", f"--log-file={log}"],
            ns=self.ns,
            cpus=self.cpus,
            env=self.env(),
            log=os.path.join(self.dir, f"{prog}.out"),
        )

    def _start(self) -> None:
        for tool in ("ovsdb-tool", "ovsdb-server", "ovs-vswitchd", "ovs-vsctl", "ovs-ofctl", "ovs-appctl"):
            require_tool(tool)
        os.makedirs(self.dir, exist_ok=True)
        db = os.path.join(self.dir, "conf.db")
        if os.path.exists(db):
            os.unlink(db)
        run(["ovsdb-tool", "create", db, SCHEMA], env=self.env())
        self.db_proc = self._daemon(
            "ovsdb-server",
            db,
            f"--remote=punix:{self.db_sock}",
            log=os.path.join(self.dir, "ovsdb-server.log"),
        )
        self._wait_file(self.db_sock)
        self.vsctl("--no-wait", "init")
        self.proc = self._daemon("ovs-vswitchd", f"unix:{self.db_sock}", log=self.log_path)
        self._wait_file(os.path.join(self.dir, "ovs-vswitchd.ctl"))
        a, b = self.ports()
        self.vsctl("add-br", self.bridge, "--", "set", "bridge", self.bridge, "datapath_type=netdev")
        self._configure_datapath()
        for ofport, p in ((1, a), (2, b)):
            self.vsctl(
                "add-port",
                self.bridge,
                p.name,
                "--",
                "set",
                "Interface",
                p.name,
                f"ofport_request={ofport}",
                *self.port_options(),
            )
        run(
            ["ovs-ofctl", "del-flows", f"unix:{os.path.join(self.dir, self.bridge + '.mgmt')}"],
            ns=self.ns,
            env=self.env(),
        )
        for flow in ("in_port=1,actions=output:2", "in_port=2,actions=output:1"):
            run(
                ["ovs-ofctl", "add-flow", f"unix:{os.path.join(self.dir, self.bridge + '.mgmt')}", flow],
                ns=self.ns,
                env=self.env(),
            )
        if self.rx_buffer:
            self._enlarge_rx_buffers()

    def _enlarge_rx_buffers(self, timeout: float = 5.0) -> None:
        """Give ovs-vswitchd's af_packet port sockets :attr:`rx_buffer`; waits for both sockets
        (OVS opens them when it adds the port). A kernel that refuses leaves the default and
        says so in the SUT log: loss then comes sooner, the run stands."""
        import time

        from dpgate.exec import sockbuf

        assert self.proc is not None
        names = {p.name for p in self.ports()}
        end = time.monotonic() + timeout
        while True:
            out = run(["ss", "-f", "link", "-a", "-m", "-p", "-n"], ns=self.ns, check=False).stdout
            socks = [
                s for s in sockbuf.parse_packet_sockets(out) if s.ifname in names and s.pid == self.proc.pid
            ]
            if {s.ifname for s in socks} >= names or time.monotonic() > end:
                break
            time.sleep(0.1)
        self.rx_buffers = sockbuf.enlarge(socks, self.rx_buffer) or [
            "no af_packet sockets of ovs-vswitchd found"
        ]
        with open(self.log_path, "a", encoding="utf-8") as log:
            log.write("".join(f"dpgate: receive buffer {line}\n" for line in self.rx_buffers))

    def _configure_datapath(self) -> None:
        """Hook: datapath settings before ports are added."""

    def port_options(self):
        """Hook: extra Interface settings (af_packet ports need none)."""
        return []

    def _wait_file(self, path: str, timeout: float = 10.0) -> None:
        import time

        end = time.monotonic() + timeout
        while not os.path.exists(path):
            if time.monotonic() > end:
                from dpgate.model.errors import SutError

                raise SutError(f"OVS did not create {path} within {timeout:g} s\n{self.last_log()}")
            time.sleep(0.05)

    def ready(self) -> Optional[str]:
        if not self.alive():
            return "ovs-vswitchd is not running"
        flows = run(
            ["ovs-ofctl", "dump-flows", f"unix:{os.path.join(self.dir, self.bridge + '.mgmt')}"],
            ns=self.ns,
            env=self.env(),
            check=False,
        ).stdout
        if flows.count("actions=output") < 2:
            return "cross-connect flows not installed"
        ports = self.vsctl("list-ports", self.bridge, check=False).stdout.split()
        missing = {p.name for p in self.ports()} - set(ports)
        if missing:
            return f"ports {sorted(missing)} not on {self.bridge}"
        for p in self.ports():
            err = self.vsctl("get", "Interface", p.name, "error", check=False).stdout.strip()
            if err and err not in ("[]", '""'):
                return f"interface {p.name}: {err}"
        return None

    def trial_begin(self) -> None:
        self._unixctl("dpif-netdev/pmd-stats-clear")

    def trial_end(self, rx_packets: int) -> Dict[str, float]:
        stats = parse_pmd_stats(self._unixctl("dpif-netdev/pmd-stats-show"))
        return {k: v for k, v in stats.items() if k in TRIAL_KEYS}

    def _unixctl(self, method: str, *params: str) -> str:
        """One ovs-appctl command over the daemon's control socket (see :func:`unixctl_text`)."""
        return unixctl_text(os.path.join(self.dir, "ovs-vswitchd.ctl"), method, *params)

    def version(self) -> str:
        res = run(["ovs-vswitchd", "--version"], check=False)
        return res.stdout.splitlines()[0] if res.stdout else "ovs-vswitchd"

    def _stop(self) -> None:
        for p in (self.proc, self.db_proc):
            if p is not None:
                stop_process(p)
        self.proc = self.db_proc = None


@register
class OvsAfxdpXconnect(OvsXconnect):
    """OVS userspace datapath with AF_XDP ports polled by a PMD thread on the SUT core.

    Unlike af_packet ports (served by OVS's main thread, which keeps no cycle counters),
    a PMD thread reports ``avg processing cycles per packet`` in pmd-stats-show: a CPP
    measured by the SUT itself on a host without a PMU.
    """

    name = "ovs-afxdp-xconnect"
    #: the last late frame of 98 recorded trials with any (of 2,832) came 5.7 ms after the stop;
    #: OVS on af_packet ports keeps 20 ms (its late frames up to 48 ms, p50 20)
    settle_s = 0.010
    polls = True
    #: its paired check's pairs per pair asked for (``dpgate.telemetry.saturation.paired_pairs``):
    #: its pairs' log ratios scatter 0.08-0.17 (sd, from the gate's 99 % intervals on the Xeon
    #: host, gk47-gk57): at 10 pairs the interval's half width was 9-18 %, and 2 of 11
    #: "+10 %" runs of gk35-gk54 passed at once (+4.3, +4.2 %)
    paired_pairs = 3
    rx_buffer = 0  # AF_XDP rings, no af_packet socket
    description = (
        "Open vSwitch userspace datapath, AF_XDP ports (best-effort XDP mode), PMD thread on the SUT core"
    )

    def _configure_datapath(self) -> None:
        mask = sum(1 << c for c in self.cpus)
        self.vsctl("set", "Open_vSwitch", ".", f"other_config:pmd-cpu-mask={mask:#x}")

    def port_options(self):
        return ["type=afxdp", "options:xdp-mode=best-effort"]
