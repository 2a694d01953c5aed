"""The persistent generator dpgen for real: the built binary on real veth namespaces.

Rate accuracy (sent count and duration within 1 %), smoothness in 10 ms windows, two
directions, its answers to bad lines (the unit tests' fake must give the same), a trial
through a real SUT, dpgen killed or hung mid-trial (TrialError naming it) and a teardown
that leaves no process. Namespaces ``dg2-*`` (and ``dg3-`` for the SUT testbed).
"""

from __future__ import annotations

import os
import signal
import statistics
import struct
import subprocess
import threading
import time

import pytest

from dpgate.model.errors import TrialError
from dpgate.testbeds.embedded.session import EmbeddedSession
from dpgate.traffic.dpgen import dpgen_binary
from dpgate.traffic.nsdev import NetnsCounters

BIN = dpgen_binary()
pytestmark = pytest.mark.skipif(BIN is None, reason="build/dpgen/dpgen is missing: run bash .ci/install")
A, B = "dg2-a", "dg2-b"
SUT_PREFIX = "dg3-"


def _ip(*argv: str) -> None:
    subprocess.run(["ip", *argv], check=True, capture_output=True)


def _pcap(path: str, port: int) -> None:
    """Four 64 B UDP frames 198.18.<port>.1 -> 198.18.<port>.2 (benchmarking range)."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i in range(4):
            ip = struct.pack(
                "!BBHHHBBH4s4s",
                0x45,
                0,
                46,
                i,
                0,
                64,
                17,
                0,
                bytes([198, 18, port, 1]),
                bytes([198, 18, port, 2]),
            )
            udp = struct.pack("!HHHH", 1024 + i, 1024, 26, 0) + bytes(18)
            frame = bytes.fromhex("020000000b02020000000a01") + b"\x08\x00" + ip + udp
            f.write(struct.pack("<IIII", 0, 0, len(frame), len(frame)) + frame)


@pytest.fixture(scope="module")
def veths(tmp_path_factory):
    """dg2-a (a0, a1) <-> dg2-b (b0, b1); nothing listens in dg2-b, its rx counters count."""
    d = tmp_path_factory.mktemp("dg2")
    for ns in (A, B):
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        _ip("netns", "add", ns)
        for key in ("all", "default"):  # no IPv6 chatter (MLD, RS) in the counters
            subprocess.run(
                ["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{key}.disable_ipv6=1"],
                check=True,
            )
    try:
        pcaps = []
        for i in range(2):
            _ip("link", "add", f"a{i}", "netns", A, "type", "veth", "peer", "name", f"b{i}", "netns", B)
            _ip("-n", A, "link", "set", f"a{i}", "up")
            _ip("-n", B, "link", "set", f"b{i}", "up")
            pcaps.append(str(d / f"dir{i}.pcap"))
            _pcap(pcaps[-1], i)
        yield pcaps
    finally:
        for ns in (A, B):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def _start(pcaps, ports=("a0",)):
    from dpgate.traffic.dpgen import DpgenProcess

    p = DpgenProcess(BIN, list(ports), pcaps[: len(ports)], A, [0])
    p.wait_ready()
    return p


def _done(p, pps, count, deadline):
    from dpgate.traffic.dpgen import parse_done

    line = p.request(f"run {pps} {count} {deadline}", deadline + 5, "in the test")
    return parse_done(line, len(line.split()[1].split(",")))


@pytest.mark.parametrize("pps", [100_000, 300_000])
def test_rate_accuracy_and_smoothness(veths, pps):
    p = _start(veths)
    counters = NetnsCounters(B).start()
    try:
        rx0 = counters.read()["b0"]["rx_packets"]
        samples = []
        box = {}
        t = threading.Thread(target=lambda: box.update(done=_done(p, pps, pps, 2.0)))
        t.start()
        while t.is_alive():  # the receiver's counter every ~10 ms while dpgen sends
            samples.append((time.monotonic(), counters.read()["b0"]["rx_packets"]))
            time.sleep(0.01)
        t.join()
        rx = counters.read()["b0"]["rx_packets"] - rx0
    finally:
        counters.close()
        p.quit()
    done = box["done"]
    print(f"{pps} pps: {done}, received {rx}")
    assert done["sent"] == [pps] and done["failed"] == [0]
    assert rx == pps
    _paced(done["seconds"], 1.0)
    rates = [
        (c1 - c0) / (t1 - t0)
        for (t0, c0), (t1, c1) in zip(samples, samples[1:])
        if c0 > rx0 and c1 < rx0 + pps and t1 - t0 > 0.005  # whole windows inside the run
    ]
    q = statistics.quantiles(rates, n=20)
    print(
        f"10 ms windows: n={len(rates)} p5 {q[0]:.0f} median {statistics.median(rates):.0f} p95 {q[-1]:.0f}"
    )
    assert statistics.median(rates) == pytest.approx(pps, rel=0.03)
    assert q[0] > 0.8 * pps and q[-1] < 1.2 * pps  # no bursts, no gaps (Python's samples jitter too)


def _paced(seconds: float, target: float) -> None:
    """Never early (a pacing bug sends in bursts ahead of time); late by at most 4 %: a stall of
    the shared host near the end delays the last frame (CI at 8a2033f: 0.509 s for 0.5 s)."""
    assert target * 0.99 <= seconds <= target * 1.04, f"{seconds:.4f} s to send a {target} s run"


def test_bidirectional_and_repeated_runs(veths):
    p = _start(veths, ("a0", "a1"))
    try:
        for _ in range(3):
            d = _done(p, 50_000, 25_000, 1.0)
            assert d["sent"] == [25_000, 25_000]
            _paced(d["seconds"], 0.5)
        assert p.alive()
    finally:
        p.quit()
    assert not p.alive()


def test_time_inside_sendmmsg_only_when_asked(veths, monkeypatch):
    """``DPGEN_TIME_SEND`` (benchmarks/cpp_drift.py's reference on the TG core): ``send_ns`` per
    port, inside the run's time and more than nothing; without it the line has no such key."""
    p = _start(veths)
    try:
        assert "send_ns" not in _done(p, 50_000, 25_000, 1.0)
    finally:
        p.quit()
    monkeypatch.setenv("DPGEN_TIME_SEND", "1")
    p = _start(veths)
    try:
        d = _done(p, 100_000, 50_000, 1.0)
    finally:
        p.quit()
    print(d)
    assert d["sent"] == [50_000]
    (ns,) = d["send_ns"]
    assert 50_000 * 100 < ns < d["seconds"] * 1e9  # at least 100 ns a frame in the kernel


def test_bad_lines_are_refused_like_the_fake(veths):
    """What dpgen refuses, the unit tests' fake refuses with the same line."""
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location(
        "dg_fake", os.path.join(here, "..", "unit", "test_dpgen_driver.py")
    )
    assert spec is not None and spec.loader is not None
    fake = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake)
    bad = [
        "",
        "jump 1 2 3",
        "run",
        "run 1 2",
        "run 1 2 3 4",
        "run 0 10 1",
        "run -5 10 1",
        "run x 10 1",
        "run 1e10 10 1",
        "run 10 0 1",
        "run 10 -1 1",
        "run 10 1.5 1",
        "run 10 abc 1",
        "run 10 10 0",
        "run 10 10 -1",
        "run 10 10 1e6",
        "run 10 10 nan",
        "run nan 10 1",
    ]
    p = _start(veths)
    try:
        for line in bad:
            real = p.request(line, 2.0, "in the test")
            assert real == fake.fake_answer(line)[1], line
        assert p.alive()
    finally:
        p.quit()


