"""Every embedded SUT, for real: zero loss at a low rate, loss or shortfall with the rx rate
near capacity when overloaded, a SUT process killed mid-trial is reported as a SutError
naming the SUT, and after teardown nothing of ours remains.

One session (testbed + generator + SUT) per SUT, shared by that SUT's tests, to keep the
run short on 2 cores. Assertions leave room for +-30 % noise from other work on the VM.
"""

from __future__ import annotations

import os
import signal
import threading

import pytest
from helpers import EMBEDDED_SUTS

from dpgate.model.errors import SutError
from dpgate.testbeds.embedded.suts.base import sut_class, sut_names
from dpgate.testbeds.lab.service import STATE_DIR

PREFIX = os.environ.get("DPGATE_SUTS_TEST_PREFIX", "it1-")
LOW_PPS, LOW_S = 20_000, 2.0
#: An offered load no embedded SUT or generator reaches: the Xeon host's generator sent 1.49 Mpps
#: in a fast phase and linux-xconnect forwarded all of it (fresh clone 2026-11-30), so 2 Mpps
#: lost only 25 %; twice that keeps the overload an overload.
OVER_PPS, OVER_S = 4_000_000, 1.5
#: Forwarded 64 B rate that any embedded SUT reaches on one core, even on a busy VM
#: (slowest measured: OVS af_packet ~0.11-0.2 Mpps), and the most a SUT can plausibly
#: forward here (the generator itself tops out at ~0.45-1.5 Mpps).
MIN_CAPACITY_PPS, MAX_CAPACITY_PPS = 30_000, 2_500_000

ALL = sut_names()
WITH_PROCESS = [n for n in ALL if sut_class(n).has_process]


def pytest_generate_tests(metafunc):
    if "sut_name" in metafunc.fixturenames:
        names = WITH_PROCESS if metafunc.function.__name__ == "test_sut_killed_mid_trial" else ALL
        metafunc.parametrize("sut_name", names, scope="module")


@pytest.fixture(scope="module")
def session(sut_name, module_session):
    with module_session(sut_name, PREFIX) as s:
        yield s


def test_sut_set_is_complete():
    assert EMBEDDED_SUTS <= set(ALL)
    assert {"ovs-xconnect", "testpmd-io", "testpmd-mac"} <= set(WITH_PROCESS)


def test_session_is_up(session, sut_name):
    assert session.sut.started and session.sut.name == sut_name
    assert session.testbed.is_up
    assert session.testbed.tg_ns == PREFIX + "tg" and session.testbed.sut_ns == PREFIX + "sut"
    assert len(session.leftovers.inodes) == 2  # both namespaces exist while up
    assert session.sut.ready() is None
    session.sut.check_alive()


def test_rx_buffers_raised(session, sut_name):
    """A SUT reading its ports through af_packet sockets (ovs-xconnect) gets the receive
    buffer its class asks for, and the kernel shows it on exactly its own sockets."""
    want = getattr(sut_class(sut_name), "rx_buffer", 0)
    if not want:
        pytest.skip(f"{sut_name} reads no af_packet socket of its own")
    from dpgate.exec.runner import run
    from dpgate.exec.sockbuf import parse_packet_sockets

    lines = session.sut.rx_buffers
    assert [line.split(":")[0] for line in lines] == [p.name for p in session.sut.ports()], lines
    assert all(line.endswith(f" -> {2 * want} bytes") for line in lines), lines
    out = run(["ss", "-f", "link", "-a", "-m", "-p", "-n"], ns=session.sut.ns).stdout
    mine = [s for s in parse_packet_sockets(out) if s.pid == session.sut.proc.pid]
    assert sorted(s.ifname for s in mine) == sorted(p.name for p in session.sut.ports()), out
    assert all(s.rcvbuf == 2 * want for s in mine), out
    with open(session.sut.log_path, encoding="utf-8") as fh:
        assert fh.read().count("dpgate: receive buffer ") == 2


