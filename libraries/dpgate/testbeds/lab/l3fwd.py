"""DPDK l3fwd with LPM lookups (seed 000 Table 1 NF 3: baseline IPv4 forwarding).

Routes go in a rule file (``--rule_ipv4``, DPDK >= 22.11, lines ``R<prefix>/<depth> <port>``).
DPDK 22.11 reads the rule files only when BOTH ``--rule_ipv4`` and ``--rule_ipv6`` are given
(examples/l3fwd/lpm_route_parse.c), else it silently uses its built-in table (audit item 11),
so a non-empty IPv6 file (RFC 5180 benchmarking prefixes) always goes with the IPv4 one.
Route ports and ``--eth-dest`` are DPDK port ids, which follow probe order, not topology
order (audit item 14: ``dpgate.testbeds.lab.ports.dpdk_port_ids``, checked against the printed MACs).
Next-hop MACs (the TG ports) via ``--eth-dest``. Queues/lcores via ``--config``.

Example::

    l3 = L3fwd(node, topo.dut, cores, routes=[("20.0.0.0/8", 1), ("10.0.0.0/8", 0)],
               eth_dest={0: "3c:fd:fe:00:00:01", 1: "3c:fd:fe:00:00:02"})
    "--lookup=lpm" in l3.argv()     # True
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Sequence, Tuple

from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab import ports as ports_mod
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.service import start_unit, stop_unit, unit_active, unit_log, wait_until, write_file
from dpgate.testbeds.lab.testpmd import dut_ports, eal_args, parse_dpdk_version


def rule_file(routes: Sequence[Tuple[str, int]]) -> str:
    """LPM rules, one per line.

    >>> rule_file([("20.0.0.0/8", 1)])
    'R20.0.0.0/8 1\\n'
    """
    lines = []
    for prefix, port in routes:
        net = ipaddress.IPv4Network(prefix, strict=True)
        lines.append(f"R{net.network_address}/{net.prefixlen} {int(port)}")
    return "\n".join(lines) + "\n"


def rule_file_v6(ports: int = 2) -> str:
    """IPv6 rules l3fwd needs so that it reads the IPv4 file at all: one /64 of the RFC 5180 benchmarking prefix 2001:2::/48 per port.

    >>> rule_file_v6(2)
    'R2001:2:0:0::/64 0\\nR2001:2:0:1::/64 1\\n'
    """
    return "".join(f"R2001:2:0:{p:x}::/64 {p}\n" for p in range(ports))


def config_tuples(cores: CoreAllocation, ports: int = 2) -> str:
    """``(port,queue,lcore)`` list: workers spread round-robin over ports, one queue each.

    >>> from dpgate.testbeds.lab.cores import CoreAllocation
    >>> config_tuples(CoreAllocation(1, (2, 3), 2, 1, 0))
    '(0,0,2),(1,0,3)'
    """
    if not cores.workers:
        raise ConfigError("l3fwd needs at least one worker core")
    _, workers = ports_mod.lcore_layout(cores, main_works=True)
    queues: Dict[int, int] = {}
    out = []
    slots = max(len(workers), ports)
    for i in range(slots):
        port = i % ports
        lcore = workers[i % len(workers)]
        q = queues.get(port, 0)
        queues[port] = q + 1
        out.append(f"({port},{q},{lcore})")
    return ",".join(out)


class L3fwd(LabSut):
    unit = "dpgate-l3fwd"
    binary = "dpdk-l3fwd"

    def __init__(
        self,
        node: Any,
        dut: Any,
        cores: CoreAllocation,
        routes: Sequence[Tuple[str, int]],
        eth_dest: Dict[int, str],
        rule_path: str = "/tmp/dpgate-l3fwd.rules",
        binary: str = "",
    ):
        """``routes`` and ``eth_dest`` name TOPOLOGY port indexes; they are mapped to DPDK port ids."""
        self.node, self.dut, self.cores = node, dut, cores
        self.routes, self.eth_dest, self.rule_path = list(routes), dict(eth_dest), rule_path
        self.binary = binary or self.binary

    def _ids(self) -> Dict[int, int]:
        return ports_mod.dpdk_port_ids(dut_ports(self.dut))

    def argv(self) -> List[str]:
        ports = dut_ports(self.dut)
        ids = self._ids()
        args = (
            [self.binary]
            + eal_args(self.cores, ports, file_prefix=self.unit, main_works=True)
            + [
                "--",
                "-p",
                hex((1 << len(ports)) - 1),
                "-P",
                "--lookup=lpm",
                "--parse-ptype",
                f"--config={config_tuples(self.cores, len(ports))}",
                f"--rule_ipv4={self.rule_path}",
                f"--rule_ipv6={self.rule_path}6",
            ]
        )
        for port, mac in sorted(self.eth_dest.items()):
            args.append(f"--eth-dest={ids[int(port)]},{mac}")
        return args

    def configure(self) -> None:
        ids = self._ids()
        self.node.run(["mkdir", "-p", self.rule_path.rsplit("/", 1)[0] or "/"], timeout=30)
        write_file(self.node, self.rule_path, rule_file([(p, ids[int(i)]) for p, i in self.routes]))
        write_file(self.node, self.rule_path + "6", rule_file_v6(len(ids)))

    def start(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        start_unit(self.node, self.unit, self.argv())
        self.ready(timeout_s, **wait_kw)

    def _log(self) -> str:
        return unit_log(self.node, self.unit)

    def ready(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        wait_until(
            lambda: "entering main loop" in self._log(), timeout_s, self.binary, log=self._log, **wait_kw
        )
        ports_mod.check_port_macs(self._log(), dut_ports(self.dut), "l3fwd")

    def alive(self) -> str:
        return unit_active(self.node, self.unit)

    def stop(self) -> None:
        stop_unit(self.node, self.unit)

    def stats(self) -> Dict[str, Any]:
        """l3fwd prints no counters: the TG's counts are the measurement; the log tail is kept."""
        return {"log_tail": self._log().strip().splitlines()[-10:]}

    def version(self) -> str:
        return parse_dpdk_version(self._log())
