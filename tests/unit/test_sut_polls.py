"""Which embedded SUTs busy-poll their core: for those, CPU time per packet is Hz / load (not a
cost), so cpp_at_load must come from the SUT's own busy-cycle report or be absent."""

from __future__ import annotations

from dpgate.telemetry.disturbance import cpp_at_load
from dpgate.testbeds.embedded.suts.base import sut_class, sut_names

POLLING = {"l3fwd-ip4", "ovsdpdk-xconnect", "testpmd-io", "testpmd-mac", "ovs-afxdp-xconnect", "ovs-xconnect"}


def test_dpdk_and_pmd_suts_declare_that_they_poll():
    assert POLLING <= set(sut_names())
    assert {n for n in sut_names() if sut_class(n).polls} == POLLING


class _Trial:
    def __init__(self, own):
        self.sut_cpu_cycles_per_packet, self.sut_cycles_per_packet, self.details = own, None, {}


def test_a_polling_sut_without_its_own_cycle_report_has_no_cpp_at_load():
    # l3fwd at 20 kpps on a 2.6 GHz core: its CPU time says 129,000 cycles per packet
    trials = [_Trial(129_122.2)] * 3
    assert cpp_at_load(trials, polling=True) is None
    assert cpp_at_load(trials, polling=False) == 129_122.2