def test_deadline_cuts_a_run_that_cannot_keep_up(veths):
    p = _start(veths)
    try:
        d = _done(p, 50_000_000, 5_000_000, 0.2)  # far above any veth rate
    finally:
        p.quit()
    assert 0 < d["sent"][0] < 5_000_000 and d["seconds"] == pytest.approx(0.2, abs=0.02)


def test_start_errors_are_one_line(veths, tmp_path):
    from dpgate.traffic.dpgen import DpgenProcess

    with pytest.raises(TrialError, match="dpgen could not start: error no interface nope0"):
        DpgenProcess(BIN, ["nope0"], veths[:1], A, [0]).wait_ready()
    bad = tmp_path / "x.pcap"
    bad.write_bytes(b"not a pcap at all, really not")
    with pytest.raises(TrialError, match="not a pcap file"):
        DpgenProcess(BIN, ["a0"], [str(bad)], A, [0]).wait_ready()


def test_eof_on_stdin_exits(veths):
    p = _start(veths)
    assert p.proc.stdin is not None
    p.proc.stdin.close()
    assert p.proc.wait(2.0) == 0


@pytest.fixture()
def session(topology_path, leftovers):
    left = leftovers(SUT_PREFIX)
    with EmbeddedSession(
        topology_path, "linux-xconnect", prefix=SUT_PREFIX, calibrate=False, generator="dpgen"
    ) as s:
        left.remember()
        yield s
    left.assert_clean()


def test_trial_through_a_real_sut(session):
    assert session.tg_name.startswith("dpgen ")
    r = session.measure(100_000, 1.0)
    print(r.details["phases_ms"], r.details["cpu"])
    assert r.details["generator"] == "dpgen" and r.tx_packets == r.intended_packets == 100_000
    assert r.loss_packets == 0 and r.actual_duration_s == pytest.approx(1.0, rel=0.01)
    assert sum(r.details["phases_ms"].values()) < 1000  # framework time around the 1 s of sending


def test_dpgen_killed_mid_trial_is_a_trial_error(session):
    pid = session.generator.proc.pid
    threading.Timer(0.3, os.kill, (pid, signal.SIGKILL)).start()
    with pytest.raises(TrialError, match=r"generator exited \(signal 9\) during trial at 50000 pps: dpgen"):
        session.measure(50_000, 1.0)
    assert session.measure(20_000, 0.2).tx_packets == 4000  # a new dpgen for the next trial
    assert session.generator.proc.pid != pid


def test_hung_dpgen_is_killed_and_named(session):
    gen = session.generator
    gen.start()
    gen.budget_s = 0.5
    pid = gen.proc.pid
    threading.Timer(0.1, os.kill, (pid, signal.SIGSTOP)).start()
    t0 = time.monotonic()
    with pytest.raises(
        TrialError,
        match=r"generator \(dpgen\) did not answer within 1.5\d* s during trial .*\(hung\): killed",
    ):
        session.measure(50_000, 1.0)
    assert time.monotonic() - t0 < 3.0
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split()[2] == "Z"


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def test_ctrl_c_mid_trial_leaves_no_dpgen(topology_path, leftovers):
    left = leftovers(SUT_PREFIX)
    old = signal.signal(signal.SIGALRM, _interrupt)
    seen = {}
    try:
        with pytest.raises(KeyboardInterrupt):
            with EmbeddedSession(
                topology_path, "linux-xconnect", prefix=SUT_PREFIX, calibrate=False, generator="dpgen"
            ) as s:
                left.remember()
                seen["pid"] = s.generator.proc.pid
                signal.setitimer(signal.ITIMER_REAL, 0.3)  # "Ctrl-C" while dpgen sends
                s.measure(50_000, 2.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert not os.path.exists(f"/proc/{seen['pid']}")
    left.assert_clean()
