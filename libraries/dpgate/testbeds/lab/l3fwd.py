"""DPDK l3fwd with LPM lookups (seed 000 Table 1 NF 3: baseline IPv4 forwarding).

Routes go in a rule file (``--rule_ipv4``, DPDK >= 22.11, lines ``R<prefix>/<depth> <port>``);
next-hop MACs (the TG ports) via ``--eth-dest``. Queues/lcores via ``--config``.

Example::

    l3 = L3fwd(node, topo.dut, cores, routes=[("20.0.0.0/8", 1), ("10.0.0.0/8", 0)],
               eth_dest={0: "3c:fd:fe:00:00:01", 1: "3c:fd:fe:00:00:02"})
    "--lookup=lpm" in l3.argv()     # True
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, List, Sequence, Tuple

from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab.base import LabSut
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.service import start_unit, stop_unit, unit_log, wait_until, write_file
from dpgate.testbeds.lab.testpmd import dut_pcis, eal_args, parse_dpdk_version


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


def config_tuples(cores: CoreAllocation, ports: int = 2) -> str:
    """``(port,queue,lcore)`` list: workers spread round-robin over ports, one queue each.

    >>> from dpgate.testbeds.lab.cores import CoreAllocation
    >>> config_tuples(CoreAllocation(1, (2, 3), 2, 1, 0))
    '(0,0,2),(1,0,3)'
    """
    if not cores.workers:
        raise ConfigError("l3fwd needs at least one worker core")
    queues: Dict[int, int] = {}
    out = []
    slots = max(len(cores.workers), ports)
    for i in range(slots):
        port = i % ports
        lcore = cores.workers[i % len(cores.workers)]
        q = queues.get(port, 0)
        queues[port] = q + 1
        out.append(f"({port},{q},{lcore})")
    return ",".join(out)


class L3fwd(LabSut):
    unit = "dpgate-l3fwd"
    binary = "dpdk-l3fwd"

    def __init__(self, node: Any, dut: Any, cores: CoreAllocation, routes: Sequence[Tuple[str, int]],
                 eth_dest: Dict[int, str], rule_path: str = "/tmp/dpgate-l3fwd.rules"):
        self.node, self.dut, self.cores = node, dut, cores
        self.routes, self.eth_dest, self.rule_path = list(routes), dict(eth_dest), rule_path

    def argv(self) -> List[str]:
        pcis = dut_pcis(self.dut)
        args = [self.binary] + eal_args(self.cores, pcis, file_prefix="dpgate-l3fwd") + [
            "--", "-p", hex((1 << len(pcis)) - 1), "-P", "--lookup=lpm", "--parse-ptype",
            f"--config={config_tuples(self.cores, len(pcis))}", f"--rule_ipv4={self.rule_path}"]
        for port, mac in sorted(self.eth_dest.items()):
            args.append(f"--eth-dest={int(port)},{mac}")
        return args

    def configure(self) -> None:
        write_file(self.node, self.rule_path, rule_file(self.routes))

    def start(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        start_unit(self.node, self.unit, self.argv())
        self.ready(timeout_s, **wait_kw)

    def _log(self) -> str:
        return unit_log(self.node, self.unit)

    def ready(self, timeout_s: float = 60.0, **wait_kw: Any) -> None:
        wait_until(lambda: "entering main loop" in self._log(), timeout_s, self.binary, log=self._log, **wait_kw)

    def stop(self) -> None:
        stop_unit(self.node, self.unit)

    def stats(self) -> Dict[str, Any]:
        """l3fwd prints no counters: the TG's counts are the measurement; the log tail is kept."""
        return {"log_tail": self._log().strip().splitlines()[-10:]}

    def version(self) -> str:
        return parse_dpdk_version(self._log())
