"""Real trials: process-free counters agree with the kernel's, disturbance and own CPU time are
measured, cost injection lands in the SUT's forwarding path, nothing of ours is left behind.

Prefix ``sg1-`` (override with DPGATE_IT_SIGNAL_PREFIX) so it never collides with the
other integration modules or another developer's testbed.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from dpgate.testbeds.embedded.session import EmbeddedSession

PREFIX = os.environ.get("DPGATE_IT_SIGNAL_PREFIX", "sg1-")


@pytest.fixture(scope="module")
def session(module_session):
    with module_session("linux-xconnect", PREFIX) as s:
        yield s


def _ip_counters(ns: str, dev: str) -> dict:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "ip", "-j", "-s", "link", "show", "dev", dev],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out)[0]["stats64"]


def test_holder_counters_match_ip_link(session):
    tb = session.testbed
    session.measure(20_000, 0.5)
    fast = tb.ns_stats(tb.tg_ns)["tg0"]
    ref = _ip_counters(tb.tg_ns, "tg0")
    assert fast["tx_packets"] == ref["tx"]["packets"] >= 10_000
    assert fast["rx_packets"] == ref["rx"]["packets"]


def test_trial_records_disturbance_own_time_and_phases(session):
    r = session.measure(50_000, 1.0)
    assert r.loss_packets == 0 or r.disturbance is not None
    assert 0.0 <= r.disturbance <= 1.0
    cpu = r.details["cpu"]
    assert set(cpu["foreign_share"]) == {0, 1}
    assert cpu["sut_own_s"] > 0, "the SUT's NAPI threads forwarded 50 kframes: they must have run"
    assert r.sut_cpu_cycles_per_packet and r.sut_cpu_cycles_per_packet > 100
    phases = set(r.details["phases_ms"])
    assert {"counters_before", "sending", "settle", "sut_end", "speed_after"} <= phases
    # the host's speed on both cores, probed between trials (a slow phase adds to disturbance)
    assert set(r.details["core_speeds"]) == {0, 1} and min(r.details["core_speeds"].values()) > 1.0
    assert "slow_share" in cpu and (cpu["slow_share"] or 0.0) <= r.disturbance
    # where the host placed the TG and SUT cores: a cache-line round trip before and after
    assert 20.0 < r.details["xcore_rtt_ns"] < 100_000.0, r.details.get("xcore_rtt_ns")
    assert 20.0 < r.details["xcore_rtt_before_ns"] < 100_000.0
    assert r.details["xcore_placement"] in ("near", "far", "changed")
    # only a generator started per trial (tcpreplay) has a start phase; dpgen stays up
    assert ("generator_start" in phases) == (r.details["generator"] == "tcpreplay")
    names = [open(f"/proc/{p}/comm").read().strip() for p in session.testbed.napi_pids]
    assert sorted(n.split("-")[0] for n in names) == ["napi/sut0", "napi/sut1"]


def _knobs(session) -> list:
    tb = session.testbed
    return [
        subprocess.run(
            ["ip", "netns", "exec", tb.sut_ns, "cat", f"/sys/class/net/{p}/{k}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for p in ("sut0", "sut1")
        for k in ("gro_flush_timeout", "napi_defer_hard_irqs")
    ]


def test_napi_deferral_sets_both_knobs_of_every_sut_port_and_clears_them(session):
    """The moderation of cpp_at_load trials, in the SUT namespace's sysfs: 640 us and 100
    polls on each SUT port, then 0 again; a port the kernel refuses makes it False."""
    tb = session.testbed
    try:
        assert tb.napi_deferral(640.0)
        assert _knobs(session) == ["640000", "100", "640000", "100"]
    finally:
        assert tb.napi_deferral(0)
    assert _knobs(session) == ["0", "0", "0", "0"]
    assert tb.napi_deferral(-1.0) is False  # a negative timeout: refused by the kernel
    assert _knobs(session) == ["0", "100", "0", "100"]  # the other knob was taken: the caller undoes it
    assert tb.napi_deferral(0) and _knobs(session) == ["0", "0", "0", "0"]


def test_cpp_at_load_trials_are_moderated_timed_and_see_added_work(session):
    """As the gate measures cpp_at_load (``measure_cpp_at_load``): SUT core held awake and
    timed by its loop, the SUT ports' NAPI deferred so each wake-up takes the frames of a
    fixed interval, trials of a slow host phase measured past. Then added per-frame work
    shows in cycles per frame instead of being absorbed by bigger batches (measured at
    100 kpps: 893 instructions +33 % moderated, +2 % not)."""
    from dpgate.telemetry.cppload import measure_cpp_at_load
    from dpgate.testbeds.embedded.suts.cost import inject_kernel

    gen = session.generator

    def cpp():
        value, load, got = measure_cpp_at_load(gen, 1e6, 1e6, fixed_pps=100_000, duration_s=0.5)
        assert load == 100_000
        return value, got

    assert _knobs(session) == ["0", "0", "0", "0"]
    base, got = cpp()
    assert _knobs(session) == ["0", "0", "0", "0"], "moderation must end with the trials"
    # 64 frames per poll of the one port taking the 100 kpps: 640 us
    assert all(t.details["sut_napi_deferral_us"] == 640.0 for t in got)
    speeds = [t.details["sut_core_speed"] for t in got]
    assert all(s > 1.0 for s in speeds), speeds  # M iterations/s of the awake loop
    mem = [t.details.get("sut_memory_ns") for t in got]  # the memory probe around each (memprobe)
    assert all(m and 0.05 < m < 10_000 for m in mem), mem
    assert all(t.loss_packets == 0 for t in got)
    assert gen.core_speed_best == max(speeds)
    inject_kernel(session.sut, 1900)
    try:
        hit, got_hit = cpp()
    finally:
        for dev in ("sut0", "sut1"):
            subprocess.run(
                ["ip", "netns", "exec", session.testbed.sut_ns, "tc", "filter", "del", "dev", dev]
                + ["parent", "ffff:", "prio", "1"],
                check=True,
            )
    # 1900 adds: ~1,900 cycles a frame at full speed; at least 30 % of 0.75 a unit must show
    # (both figures from trials at >= 90 % of the fastest speed seen, when there were any)
    detail = f"{base:.0f} -> {hit:.0f} cycles/frame; speeds {speeds} / " + str(
        [t.details.get("sut_core_speed") for t in got_hit]
    )
    assert hit > base + 0.3 * 0.75 * 1900, detail


def test_cpp_at_load_trials_spaced_between_search_trials_only_they_held_and_moderated(session):
    """The gate's spacing (``SpacedCppTrials``) on the real testbed: the search's own trials
    run as before (no awake loop, no NAPI deferral, the knobs back to 0 after each cpp_at_load
    trial), the spaced ones as cpp_at_load's, and they count towards its plan."""
    from dpgate.telemetry.cppload import SpacedCppTrials, measure_cpp_at_load

    gen = session.generator
    spaced = SpacedCppTrials(gen, 1e6, 100_000, trials=3, duration_s=0.5, spacing=2)
    search = spaced.wrap(gen.measure)
    got = []
    for _ in range(4):
        got.append(search(150_000, 0.5))
        assert _knobs(session) == ["0", "0", "0", "0"]
    assert all(not t.details.get("sut_core_awake") and not t.details.get("sut_napi_deferral_us") for t in got)
    assert len(spaced.trials) == 2 and spaced.spent_s >= 1.0
    assert all(
        t.details["sut_core_awake"] and t.details["sut_napi_deferral_us"] == 640.0 for t in spaced.trials
    )
    _, load, cpp_trials = measure_cpp_at_load(
        gen, 1e6, 1e6, fixed_pps=100_000, trials=3, duration_s=0.5, early=spaced.early
    )
    assert load == 100_000 and cpp_trials[:2] == spaced.trials and len(cpp_trials) >= 3


