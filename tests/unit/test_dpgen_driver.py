"""The Python side of the persistent generator dpgen, at the :class:`DpgenProcess` boundary.

``FakeDpgen`` speaks dpgen's line protocol and refuses what dpgen refuses (its answers to bad
lines are checked against the real binary in tests/integration/test_dpgen.py); instead of
sending frames it moves the counters of ``FakeTestbed`` (the kernel's /proc/net/dev in real
life). CPU accounting is not under test here (``NoCpu``).
"""

from __future__ import annotations

import argparse

import pytest

from dpgate.config.topology import load_topology
from dpgate.model.errors import TrialError
from dpgate.traffic.dpgen import DpgenGenerator, parse_done
from dpgate.traffic.profiles import make_profile


def fake_answer(line: str):
    """dpgen's validation of one command line: ('error', reason) / ('run', args) / ('quit',)."""
    words = line.split()
    if not words:
        return ("error", "error empty line")
    if words[0] == "quit":
        return ("quit",)
    if words[0] != "run":
        return ("error", f"error unknown command '{words[0][:40]}' (run, quit)")
    if len(words) != 4:
        return ("error", "error run takes 3 arguments: run <pps_per_dir> <count_per_dir> <deadline_s>")
    try:
        pps = float(words[1])
        assert 0 < pps <= 1e9
    except (ValueError, AssertionError):
        return ("error", f"error pps_per_dir must be a number in (0, 1e9], got '{words[1]}'")
    if not words[2].isdigit() or not 1 <= int(words[2]) <= 1 << 48:
        return ("error", f"error count_per_dir must be an integer >= 1, got '{words[2]}'")
    try:
        deadline = float(words[3])
        assert 0 < deadline <= 86400
    except (ValueError, AssertionError):
        return ("error", f"error deadline_s must be a number in (0, 86400], got '{words[3]}'")
    return ("run", pps, int(words[2]), deadline)


class FakeTestbed:
    def __init__(self, tmp_path, bidirectional=False):
        self.topology = load_topology("topologies/embedded.yaml", "dgu-")
        self.tg_ns, self.sut_ns = "dgu-tg", "dgu-sut"
        self.tg_cpus, self.sut_cpus = [0], [1]
        self.workdir = str(tmp_path)
        names = [(t.name, s.name) for t, s in self.topology.pairs()]
        zero = {
            "rx_packets": 0,
            "tx_packets": 0,
            "tx_dropped": 0,
            "rx_bytes": 0,
            "tx_bytes": 0,
            "rx_dropped": 0,
        }
        self.c = {
            self.tg_ns: {t: dict(zero) for t, _ in names},
            self.sut_ns: {s: dict(zero) for _, s in names},
        }

    late: list = []  # [reads until it lands, tx_port, n]: frames on a veth NAPI ring

    def ns_stats(self, ns):
        if ns == self.tg_ns:
            for item in list(self.late):
                item[0] -= 1
                if item[0] <= 0:
                    self.late.remove(item)
                    self.forward(item[1], item[2])
        return {k: dict(v) for k, v in self.c[ns].items()}

    def port_stats(self, ns, name):
        return dict(self.c[ns][name])

    def forward(self, tx_port: str, n: int, lost: int = 0) -> None:
        """n frames out of TG port tx_port through the SUT back to the other TG port."""
        pairs = [(t.name, s.name) for t, s in self.topology.pairs()]
        i = [t for t, _ in pairs].index(tx_port)
        j = 1 - i
        self.c[self.tg_ns][tx_port]["tx_packets"] += n
        self.c[self.sut_ns][pairs[i][1]]["rx_packets"] += n
        self.c[self.sut_ns][pairs[j][1]]["tx_packets"] += n - lost
        self.c[self.tg_ns][pairs[j][0]]["rx_packets"] += n - lost


