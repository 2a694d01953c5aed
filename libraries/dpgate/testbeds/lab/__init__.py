"""Lab SUT drivers run through a ``dpgate.exec.remote`` node: core allocation (NUMA, SMT),
VPP, DPDK testpmd and l3fwd, OVS-DPDK. Each driver has ``configure``, ``start``,
``ready``, ``stop``, ``stats`` and ``version``; tests pass a recording fake node.

Real validation needs a lab (docs/lab.md).
"""

from dpgate.testbeds.lab.cores import CoreAllocation, allocate, parse_lscpu  # noqa: F401
