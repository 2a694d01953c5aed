"""A TRex self-test bench on one machine: TRex in a TG namespace, its two ports looped back.

* ``veth``: two veth pairs into a loop namespace where tc (ingress ``u32 match u32 0 0``,
  ``mirred egress redirect``) sends every frame of one pair out of the other; TRex uses
  af_packet ports. RPS moves the loop's kernel work onto ``loop_cpu``.
* ``memif``: TRex owns a memif socket (role server, ids 0 and 1) and DPDK testpmd in io
  forwarding (``--no-huge``, pinned to ``loop_cpu``) connects as the client and loops.

The client reaches TRex from the root namespace over a management veth
(``<prefix>mtg`` 198.19.255.9/30 <-> ``mgmt`` 198.19.255.10/30 in the TG namespace), as in
the one-machine lab. Everything is named with ``prefix`` and removed by ``down()``.
Used by the TRex integration/fault tests and ``benchmarks/lab_local.py``.

Example (root, TRex installed)::

    with TrexLoop("tx-", "veth") as loop:
        gen = loop.generator(make_profile("ip4", 64))
        print(gen.measure(100_000, 2.0).loss_ratio)
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any, List, Optional

from dpgate.config.topology import topology_from_data
from dpgate.exec.tc import mirred_redirect
from dpgate.model.errors import EnvironmentProblem
from dpgate.traffic.trex.server import TrexPort, TrexServer

TG_MACS = ("02:00:c6:12:00:01", "02:00:c6:12:00:02")
LOOP_MACS = ("02:00:c6:12:01:01", "02:00:c6:12:01:02")


def _run(argv: List[str], check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(argv, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise EnvironmentProblem(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.strip()}")
    return res


class TrexLoop:
    def __init__(
        self,
        prefix: str = "tx-",
        mode: str = "veth",
        tg_cpu: int = 0,
        loop_cpu: int = 1,
        run_dir: Optional[str] = None,
        mgmt_net: str = "198.19.255.8",
        trex: Optional[str] = None,
    ):
        if mode not in ("veth", "memif"):
            raise ValueError(f"mode must be veth or memif, got {mode!r}")
        self.prefix, self.mode, self.tg_cpu, self.loop_cpu = prefix, mode, tg_cpu, loop_cpu
        self.run_dir = Path(run_dir or f"/tmp/dpgate-{prefix.rstrip('-')}")
        base = mgmt_net.rsplit(".", 1)
        self.root_ip = f"{base[0]}.{int(base[1]) + 1}"
        self.tg_ip = f"{base[0]}.{int(base[1]) + 2}"
        self.tg_ns, self.loop_ns = f"{prefix}tg", f"{prefix}loop"
        self.sock = str(self.run_dir / "memif" / "memif.sock")
        self.server = TrexServer(
            self.ports(), self.tg_ns, tg_cpu, str(self.run_dir), trex=trex, server=self.tg_ip
        )
        self.peer: Optional[subprocess.Popen] = None
        self.topology = self._topology()

    def ports(self) -> List[TrexPort]:
        if self.mode == "veth":
            return [
                TrexPort("af_packet", TG_MACS[i], LOOP_MACS[i], iface=f"{self.prefix}t{i}") for i in (0, 1)
            ]
        return [
            TrexPort("memif", TG_MACS[i], LOOP_MACS[i], memif_socket=self.sock, memif_id=i) for i in (0, 1)
        ]

    def _topology(self) -> Any:
        """A lab topology for the driver: the 'DUT' is the loop (never reached over SSH)."""
        tg = {
            f"port{i}": {"name": f"{self.prefix}t{i}", "mac": TG_MACS[i], "link": f"link{i + 1}"}
            for i in (0, 1)
        }
        loop = {
            f"port{i}": {"name": f"{self.prefix}l{i}", "mac": LOOP_MACS[i], "link": f"link{i + 1}"}
            for i in (0, 1)
        }
        return topology_from_data(
            {
                "name": f"trex-loop-{self.mode}",
                "kind": "lab-2node",
                "prefix": self.prefix,
                "nodes": {
                    "TG": {
                        "type": "TG",
                        "generator": "trex",
                        "namespace": self.tg_ns,
                        "cpus": [self.tg_cpu],
                        "trex": {"server": self.tg_ip},
                        "interfaces": tg,
                    },
                    "LOOP": {
                        "type": "DUT",
                        "namespace": self.loop_ns,
                        "cpus": [self.loop_cpu],
                        "ssh": {"host": "127.0.0.1"},
                        "interfaces": loop,
                    },
                },
            },
            source="<trex loop>",
        )

    # -- bring-up -----------------------------------------------------------------------
    def up(self) -> TrexLoop:
        try:
            self._namespaces()
            self.server.start()
            if self.mode == "memif":
                self._start_testpmd()
        except BaseException:
            self.down()
            raise
        return self

    def _namespaces(self) -> None:
        p, tg, lp = self.prefix, self.tg_ns, self.loop_ns
        for ns in (tg, lp):
            _run(["ip", "netns", "del", ns], check=False)  # a dead run of ours
            _run(["ip", "netns", "add", ns])
            _run(
                [
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ]
            )
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _run(["ip", "link", "del", f"{p}mtg"], check=False)
        _run(["ip", "link", "add", f"{p}mtg", "type", "veth", "peer", "name", "mgmt", "netns", tg])
        _run(["ip", "addr", "add", f"{self.root_ip}/30", "dev", f"{p}mtg"])
        _run(["ip", "link", "set", f"{p}mtg", "up"])
        _run(["ip", "-n", tg, "addr", "add", f"{self.tg_ip}/30", "dev", "mgmt"])
        _run(["ip", "-n", tg, "link", "set", "mgmt", "up"])
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.mode != "veth":
            return
        for i in (0, 1):
            _run(
                [
                    "ip",
                    "link",
                    "add",
                    f"{p}t{i}",
                    "address",
                    TG_MACS[i],
                    "netns",
                    tg,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    f"{p}l{i}",
                    "address",
                    LOOP_MACS[i],
                    "netns",
                    lp,
                ]
            )
            _run(["ip", "-n", tg, "link", "set", f"{p}t{i}", "up", "promisc", "on"])
            _run(["ip", "-n", lp, "link", "set", f"{p}l{i}", "up", "promisc", "on"])
        for a, b in ((0, 1), (1, 0)):
            _run(
                [
                    "ip",
                    "netns",
                    "exec",
                    lp,
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    f"{p}l{a}",
                    "handle",
                    "ffff:",
                    "ingress",
                ]
            )
            _run(["ip", "netns", "exec", lp, *mirred_redirect(f"{p}l{a}", f"{p}l{b}")])
            mask = format(1 << self.loop_cpu, "x")
            _run(
                [
                    "ip",
                    "netns",
                    "exec",
                    lp,
                    "sh",
                    "-c",
                    f"echo {mask} > /sys/class/net/{p}l{a}/queues/rx-0/rps_cpus",
                ]
            )

    def _start_testpmd(self) -> None:
        pmd = shutil.which("dpdk-testpmd")
        if not pmd:
            raise EnvironmentProblem("dpdk-testpmd not found: apt-get install dpdk (the memif loop peer)")
        c = self.loop_cpu
        vdevs = [
            f"--vdev=net_memif{i},role=client,id={i},socket-abstract=no,socket={self.sock}" for i in (0, 1)
        ]
        argv = [
            "ip",
            "netns",
            "exec",
            self.loop_ns,
            pmd,
            "--lcores",
            f"0@{c},1@{c}",
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
            "--file-prefix",
            f"{self.prefix}pmd",
            *vdevs,
            "--",
            "--forward-mode=io",
            "--auto-start",
            "--stats-period",
            "60",
            "--nb-cores=1",
            "--total-num-mbufs=16384",
        ]
        log = open(self.run_dir / "testpmd.log", "wb")
        try:
            self.peer = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
            )
        finally:
            log.close()

    def generator(self, profile: Any, **kw: Any) -> Any:
        from dpgate.traffic.trex.driver import TrexGenerator

        return TrexGenerator(self.topology, profile, trex_server=self.server, **kw)

    # -- teardown -----------------------------------------------------------------------
    def down(self) -> None:
        errors = []
        if self.peer is not None:
            if self.peer.poll() is None:
                self.peer.send_signal(signal.SIGINT)
                try:
                    self.peer.wait(10)
                except subprocess.TimeoutExpired:
                    self.peer.kill()
                    self.peer.wait(5)
            self.peer = None
        try:
            self.server.stop()
        except Exception as err:  # keep tearing down
            errors.append(str(err))
        for ns in (self.tg_ns, self.loop_ns):
            _run(["ip", "netns", "del", ns], check=False)
        _run(["ip", "link", "del", f"{self.prefix}mtg"], check=False)
        shutil.rmtree(f"/var/run/dpdk/{self.prefix}pmd", ignore_errors=True)
        if errors:
            raise EnvironmentProblem("; ".join(errors))

    def __enter__(self) -> TrexLoop:
        return self.up()

    def __exit__(self, *exc: Any) -> None:
        self.down()
