"""Core allocation from lscpu -p output: NUMA nodes, SMT siblings, 1T1C / 2T1C tags."""

from __future__ import annotations

import pytest

from dpgate.model.errors import ConfigError
from dpgate.testbeds.lab.cores import allocate, parse_lscpu

# 2 sockets x 4 cores x 2 threads; siblings are cpu n and n+8 (Linux enumeration on Xeons).
LSCPU_HT = "# The following is the parsable format\n# CPU,Core,Socket,Node\n" + "".join(
    f"{cpu},{cpu % 8},{(cpu % 8) // 4},{(cpu % 8) // 4}\n" for cpu in range(16)
)
LSCPU_NOHT = "# CPU,Core,Socket,Node\n" + "".join(f"{c},{c},{c // 4},{c // 4}\n" for c in range(8))


def test_parse_lscpu_reads_cpu_core_socket_node():
    cpus = parse_lscpu(LSCPU_HT)
    assert len(cpus) == 16
    assert (cpus[13].cpu, cpus[13].core, cpus[13].socket, cpus[13].node) == (13, 5, 1, 1)


def test_ht_on_takes_both_siblings_of_each_core():
    a = allocate(parse_lscpu(LSCPU_HT), phy_cores=1, ht=True, numa=0)
    assert a.main == 1 and a.workers == (2, 10) and a.tag == "2T1C"
    b = allocate(parse_lscpu(LSCPU_HT), phy_cores=2, ht=True, numa=0)
    assert b.workers == (2, 10, 3, 11) and b.tag == "4T2C"


def test_ht_off_takes_one_thread_per_core_and_main_is_separate():
    a = allocate(parse_lscpu(LSCPU_HT), phy_cores=2, ht=False, numa=0)
    assert a.workers == (2, 3) and a.tag == "2T2C"
    assert a.main not in a.workers and 10 not in a.workers  # sibling of 2 left idle


def test_numa_node_is_respected():
    a = allocate(parse_lscpu(LSCPU_HT), phy_cores=2, ht=False, numa=1, skip=())
    assert set(a.workers) | {a.main} <= {4, 5, 6, 7, 12, 13, 14, 15}
    assert a.mask == hex(sum(1 << c for c in a.workers))


def test_too_many_cores_or_ht_without_smt_are_clear_errors():
    with pytest.raises(ConfigError, match="only 2 free"):
        allocate(parse_lscpu(LSCPU_HT), phy_cores=3, ht=True, numa=0)
    with pytest.raises(ConfigError, match="SMT"):
        allocate(parse_lscpu(LSCPU_NOHT), phy_cores=1, ht=True, numa=0)


def test_bad_lscpu_line_is_rejected():
    with pytest.raises(ConfigError, match="line 1"):
        parse_lscpu("a,b,c,d\n")