def test_low_rate_zero_loss(session, sut_name):
    first = r = session.measure(LOW_PPS, LOW_S)
    if first.loss_packets:
        # the session's first trial: OVS userspace on af_packet lost 59 of 40,000 in a slow host
        # phase (16.6 M it/s, CI at 324dc44); a SUT that cannot forward 20 kpps loses in both
        r = session.measure(LOW_PPS, LOW_S)
    info = f"{sut_name}: {r}" + (f" (first trial: {first})" if r is not first else "")
    assert r.intended_packets == int(LOW_PPS * LOW_S), info
    assert r.tx_packets == r.intended_packets, info
    assert r.rx_packets == r.intended_packets, info  # nothing lost, nothing extra (no stray frames)
    assert r.loss_packets == 0 and r.loss_ratio == 0.0 and r.tg_shortfall == 0, info
    assert r.limited_by is None, info
    assert r.sut_drops == 0, info
    assert abs(r.actual_duration_s - LOW_S) < 0.2 * LOW_S, info
    assert r.frame_size == "64"
    assert r.details["flows"] == (62_500 if sut_class(sut_name).traffic == "ip4" else 3_125)
    # every frame crossed the SUT namespace: in on one port, out on the other
    assert r.details["sut_rx_packets"] == r.details["sut_tx_packets"] == r.intended_packets, info


def test_overload_reports_loss_and_capacity(session, sut_name):
    r = session.measure(OVER_PPS, OVER_S)
    info = f"{sut_name}: rx {r.rx_rate_pps:.0f} pps; {r}"
    assert r.intended_packets == int(OVER_PPS * OVER_S)
    assert r.loss_packets > 0, info
    assert r.loss_packets == r.intended_packets - r.rx_packets, info
    assert r.loss_ratio > 0.3, info  # 2 Mpps is far above anything forwarded here
    assert r.tg_shortfall == r.intended_packets - r.tx_packets > 0, info
    assert MIN_CAPACITY_PPS < r.rx_rate_pps < MAX_CAPACITY_PPS, info
    assert r.rx_rate_pps < 0.7 * OVER_PPS, info
    assert r.rx_packets <= r.tx_packets, info
    # the trial is cut at the intended duration, not stretched by a lagging generator
    assert r.details["wall_s"] < OVER_S + 1.0, info
    # Where did it go: a SUT that drops (af_packet userspace) shows sut_drops, and whatever
    # the TG sent is either received or counted as dropped inside the SUT namespace.
    assert r.sut_drops is not None and r.sut_drops >= 0
    assert r.tx_packets - r.rx_packets <= r.sut_drops + max(1000, 0.01 * r.tx_packets), info
    # and the SUT still forwards cleanly afterwards (no stuck state from the overload). One
    # more trial is allowed: on a slow host phase OVS userspace lost 58 of 20,000 frames in
    # the first second after the overload (CI at ef3b4e1); a stuck state loses in both.
    first = again = session.measure(LOW_PPS, 1.0)
    if first.loss_packets:
        again = session.measure(LOW_PPS, 1.0)
    assert again.loss_packets == 0, f"{sut_name} after overload: {first}, then {again}"


def test_sut_killed_mid_trial(session, sut_name):
    """The SUT process dies while traffic runs: the trial fails with a SutError naming the
    SUT, and the next call fails the same way instead of reporting a fake result."""
    proc = session.sut.proc
    if proc is not None:  # started by the embedded driver: our child
        assert proc.poll() is None
        pid = proc.pid
    else:  # a lab driver's daemon (l3fwd-ip4, ovsdpdk-xconnect): its pid file
        with open(f"{STATE_DIR}/{session.sut.driver.unit}.pid") as fh:
            pid = int(fh.read().strip())
    with open(f"/proc/{pid}/cmdline", "rb") as fh:
        prog = os.path.basename(fh.read().split(b"\0")[0].decode())
    assert prog in ("ovs-vswitchd", "ovs-vswitchd-dpdk", "dpdk-testpmd", "dpdk-l3fwd"), prog

    killer = threading.Timer(0.7, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(SutError) as ei:
            session.measure(LOW_PPS, 2.0)
    finally:
        killer.cancel()
    msg = str(ei.value)
    assert sut_name in msg and "not running" in msg, msg
    if proc is not None:  # our child: its exit status is known exactly
        assert "signal 9" in msg, msg
    with pytest.raises(SutError, match=sut_name):
        session.measure(LOW_PPS, 0.5)
    assert not session.sut.alive()


def test_teardown_leaves_nothing(session, sut_name):
    left = session.leftovers
    assert left.namespaces() == [PREFIX + "sut", PREFIX + "tg"] or sorted(left.namespaces()) == [
        PREFIX + "sut",
        PREFIX + "tg",
    ]
    session.down()
    left.assert_clean()
    session.down()  # idempotent
    left.assert_clean(timeout=0)
