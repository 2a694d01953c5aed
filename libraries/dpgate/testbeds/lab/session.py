"""The lab on one machine around a gate run: bring-up, the TRex server, teardown.

``dpgate gate --topology topologies/lab-local.yaml suites/lab`` runs the lab suites against a
lab this machine builds for the run: :func:`local_lab_session` brings up the namespaces,
links and the DUT's sshd (``dpgate.testbeds.lab.local.LocalLab``), starts TRex in the TG namespace
(``dpgate.traffic.trex.server.TrexServer``, before any SUT: memif ports need TRex's sockets),
yields the extra Robot arguments, and afterwards stops TRex and removes everything, also
when the run failed or was interrupted. A physical lab topology (no namespaces) yields
nothing and touches nothing.

Example::

    with local_lab_session("topologies/lab-local.yaml", prefix="lb-") as extra:
        subprocess.run(["robot", *extra, "suites/lab"])
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator, List, Optional

from dpgate.model.errors import EnvironmentProblem

#: TRex latency streams per direction for the lab on one machine (its af_packet ports carry
#: ~75 kpps each: 1000 pps of latency stays small next to the data streams).
LATENCY_PPS = 1000
#: wall-clock bound per search on the lab on one machine (its af_packet trials are noisy)
SEARCH_TIME_LIMIT = 90


def is_local_lab(topo: Any) -> bool:
    """A lab topology whose TG and DUT are namespaces of this machine."""
    return topo.kind != "embedded" and bool(topo.tg.namespace) and bool(topo.dut.namespace)


def missing_tools() -> List[str]:
    from dpgate.testbeds.lab.vendor import missing

    return missing("TRex", "VPP", "l3fwd")


@contextlib.contextmanager
def local_lab_session(
    topology: str, prefix: Optional[str] = None, log: Callable[[str], None] = print
) -> Iterator[List[str]]:
    """Bring the lab on one machine up for a run; yields extra ``robot`` arguments."""
    from dpgate.config.topology import load_topology

    topo = load_topology(topology, prefix)
    if not is_local_lab(topo):
        yield []
        return
    gaps = missing_tools()
    if gaps:
        raise EnvironmentProblem("lab on one machine: " + "; ".join(gaps))
    from dpgate.testbeds.lab.local import LocalLab
    from dpgate.traffic.trex.server import TrexServer

    if prefix:
        os.environ["DPGATE_PREFIX"] = prefix  # robot (our child) loads the same lab
    lab = LocalLab(topo, log=log)
    lab.up()
    srv = None
    try:
        srv = TrexServer.for_topology(topo, lab.run_dir)
        srv.start()
        ssh_host = topo.dut.ssh.host if topo.dut.ssh else "?"
        log(
            f"lab on one machine {topo.prefix}: TRex ({srv.tg_name}) in {topo.tg.namespace}, "
            f"DUT sshd at {ssh_host} in {topo.dut.namespace}"
        )
        yield [
            "--variable",
            f"LATENCY_PPS:{LATENCY_PPS}",
            "--variable",
            f"SEARCH_TIME_LIMIT:{SEARCH_TIME_LIMIT}",
        ]
    finally:
        try:
            if srv is not None:
                srv.stop()
        finally:
            problems = lab.down()
            log(f"lab on one machine {topo.prefix}: down" + (f" ({'; '.join(problems)})" if problems else ""))
