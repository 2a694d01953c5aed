"""CPU steal (fault injection for the regression gate): it takes its share of the core,
stops cleanly, and rejects bad input with the field named."""

import os
import time

import pytest

from dpgate.model.errors import ConfigError
from dpgate.testbeds.embedded.handicap import CpuSteal

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root (CI runs as root)")


def cpu_seconds(pid: int) -> float:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@needs_root
def test_stealer_takes_its_share_of_the_core_and_stops():
    cpu = os.cpu_count() - 1
    with CpuSteal([cpu], share=0.10) as s:
        (pid,) = s.pids
        t0, c0 = time.monotonic(), cpu_seconds(pid)
        time.sleep(3.0)
        share = (cpu_seconds(pid) - c0) / (time.monotonic() - t0)
        assert os.sched_getaffinity(pid) == {cpu}
        assert os.sched_getscheduler(pid) == os.SCHED_FIFO
    # RT priority: the share does not depend on what else runs on the core
    assert 0.07 <= share <= 0.14, share
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


@pytest.mark.parametrize("share", [0, -0.1, 0.95, 1.5])
def test_bad_share_names_the_field(share):
    with pytest.raises(ConfigError, match="sut_cpu_steal.*share must be in"):
        CpuSteal([0], share=share)


def test_missing_cpu_is_a_clear_error():
    with pytest.raises(ConfigError, match="CPU 4096 does not exist"):
        CpuSteal([4096], share=0.1).start()