class FakeDpgen:
    """dpgen at its process boundary: ready first, one answer per line, counters move."""

    pid = 4242

    def __init__(self, tb: FakeTestbed, short=0, lost=0, retried=0, die_on_run=False, late=(0, 0), refused=0):
        self.tb, self.short, self.lost, self.retried, self.die_on_run = tb, short, lost, retried, die_on_run
        self.late = late  # (frames, counter reads): taken by the kernel, counted that much later
        self.refused = refused  # frames veth dropped (ring full: tx_dropped), refused, sent again
        self.lines: list = []
        self.ready = False
        self.running = False

    def __call__(self, binary, ports, pcaps, ns, cpus):  # the spawn seam
        assert ns == self.tb.tg_ns and cpus == self.tb.tg_cpus and len(ports) == len(pcaps)
        self.ports, self.running = list(ports), True
        return self

    def alive(self):
        return self.running

    def wait_ready(self, timeout=10.0):
        self.ready = True

    def request(self, line: str, timeout: float, what: str) -> str:
        if not self.running:
            raise TrialError(f"generator exited (code 0) {what}: dpgen (pid 4242)")
        if not self.ready:
            raise AssertionError("a command was sent before dpgen said 'ready'")
        self.lines.append(line)
        ans = fake_answer(line)
        if ans[0] == "error":
            return ans[1]
        if ans[0] == "quit":
            self.running = False
            return ""
        if self.die_on_run:
            self.running = False
            raise TrialError(
                f"generator exited (signal 9) {what}: dpgen (pid 4242)\n--- dpgen output ---\nready"
            )
        _, pps, count, deadline = ans
        sent = count - self.short
        for p in self.ports:
            self.tb.forward(p, sent - self.late[0], self.lost)
            self.tb.c[self.tb.tg_ns][p]["tx_dropped"] += self.refused
            if self.late[0]:
                self.tb.late = [*self.tb.late, [self.late[1], p, self.late[0]]]
        n = len(self.ports)
        return (
            f"done sent={','.join([str(sent)] * n)} failed={','.join(['0'] * n)} "
            f"retried={','.join([str(self.retried)] * n)} seconds={min(count / pps, deadline):.6f}"
        )

    def quit(self):
        self.running = False

    def kill(self):
        self.running = False


class NoCpu:
    def begin(self, key=None):
        pass

    def end(self):
        return {"disturbance": 0.0}


class HostSpeeds:
    """The speed probe between trials (``dpgate.exec.speedprobe.TrialSpeeds``) at its boundary:
    each trial's end gives the next of ``readings`` ({cpu: M it/s}), judged against 30."""

    def __init__(self, readings=(), lasting=False):
        self.readings, self.lasting = list(readings), lasting
        self.probe = argparse.Namespace(reference=lambda declared=None: declared or 30.0)
        self.begun, self.asked = 0, []
        self.memory_asked, self.memory_ns = [], None
        self.refs, self.rechecked = [], {}  # the reference each end judged by; first readings

    def begin(self, cpus=None, memory=False):
        self.begun += 1
        self.asked.append(cpus)
        self.memory_asked.append(memory)
        self.memory_ns = 15.5 if memory else None  # the memory probe's reading, when asked

    def transient(self, ref):
        return not self.lasting

    def end(self, cpus=None, ref=None):
        self.asked.append(cpus)
        self.refs.append(ref)
        return self.readings.pop(0) if self.readings else {0: 30.0, 1: 30.0}

    def close(self):
        self.closed = True


def make(tmp_path, bidirectional=False, **kw):
    tb = FakeTestbed(tmp_path)
    fake = FakeDpgen(tb, **kw)
    gen = DpgenGenerator(tb, make_profile("l2", 64, bidirectional=bidirectional), spawn=fake, settle_s=0.001)
    gen.cpu, gen.speeds = NoCpu(), HostSpeeds()
    return gen, fake


def test_trial_sends_the_intended_count_in_one_request(tmp_path):
    gen, fake = make(tmp_path, bidirectional=True)
    assert gen.last_done == {}
    r = gen.measure(100_000, 0.5)
    assert gen.last_done["sent"] == [25_000, 25_000]  # dpgen's own answer, per direction
    assert fake.lines == ["run 50000.000 25000 0.505010"]
    assert (r.intended_packets, r.tx_packets, r.rx_packets, r.loss_packets, r.tg_shortfall) == (
        50_000,
        50_000,
        50_000,
        0,
        0,
    )
    assert r.details["generator"] == "dpgen" and r.details["retried_enobufs"] == 0
    assert r.details["generator_cut_at_deadline"] == 0 and r.actual_duration_s == pytest.approx(0.5)
    assert {"counters_before", "sending", "settle", "sut_end"} <= set(r.details["phases_ms"])
    gen.measure(100_000, 0.5)
    assert len(fake.lines) == 2  # the same process: no start per trial


def test_shortfall_and_loss_are_counted_against_the_intended_count(tmp_path):
    gen, fake = make(tmp_path, short=100, lost=10, retried=7)
    gen.max_pps = 40_000.0
    r = gen.measure(40_000, 1.0)
    assert r.tg_shortfall == 100 and r.loss_packets == 110 and r.sut_drops == 10
    assert r.details["retried_enobufs"] == 7 and r.details["generator_cut_at_deadline"] == 1
    assert r.limited_by == "generator"  # short at the calibrated ceiling


