"""Per-trial signal: namespace counters, CPU accounting, disturbance verdicts, SUT-reported cycles
(cost injection: test_cost_injection.py)."""

from __future__ import annotations

import doctest
import json
import os
import socket
import threading

import pytest

from dpgate.telemetry import cpuacct, disturbance
from dpgate.telemetry.cpuacct import CpuSnapshot, account
from dpgate.testbeds.embedded.suts import cost
from dpgate.testbeds.embedded.suts.ovs import unixctl_call
from dpgate.traffic import nsdev

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
   tg0: 6400000  100000    0    0    0     0          0         0 12800000  200000    0    7    0     0       0          0
   tg1: 6399936   99999    0    2    0     0          0         0        0       0    0    0    0     0       0          0
"""


@pytest.mark.parametrize("mod", [nsdev, cpuacct, disturbance, cost])
def test_doctests(mod):
    assert doctest.testmod(mod).failed == 0


def test_net_dev_counters():
    c = nsdev.parse_net_dev(NET_DEV)
    assert set(c) == {"lo", "tg0", "tg1"}
    assert c["tg0"] == {
        "rx_packets": 100000,
        "rx_bytes": 6400000,
        "rx_dropped": 0,
        "tx_packets": 200000,
        "tx_bytes": 12800000,
        "tx_dropped": 7,
    }
    assert c["tg1"]["rx_dropped"] == 2


def test_net_dev_skips_short_or_headerless_lines():
    assert nsdev.parse_net_dev("h1\nh2\n  tg0: 1 2 3\n") == {}
    assert nsdev.parse_net_dev("") == {}


def _snap(ticks, own=None, children=0.0, me=0.0):
    return CpuSnapshot(ticks, own or {}, children, me)


def test_account_quiet_core_is_not_disturbed():
    # core 1: 1 s window, 0.4 s busy, all of it the SUT's own threads
    a = _snap({1: [0, 0, 0, 0, 0, 0, 0, 0]}, {("sut", 1): 10.0})
    b = _snap({1: [20, 0, 20, 60, 0, 0, 0, 0]}, {("sut", 1): 10.4})
    r = account(a, b, tg_cpus=[], sut_cpus=[1], hz_user=100)
    assert r["disturbance"] == 0.0 and r["sut_own_s"] == pytest.approx(0.4)


def test_account_sut_kernel_threads_are_the_sut_s_and_told_apart():
    # the SUT's process 0.5 s, its NAPI thread 0.3 s, both waited: all the SUT's own time
    a = CpuSnapshot(
        {1: [0] * 8}, {("sut", 1): 1.0, ("sut_kernel", 1): 2.0}, 0.0, 0.0, {"sut": 0.0, "sut_kernel": 0.1}
    )
    b = CpuSnapshot(
        {1: [50, 0, 30, 20, 0, 0, 0, 0]},
        {("sut", 1): 1.5, ("sut_kernel", 1): 2.3},
        0.0,
        0.0,
        {"sut": 0.2, "sut_kernel": 0.2},
    )
    r = account(a, b, tg_cpus=[], sut_cpus=[1], hz_user=100)
    assert r["sut_own_s"] == pytest.approx(0.8) and r["sut_kernel_s"] == pytest.approx(0.3)
    assert r["sut_wait_share"] == pytest.approx(0.3) and r["disturbance"] == 0.0


def test_account_hog_and_steal_are_foreign():
    a = _snap({1: [0] * 8})
    b = _snap({1: [50, 20, 10, 10, 0, 0, 0, 10]}, {("sut", 1): 0.3})
    r = account(a, b, tg_cpus=[], sut_cpus=[1], hz_user=100)
    # busy 0.8 s (steal apart), 0.3 ours -> 0.5 foreign + 0.1 steal of 1.0 s
    assert r["foreign_share"][1] == pytest.approx(0.6)
    assert r["steal_share"][1] == pytest.approx(0.1)


def test_account_generator_children_go_to_tg_core_and_own_process_is_spread():
    a = _snap({0: [0] * 8, 1: [0] * 8}, children=1.0, me=2.0)
    b = _snap({0: [80, 0, 0, 20, 0, 0, 0, 0], 1: [10, 0, 0, 90, 0, 0, 0, 0]}, children=1.7, me=2.15)
    r = account(a, b, tg_cpus=[0], sut_cpus=[1], hz_user=100)
    # TG: 0.8 busy - 0.7 tcpreplay = 0.1; our own 0.15 s covers it, then 0.05 of core 1's 0.1
    assert r["foreign_share"][0] == 0.0 and r["foreign_share"][1] == pytest.approx(0.05)


def test_account_task_that_ended_in_window_counts_nothing_negative():
    a = _snap({1: [0] * 8}, {("sut", 1): 5.0})
    b = _snap({1: [0, 0, 0, 100, 0, 0, 0, 0]}, {})
    assert account(a, b, [], [1], hz_user=100)["sut_own_s"] == 0.0


def test_real_proc_stat_and_own_tasks_read():
    ticks = cpuacct.cpu_ticks([0])
    assert len(ticks[0]) == 8
    mine = cpuacct.task_runtime_s(os.getpid())
    assert mine and all(sec >= 0 for sec, _ in mine.values())


class _T:
    def __init__(self, load, d, superseded=False, own=None, rep=None, speed=None):
        self.intended_load_pps, self.disturbance = load, d
        self.details = {"superseded": "x"} if superseded else {}
        if speed:
            self.details["sut_core_speed"] = speed
        self.sut_cpu_cycles_per_packet, self.sut_cycles_per_packet = own, rep


def test_verdict_trials_skip_superseded_and_other_loads():
    ts = [_T(100, 0.5, superseded=True), _T(100, 0.03), _T(300, 0.9)]
    used = disturbance.verdict_trials(ts, bounds=[100.0, None], mrr=[_T(600, 0.07)])
    assert disturbance.disturbance_of(used) == 0.07


def test_case_signal_names_the_slowest_core_around_the_verdict_trials_only():
    slow_unused, used, mrr = _T(300, 0.5), _T(100, 0.45), _T(600, 0.02)
    slow_unused.details["core_speeds"] = {0: 9.0, 1: 30.0}  # a load no verdict rests on
    used.details["core_speeds"] = {0: 29.0, 1: 16.5}
    mrr.details["core_speeds"] = {0: 31.0, 1: 30.5}
    sig = disturbance.case_signal([slow_unused, used], [100.0], mrr_trials=[mrr])
    assert sig == {"disturbance": 0.45, "core_speed_min": 16.5}
    assert "core_speed_min" not in disturbance.case_signal([_T(100, 0.0)], [100.0])


def test_inconclusive_threshold_is_strict_and_optional():
    assert disturbance.inconclusive(0.10, 0.10) is None
    assert "10.5 %" in disturbance.inconclusive(0.105, 0.10)
    assert disturbance.inconclusive(0.9, None) is None
    assert disturbance.inconclusive(None) is None


def test_cpp_at_load_polling_sut_uses_busy_cycles_only():
    busy = [_T(1, 0, own=9000.0, rep=400.0), _T(1, 0, own=9000.0, rep=420.0)]
    assert disturbance.cpp_at_load(busy, polling=True) == 410.0
    assert disturbance.cpp_at_load([_T(1, 0, own=9000.0, rep=None)], polling=True) is None
    assert disturbance.cpp_at_load([_T(1, 0, own=None)]) is None


def test_cpp_at_load_polling_sut_leaves_out_slow_phase_trials():
    # the probe's SUT-core speed stands in for the awake loop's beside a polling SUT
    ts = [_T(1, 0, rep=400.0, speed=30.0), _T(1, 0, rep=800.0, speed=15.0), _T(1, 0, rep=420.0, speed=29.0)]
    assert disturbance.cpp_at_load(ts, polling=True) == 410.0
    slow = [_T(1, 0, rep=800.0, speed=15.0), _T(1, 0, rep=700.0, speed=16.0)]
    # alike: both used (the case's speed reference flags them)
    assert disturbance.cpp_at_load(slow, polling=True) == 750.0


def _serve_once(path, reply):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    got = {}

    def run():
        conn, _ = srv.accept()
        got["req"] = json.loads(conn.recv(65536).decode())
        data = json.dumps(reply).encode()
        conn.sendall(data[:10])  # a reply split over two reads
        conn.sendall(data[10:])
        conn.close()
        srv.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, got


def test_unixctl_call_round_trip_and_error(tmp_path):
    path = str(tmp_path / "d.ctl")
    t, got = _serve_once(path, {"id": 0, "result": "main thread:\n  packets received: 5\n", "error": None})
    assert "packets received: 5" in unixctl_call(path, "dpif-netdev/pmd-stats-show")
    t.join(2)
    assert got["req"]["method"] == "dpif-netdev/pmd-stats-show" and got["req"]["params"] == []
    os.unlink(path)
    t, _ = _serve_once(path, {"id": 0, "result": None, "error": "unknown command"})
    with pytest.raises(ValueError, match="unknown command"):
        unixctl_call(path, "nope")
    t.join(2)
    with pytest.raises(OSError):
        unixctl_call(str(tmp_path / "missing.ctl"), "x")


def test_ovsdpdk_reports_its_pmd_threads_busy_cycles_per_trial(tmp_path):
    """OVS-DPDK's cpp_at_load source: ``pmd-stats-show`` over the daemon's control socket
    (the reply recorded from the real ovs-vswitchd-dpdk 3.1 here at 100 kpps); a daemon that
    does not answer gives no cycles and the trial stands."""
    import types

    from helpers import fixture_reader

    from dpgate.testbeds.embedded.suts.labnfs import OvsDpdkXconnect

    sut = OvsDpdkXconnect.__new__(OvsDpdkXconnect)
    sut.driver = types.SimpleNamespace(state_dir=str(tmp_path))
    assert sut.trial_end(0) == {}  # no socket yet: nothing, no error
    sut.trial_begin()
    text = fixture_reader("ovs")("pmd-stats-show-ovsdpdk-pmd-100kpps.txt")
    t, got = _serve_once(str(tmp_path / "vswitchd.ctl"), {"id": 0, "result": text, "error": None})
    out = sut.trial_end(200_000)
    t.join(2)
    assert got["req"]["method"] == "dpif-netdev/pmd-stats-show"
    # processing cycles / packets of the PMD thread: its busy iterations, not its idle ones
    # and its packets per output batch (the main thread sent none: its 0.00 weighs nothing)
    assert out == {"cycles_per_packet": pytest.approx(2428064301 / 200000), "output_batch": 29.74}


def test_cpp_regression_is_a_rise_through_the_throughput_classifier():
    from dpgate.regression.compare import classify_current

    hist = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1000.0]
    up = classify_current(hist, [1100.0], 0.03, None, lower_is_better=True)
    assert up.verdict == "regression" and up.change_pct == pytest.approx(10.0, abs=0.5)
    down = classify_current(hist, [900.0], 0.03, None, lower_is_better=True)
    assert down.verdict == "progression"
    same = classify_current(hist, [1008.0], 0.03, None, lower_is_better=True)
    assert same.verdict == "normal"


def test_cpp_noise_is_a_rise_of_cycles_not_a_fall_of_their_reciprocal():
    from dpgate.regression.compare import classify_current

    # gs9 linux-xconnect, +10 % injected: 3735 against one run of 3007 at the same core speed,
    # declared cpp_noise 23 %: +24.2 % is past it (as reciprocals it was -19.5 % < 23 %: "normal")
    v = classify_current([3007.0], [3735.0], 0.03, 0.23, lower_is_better=True)
    assert v.verdict == "regression" and v.allowance_pct == pytest.approx(23.0)
    assert classify_current([3007.0], [3650.0], 0.03, 0.23, lower_is_better=True).verdict == "normal"
    # the history's spread is a rise too: 1000/1200 (mean 1100, spread 20 %): +18 % passes, +22 % does not
    assert classify_current([1000.0, 1200.0], [1300.0], 0.03, None, lower_is_better=True).verdict == "normal"
    assert (
        classify_current([1000.0, 1200.0], [1340.0], 0.03, None, lower_is_better=True).verdict == "regression"
    )


class _Stub:
    """The generator's re-measurement policy over a scripted sequence of trial outcomes
    (``_measure_once`` is the boundary: the real one needs namespaces and tcpreplay)."""

    def __new__(cls, outcomes, **kw):
        from dpgate.telemetry.neighbour import NeighbourWatch
        from dpgate.traffic.tcpreplay import TcpreplayGenerator

        gen = TcpreplayGenerator.__new__(TcpreplayGenerator)
        gen.disturbance_max, gen.remeasure, gen.remeasure_clean = 0.10, 2, False
        gen.speeds = None  # no host speed probe: only the scripted disturbance decides
        gen.neighbour = NeighbourWatch()
        gen.__dict__.update(kw)
        seq = iter(outcomes)
        seen = []
        gen.on_trial = seen.append

        def once(load, dur):
            from dpgate.model.trial import TrialResult

            d, lost = next(seq)
            return TrialResult.from_counts(
                load, dur, tx_packets=1000, rx_packets=1000 - lost, disturbance=d, details={}
            )

        gen._measure_once = once
        gen.seen = seen
        return gen


def test_disturbed_lossy_trial_is_measured_again_at_most_twice():
    gen = _Stub([(0.5, 10), (0.4, 10), (0.3, 5), (0.0, 0)])
    r = gen.measure(1000, 1.0)
    assert r.disturbance == 0.3 and len(gen.seen) == 3
    assert [bool(t.details.get("superseded")) for t in gen.seen] == [True, True, False]


def test_clean_or_lossless_trials_stand():
    gen = _Stub([(0.5, 0), (0.05, 10)])
    assert gen.measure(1000, 1.0).disturbance == 0.5 and len(gen.seen) == 1
    assert gen.measure(1000, 1.0).disturbance == 0.05 and len(gen.seen) == 2
    gen = _Stub([(0.5, 0), (0.02, 0)], remeasure_clean=True)
    assert gen.measure(1000, 1.0).disturbance == 0.02 and len(gen.seen) == 2
    gen = _Stub([(0.9, 50)], remeasure=0)
    assert gen.measure(1000, 1.0).disturbance == 0.9


def test_cpp_at_load_disturbance_is_others_time_in_the_trials_it_rests_on():
    fast, slow, gone = _T(1e5, 0.5), _T(1e5, 0.6), _T(1e5, 0.9, superseded=True)
    fast.details.update(sut_core_speed=30.0, cpu={"disturbance": 0.03, "slow_share": 0.5})
    slow.details.update(sut_core_speed=16.0, cpu={"disturbance": 0.2, "slow_share": 0.6})
    gone.details.update(sut_core_speed=30.0, cpu={"disturbance": 0.9})
    sig = disturbance.case_signal([], [], cpp_trials=[fast, slow, gone], cpp=3000.0, cpp_load=1e5)
    assert sig["cpp_at_load_disturbance"] == 0.03  # the full-speed trial only
    assert sig["disturbance"] == 0.6  # the case's: every live trial, its slow share included