def test_cost_injection_runs_before_the_cross_connect_and_keeps_forwarding(session):
    """The injected work is done once per frame, before the cross-connect, and only costs.
    Asserted where nothing can absorb it: capacity (frames/s the SUT forwards when offered
    more than it can) and cycles per frame at a load low enough that every frame wakes the
    SUT. (At 50 kpps a small injection can vanish: more work, bigger batches, fewer
    wake-ups; CI saw 4000 BPF instructions give -1000 cycles on 35,000-cycle frames.)"""
    import statistics

    from dpgate.testbeds.embedded.suts.cost import WORK_MAX, inject_kernel, remove_injection

    def cpp():  # as the gate measures cpp_at_load: SUT core held awake, median of trials
        with session.generator.hold_sut_awake():
            return statistics.median(session.measure(10_000, 0.5).sut_cpu_cycles_per_packet for _ in range(3))

    def capacity():
        return max(session.measure(200_000, 0.5).rx_rate_pps for _ in range(2))

    base_cap = capacity()
    done = inject_kernel(session.sut, WORK_MAX)
    out = subprocess.run(
        ["ip", "netns", "exec", session.testbed.sut_ns, "tc", "filter", "show", "dev", "sut0", "ingress"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    prefs = [
        ln.split(" pref ")[1].split()[:2]
        for ln in out.splitlines()
        if " pref " in ln and (" handle " in ln or " fh " in ln)
    ]
    assert prefs[0] == ["1", "bpf"] and ["10", "u32"] in prefs  # ours first, the mirred one after
    assert done["bpf_loads_per_frame"] == WORK_MAX == 38_000 and out.count("'1901,") == 20
    # the most the kernel takes, 3.9-4.6 cycles a load on a slow host (2026-11-26), under 2 on
    # one twice as fast (2026-11-27: 7,000 loads left it 96 % of a 200 kpps capacity): the
    # capacity falls whatever the host; the rest with 7,000 loads
    cap = capacity()
    assert cap < 0.6 * base_cap, f"capacity {base_cap:.0f} -> {cap:.0f} pps"
    remove_injection(session.sut)
    n = 7_000
    inject_kernel(session.sut, n)
    r = session.measure(10_000, 0.5)
    assert r.rx_packets >= 0.99 * r.tx_packets  # "no match": forwarding is unchanged
    # The level moves with the host between minutes: so each round pairs cycles without and
    # with the program, in the same phase, and the median round must show a cycle a load (the
    # loads slow with the host as the SUT does; a dependent add chain did not).
    rises = []
    for _ in range(3):
        remove_injection(session.sut)
        without = cpp()
        inject_kernel(session.sut, n)
        rises.append(cpp() - without)
    assert statistics.median(rises) > 1.0 * n, rises


#: (SUT, loads, least median rise in cycles a frame). A load of a frame in page fragments
#: (testpmd's and OVS-DPDK's net_af_packet) is 135-150 busy cycles in a slow phase of the Zen 3
#: host (2026-11-26, moderated) but 25-57 on the Xeon host (2026-11-30), where 20 loads read
#: +1,317, -2,373, +45 on OVS-DPDK, whose count jumps between two states ~50 % apart: 200
#: loads, and a third of the Xeon's 25 cycles a load must show. OVS AF_XDP's frames are linear
#: skbs, its loads in-line: 6.5 cycles a load in a slow phase (2026-11-29), 2.9 on the Xeon
#: host, 1-1.5 where the kernel SUTs' are at full speed, so 1,000 loads add ~1,500-7,000: 500
#: must show.
POLLING_INJECTION = [
    ("testpmd-io", 200, 0.3 * 25 * 200),
    ("ovsdpdk-xconnect", 200, 0.3 * 25 * 200),
    ("ovs-afxdp-xconnect", 1000, 500.0),
]


@pytest.mark.parametrize("sut,units,least", POLLING_INJECTION)
def test_polling_sut_cost_injection_lands_in_its_own_busy_cycles(topology_path, leftovers, sut, units, least):
    """A polling SUT's injected work (a program on the generator ports' ingress) runs inside
    its net_af_packet transmit call on the SUT core: its own busy cycles per frame (testpmd's
    ``--record-core-cycles``, OVS-DPDK's PMD processing cycles: ``sut_cycles_per_packet``)
    rise, forwarding is unchanged, and the filters are taken off again.

    Measured as the gate measures cpp_at_load (SUT ports moderated) and with the injection
    put on and taken off in turn, each round compared with itself: unmoderated, OVS-DPDK's
    count jumps between two states ~50 % apart, and the host's speed moves between minutes
    (CI once read 24,032 cycles a frame without and 20,453 with the injection)."""
    import statistics

    from dpgate.testbeds.embedded.suts.cost import inject_units, remove_injection

    load = 20_000
    s = EmbeddedSession(topology_path, sut=sut, prefix=PREFIX + "p", calibrate=False)
    left = leftovers(PREFIX + "p")
    s.up()
    rounds, done = [], {}
    try:

        def cpp():
            r = s.measure(load, 1.0)
            assert r.loss_packets == 0, r  # "no match": forwarding unchanged
            # the placement read beside the poller (stopped for the read, forwarding after it)
            assert r.details.get("xcore_placement") in ("near", "far", "changed"), r.details
            return r.sut_cycles_per_packet

        with s.generator.moderate_sut(load) as us:
            assert us and us > 0  # moderated as the gate's trials are
            for _ in range(3):
                base = cpp()
                done = inject_units(s.sut, units)
                hit = cpp()
                remove_injection(s.sut)
                rounds.append((base, hit))
        for dev in ("tg0", "tg1"):
            shown = subprocess.run(
                ["ip", "netns", "exec", s.testbed.tg_ns, "tc", "filter", "show", "dev", dev, "ingress"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            assert "bpf" not in shown, shown  # taken off again
    finally:
        s.down()
    left.assert_clean()
    assert done["bpf_loads_per_frame"] == units
    rise = statistics.median(hit - base for base, hit in rounds)
    pairs = ", ".join(f"{b:.0f} -> {h:.0f}" for b, h in rounds)
    assert rise > least, f"cycles/frame without -> with: {pairs}"


#: (SUT, loads, least median rise of the cycles a frame at saturation, as a share, offered
#: load). l3fwd's loads are in line since 2026-11-30 night (``cost.INLINE_SUTS``): 2.3 cycles
#: each on ~8,250 on the Xeon host by the gate's readings (0.028 % a load), so 1,000 add ~28 %;
#: OVS's in-line ones 9.9 on ~30,700: 2,000 add ~65 %. 10 % must show (a trial's figure
#: scatters 10-15 %, the median of :data:`ROUNDS` rounds less). A rise in cycles would hold one host's
#: table. The load overloads each: l3fwd forwarded 350 kpps without loss in a fast phase of the
#: Xeon host (probe 36 M it/s); the gate's pairs offer it 640-960 kpps (90 % of the ceiling).
#: OVS forwarded 350 kpps without loss on a fast Xeon host (probe 46-53 M it/s, NDR 340 kpps).
SATURATED_INJECTION = [("l3fwd-ip4", 1000, 0.10, 800_000), ("ovs-xconnect", 2000, 0.10, 800_000)]
#: Rounds (a trial without, then with the loads) whose median rise is judged: the fresh clone at
#: bc5a167 read three l3fwd rounds +25 %, -42 % (a base trial at 28,525 cycles against ~16,000)
#: and +2.4 %, so one odd trial in three decided it; five take two.
ROUNDS = 5


@pytest.mark.parametrize("sut,units,least,load", SATURATED_INJECTION)
def test_cost_injection_shows_at_saturation_in_a_sut_without_a_cycle_report(
    topology_path, leftovers, sut, units, least, load
):
    """l3fwd and OVS on af_packet ports busy-poll and count no cycles: the paired check reads
    their threads' CPU time per forwarded frame at an overload (``SATURATED_FIELD``), and the
    injected work (on the generator ports' ingress, run in their transmit call) must raise it."""
    import statistics

    from dpgate.telemetry.paired import SATURATED_FIELD
    from dpgate.testbeds.embedded.suts.cost import inject_units, remove_injection

    s = EmbeddedSession(topology_path, sut=sut, prefix=PREFIX + "s", calibrate=False)
    left = leftovers(PREFIX + "s")
    s.up()
    rounds = []
    try:

        def cpp():
            r = s.measure(load, 1.0)
            assert r.rx_packets > 0 and r.loss_packets > 0, r  # forwarding, and saturated
            return getattr(r, SATURATED_FIELD)

        for _ in range(ROUNDS):
            base = cpp()
            inject_units(s.sut, units)
            try:
                hit = cpp()
            finally:
                remove_injection(s.sut)
            rounds.append((base, hit))
    finally:
        s.down()
    left.assert_clean()
    rise = statistics.median(hit / base - 1 for base, hit in rounds)
    pairs = ", ".join(f"{b:.0f} -> {h:.0f}" for b, h in rounds)
    assert rise > least, f"cycles/frame at saturation without -> with: {pairs}"


def test_teardown_leaves_nothing(topology_path, leftovers):
    s = EmbeddedSession(topology_path, sut="linux-bridge", prefix=PREFIX + "x", calibrate=False)
    left = leftovers(PREFIX + "x")
    before = _children(os.getpid())
    s.up()
    with s.generator.hold_sut_awake():  # an awake loop on the SUT core, kept between holds
        s.measure(10_000, 0.3)
    s.measure(10_000, 0.3)
    ours = set(_children(os.getpid())) - set(before)  # generator, awake loop, speed and cross-core probes
    holders = [r.pid for r in s.testbed.__dict__.get("_counters", {}).values()]
    s.down()
    left.assert_clean()
    assert len(holders) == 2
    assert not [p for p in holders if os.path.exists(f"/proc/{p}")], "counter holder processes survived"
    assert len(ours) >= 3, f"expected the session's own children, saw {sorted(ours)}"
    alive = [pid for pid in ours if _alive(pid)]
    assert not alive, "children of the session survived its teardown: " + "; ".join(
        _cmdline(p) for p in alive
    )


def _children(ppid: int) -> dict:
    """{pid: command line} of ppid's live children."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == ppid and _alive(int(d)):
            out[int(d)] = _cmdline(int(d))
    return out


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")[:80]
    except OSError:
        return f"pid {pid} (gone)"


def _alive(pid: int) -> bool:
    """pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