def test_frames_still_on_the_sut_napi_ring_are_waited_for_not_counted_lost(tmp_path):
    """Seen in CI (l3fwd polling on the SUT core that also runs the SUT ports' NAPI threads):
    47 frames dpgen had sent were not yet in the TG port's tx counter, rx == tx held, the
    settle ended and they counted as shortfall. Frames the generator says the kernel took
    are waited for, well past the quiet time (50 reads, ~50 ms here against 1 ms)."""
    gen, fake = make(tmp_path, late=(47, 50))
    r = gen.measure(20_000, 1.0)
    assert (r.tx_packets, r.rx_packets, r.loss_packets, r.tg_shortfall) == (20_000, 20_000, 0, 0), r
    # CI again, the ring also full for a moment: veth dropped 39 frames (tx_dropped) that
    # dpgen was refused (ENOBUFS) and sent again; 14 still on the ring. tx + tx_dropped
    # passes the claimed count, but 14 are in flight.
    gen, fake = make(tmp_path, late=(14, 50), refused=39, retried=30)
    r = gen.measure(20_000, 2.0)
    assert (r.tx_packets, r.rx_packets, r.loss_packets, r.tg_shortfall) == (40_000, 40_000, 0, 0), r
    assert r.tg_drops == 39 and r.details["retried_enobufs"] == 30
    assert r.details["settle_ms"] is not None and r.details["settle_ms"] > 5 * 1.0


def test_frames_back_after_the_settle_gave_up_are_counted_in_the_next_trial(tmp_path):
    """A too short quiet time loses late frames: they reach the TG's rx port between trials
    (in the counters, not in either trial's loss) and the next trial says how many."""
    gen, fake = make(tmp_path, lost=30)
    first = gen.measure(20_000, 0.2)
    assert first.loss_packets == 30 and first.details["late_after_last_settle"] is None
    rx_port = next(p for p, c in gen.tb.c[gen.tb.tg_ns].items() if c["rx_packets"])
    gen.tb.c[gen.tb.tg_ns][rx_port]["rx_packets"] += 12  # 12 of the 30 were only late
    assert gen.measure(20_000, 0.2).details["late_after_last_settle"] == 12
    assert gen.measure(20_000, 0.2).details["late_after_last_settle"] == 0
    # another frame size's generator on the same ports (one per size, all calibrated first):
    # its frames are the testbed's last trial, not late frames of this generator's last one
    other = DpgenGenerator(gen.tb, make_profile("l2", 1518), spawn=FakeDpgen(gen.tb), settle_s=0.001)
    other.cpu, other.speeds = NoCpu(), HostSpeeds()
    assert other.measure(20_000, 0.2).details["late_after_last_settle"] == 0
    assert gen.measure(20_000, 0.2).details["late_after_last_settle"] == 0


class QuietSut:
    """A SUT driver at the generator's boundary, with its own settle quiet time."""

    has_process, polls, settle_s = False, False, 0.004

    def check_alive(self):
        pass

    def trial_begin(self):
        pass

    def trial_end(self, rx):
        return {}


def test_a_sut_s_own_quiet_time_replaces_the_generator_s_and_is_recorded(tmp_path):
    gen, fake = make(tmp_path, lost=30)
    assert gen.measure(20_000, 0.2).details["settle_quiet_ms"] == 1.0  # the generator's 1 ms
    gen.sut = sut = QuietSut()
    r = gen.measure(20_000, 0.2)
    assert r.details["settle_quiet_ms"] == 4.0 and r.details["phases_ms"]["settle"] >= 4.0
    sut.settle_s = None  # a driver without one: the generator's
    assert gen.measure(20_000, 0.2).details["settle_quiet_ms"] == 1.0
    sut.settle_s = 1  # whole seconds are a quiet time too, a flag is not
    assert gen.quiet_s() == 1.0
    sut.settle_s = True
    assert gen.quiet_s() == 0.001


def test_claimed_frames_that_never_show_are_bounded_and_counted(tmp_path):
    gen, fake = make(tmp_path, late=(47, 10**9))
    r = gen.measure(20_000, 0.2)
    assert (r.tx_packets, r.loss_packets, r.tg_shortfall) == (4_000 - 47, 47, 47)
    assert r.details["phases_ms"]["settle"] < 1_300  # max(1 s, 20 x settle_s), not forever


def test_dead_dpgen_fails_the_trial_naming_it_and_is_started_again(tmp_path):
    gen, fake = make(tmp_path, die_on_run=True)
    with pytest.raises(TrialError, match=r"generator exited \(signal 9\) during trial at 10000 pps: dpgen"):
        gen.measure(10_000, 0.1)
    assert gen.proc is None
    fake.die_on_run = False
    assert gen.measure(10_000, 0.1).tx_packets == 1000


