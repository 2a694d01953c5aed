"""Kernel SUTs: L2 cross-connect (tc mirred), bridge (MAC learning), IPv4 routing.

The kernel forwards in the SUT ports' threaded-NAPI kernel threads, which the testbed
pins to the SUT core. There is no process to die; readiness checks the configuration.
"""

from __future__ import annotations

import json
from typing import Optional

from dpgate.exec.runner import run
from dpgate.exec.tc import mirred_redirect
from dpgate.model.errors import ConfigError
from dpgate.testbeds.embedded.suts.base import EmbeddedSut, register
from dpgate.traffic.profiles import DEFAULT_FLOWS, ip_add
from dpgate.traffic.profiles import IP_DIR0_DST as DIR0_DST_IP
from dpgate.traffic.profiles import IP_DIR0_SRC as DIR0_SRC_IP


@register
class LinuxXconnect(EmbeddedSut):
    name = "linux-xconnect"
    #: the kernel forwards in the softirq that receives: 19 of ~3,400 recorded trials of the
    #: three kernel SUTs saw a frame after the stop, the last 6.2 ms after it
    settle_s = 0.010
    traffic = "l2"
    description = "Linux L2 cross-connect: tc ingress u32 match-all + mirred redirect, both directions"
    #: tc priority of the mirred filter; prio 1 is left for injected cost (suts/cost.py)
    mirred_prio = 10

    def _start(self) -> None:
        a, b = self.ports()
        for src, dst in ((a, b), (b, a)):
            run(["tc", "qdisc", "add", "dev", src.name, "ingress"], ns=self.ns)
            run(mirred_redirect(src.name, dst.name, prio=self.mirred_prio), ns=self.ns)

    def ready(self) -> Optional[str]:
        for p in self.ports():
            out = run(["tc", "filter", "show", "dev", p.name, "ingress"], ns=self.ns, check=False).stdout
            if "mirred" not in out:
                return f"no mirred filter on {p.name}"
        return None

    def _stop(self) -> None:
        for p in self.ports():
            run(["tc", "qdisc", "del", "dev", p.name, "ingress"], ns=self.ns, check=False)


@register
class LinuxBridge(EmbeddedSut):
    name = "linux-bridge"
    settle_s = LinuxXconnect.settle_s
    traffic = "l2"
    description = "Linux bridge with MAC learning (br_netfilter off)"
    bridge = "dpgbr0"

    def _start(self) -> None:
        run(["ip", "link", "add", self.bridge, "type", "bridge"], ns=self.ns)
        run(["ip", "link", "set", self.bridge, "type", "bridge", "stp_state", "0"], ns=self.ns, check=False)
        # With snooping on, the bridge joins 224.0.0.106 (all-snoopers) and sends IGMP
        # reports out of both ports in its first seconds: stray frames the TG counted as
        # received (masking loss). The test traffic is unicast: snooping off.
        run(
            ["ip", "link", "set", self.bridge, "type", "bridge", "mcast_snooping", "0"],
            ns=self.ns,
            check=False,
        )
        for p in self.ports():
            run(["ip", "link", "set", p.name, "master", self.bridge], ns=self.ns)
        run(["ip", "link", "set", self.bridge, "up"], ns=self.ns)

    def ready(self) -> Optional[str]:
        out = run(["ip", "-j", "link", "show", "master", self.bridge], ns=self.ns, check=False).stdout
        try:
            members = {x["ifname"] for x in json.loads(out or "[]")}
        except ValueError:
            members = set()
        missing = {p.name for p in self.ports()} - members
        if missing:
            return f"ports {sorted(missing)} not in bridge {self.bridge}"
        state = self.tb.link_state(self.ns, self.bridge)
        return None if state in ("UP", "UNKNOWN") else f"bridge {self.bridge} is {state}"

    def _stop(self) -> None:
        run(["ip", "link", "del", self.bridge], ns=self.ns, check=False)


@register
class LinuxIp4(EmbeddedSut):
    """IPv4 routing with one /32 route per flow destination, in both directions.

    Flows of direction 0 go to 198.19.0.1 + i (routed out of port1 to the TG), direction 1
    to 198.18.0.1 + i (out of port0); neighbours are permanent, so no ARP is involved.
    """

    name = "linux-ip4"
    settle_s = LinuxXconnect.settle_s
    traffic = "ip4"
    description = "Linux IPv4 forwarding with N /32 routes (default 62,500 per direction)"

    def _start(self) -> None:
        (tg0, sut0), (tg1, sut1) = self.tb.topology.pairs()
        ns = self.ns
        for port in (tg0, sut0, tg1, sut1):
            if not port.ip4:
                raise ConfigError(
                    f"{self.name} routes IPv4: interface {port.name} needs ip4 in the topology",
                    path="nodes.interfaces.ip4",
                )
        assert tg0.ip4 and sut0.ip4 and tg1.ip4 and sut1.ip4  # checked above; tells mypy
        run(["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"], ns=ns)
        for key in ("all", "default", sut0.name, sut1.name):
            run(["sysctl", "-q", "-w", f"net.ipv4.conf.{key}.rp_filter=0"], ns=ns, check=False)
            run(["sysctl", "-q", "-w", f"net.ipv4.conf.{key}.send_redirects=0"], ns=ns, check=False)
        for tgp, sutp in ((tg0, sut0), (tg1, sut1)):
            assert tgp.ip4 and sutp.ip4
            run(["ip", "addr", "add", sutp.ip4, "dev", sutp.name], ns=ns)
            run(
                [
                    "ip",
                    "neigh",
                    "replace",
                    tgp.ip4.split("/")[0],
                    "lladdr",
                    tgp.mac,
                    "dev",
                    sutp.name,
                    "nud",
                    "permanent",
                ],
                ns=ns,
            )
        n = self.flows or DEFAULT_FLOWS["ip4"]
        gw0, gw1 = tg0.ip4.split("/")[0], tg1.ip4.split("/")[0]
        lines = []
        for i in range(n):
            lines.append(f"route replace {ip_add(DIR0_DST_IP, i)}/32 via {gw1} dev {sut1.name}")
            lines.append(f"route replace {ip_add(DIR0_SRC_IP, i)}/32 via {gw0} dev {sut0.name}")
        run(["ip", "-batch", "-"], ns=ns, input="\n".join(lines) + "\n", timeout=120)
        self.routes = 2 * n

    def ready(self) -> Optional[str]:
        out = run(["sysctl", "-n", "net.ipv4.ip_forward"], ns=self.ns, check=False).stdout.strip()
        if out != "1":
            return "ip_forward is off"
        probe = run(["ip", "route", "get", DIR0_DST_IP], ns=self.ns, check=False).stdout
        if "via" not in probe:
            return f"no route to {DIR0_DST_IP}"
        return None