def test_dpgen_gone_between_trials_is_reported_not_hidden(tmp_path):
    gen, fake = make(tmp_path)
    gen.measure(10_000, 0.1)
    fake.running = False
    fake._gone = lambda what: TrialError(f"generator exited (code 1) {what}: dpgen (pid 4242)")
    with pytest.raises(TrialError, match="between trials"):
        gen.measure(10_000, 0.1)


def test_refused_request_is_a_trial_error(tmp_path):
    gen, fake = make(tmp_path)
    gen.start()
    assert fake.request("run 0 10 1", 1, "") == "error pps_per_dir must be a number in (0, 1e9], got '0'"
    assert fake.request("jump", 1, "").startswith("error unknown command 'jump'")
    assert fake.request("run 10 -1 1", 1, "").startswith("error count_per_dir")
    assert fake.request("run 10 1", 1, "").startswith("error run takes 3 arguments")
    with pytest.raises(AssertionError, match="before dpgen said 'ready'"):
        unready = FakeDpgen(FakeTestbed(tmp_path))
        unready(None, ["dgu-tg0"], ["x.pcap"], "dgu-tg", [0]).request("run 1 1 1", 1, "")
    fake.request = lambda line, timeout, what: "error deadline_s must be a number in (0, 86400], got 'x'"
    with pytest.raises(TrialError, match="dpgen refused the trial at 1000 pps: error deadline_s"):
        gen.measure(1000, 0.1)


def test_parse_done_rejects_other_lines():
    assert parse_done("done sent=5 failed=0 retried=1 seconds=0.5", 1)["retried"] == [1]
    assert parse_done("done sent=5,4 failed=0,0 retried=1,0 send_ns=900,800 seconds=0.5", 2)["send_ns"] == [
        900,
        800,
    ]
    for bad in (
        "ready",
        "done sent=5,5 failed=0 retried=1 seconds=0.5",
        "done sent=x failed=0 retried=0 seconds=1",
        "",
    ):
        with pytest.raises(TrialError, match="dpgen answered"):
            parse_done(bad, 1)


def test_close_quits_and_abort_kills(tmp_path):
    gen, fake = make(tmp_path)
    gen.start()
    kept = argparse.Namespace(stop=lambda: stopped.append(True))
    stopped: list = []
    gen._awake_kept = kept  # awake loops kept stopped between holds (traffic/sutcore.py)
    gen.close()
    assert not fake.running and gen.proc is None
    # what every embedded generator holds ends with it (the session's bring-down), not at exit
    assert stopped == [True] and gen._awake_kept is None and gen.speeds.closed
    gen.start()
    gen.abort()
    assert not fake.running and gen.proc is None


@pytest.mark.parametrize("bidirectional, us", [(False, 640.0), (True, 1280.0)])
def test_moderation_is_sized_per_receiving_port_and_ends_with_the_trials(tmp_path, bidirectional, us):
    gen, _ = make(tmp_path, bidirectional=bidirectional)
    calls = []
    gen.tb.napi_deferral = lambda v: calls.append(v) or True
    with gen.moderate_sut(100_000) as got:
        r = gen.measure(100_000, 0.2)
    assert got == us and calls == [us, 0]  # 64 frames a poll of each port taking 50 or 100 kpps
    assert r.details["sut_napi_deferral_us"] == us
    assert "sut_napi_deferral_us" not in gen.measure(100_000, 0.2).details


def test_a_kernel_that_refuses_moderation_runs_unmoderated_and_says_so(tmp_path):
    gen, _ = make(tmp_path)
    calls = []
    gen.tb.napi_deferral = lambda v: calls.append(v) and False  # tee into sysfs failed
    with gen.moderate_sut(100_000) as got:
        r = gen.measure(100_000, 0.2)
    assert got == 0.0 and calls == [640.0, 0]  # what a port took is undone at once
    assert "sut_napi_deferral_us" not in r.details


def test_the_memory_probe_is_read_around_trials_on_a_kernel_sut_core_held_awake(tmp_path):
    gen, _ = make(tmp_path)
    r = gen.measure(50_000, 0.2)
    assert "sut_memory_ns" not in r.details and gen.speeds.memory_asked == [False]
    gen.awake_pids = [1]  # as hold_sut_awake sets them (cpp_at_load trials)
    r = gen.measure(50_000, 0.2)
    assert r.details["sut_memory_ns"] == 15.5 and gen.speeds.memory_asked[-1] is True
