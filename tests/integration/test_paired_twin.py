"""The paired check on real software: a testpmd twin beside the SUT under test, trials
alternating, the idle poll loop stopped, the injected cost seen (per cycle of the kernel's
work on the same frames, the busy cycles beside it), nothing left behind.

Prefix ``pr1-`` (override with DPGATE_IT_PAIRED_PREFIX); the twin's is ``pr1-b``.
"""

from __future__ import annotations

import os

import pytest
from helpers import ndrpdr_result

import dpgate.robot.paired as paired_keywords
from dpgate.exec.stopped import proc_state as _state
from dpgate.robotlib import EmbeddedTestbed
from dpgate.telemetry.cpuacct import pids_in_netns
from dpgate.telemetry.paired import judged_pairs, reference_moved, verdict
from dpgate.telemetry.placement import placement_of
from dpgate.testbeds.embedded.twin import twin_prefix

PREFIX = os.environ.get("DPGATE_IT_PAIRED_PREFIX", "pr1-")


def measured_twice(measure):
    """The paired estimate, asked for a second time when the first kept fewer than the 2
    clean pairs an estimate needs: the host moved the cores within most pairs (CI's host,
    2026-11-28: 1 clean pair of 8 measured). Any other refusal is returned as it is."""
    got = measure()
    return measure() if isinstance(got, str) and "needs at least 2 pairs" in got else got


def skip_if_the_host_moved_the_cores(paired, placements):
    """Skip, with the trials' placements, when the paired check refused for want of clean
    pairs twice: the check did what it must on such a host (said so, judged nothing), but
    what the test asserts about its figure cannot be measured there. Fails on any other
    refusal, and when a trial of the SUT lacks its cycles per packet (then the figure, not the
    host, is what is missing)."""
    if isinstance(paired, str):
        assert "needs at least 2 pairs" in paired, paired
        assert isinstance(placements, str) or all(c for _, c in placements), placements
        pytest.skip(f"the host moved the cores within most pairs ({paired}); SUT trials: {placements}")


def why_no_busy_verdict(paired, pairs):
    """Why the busy-cycle estimate beside the per-kernel one (``also``) is absent ("": it is
    there): the host changed the SUT core's speed (or placement) within all but one of the pairs
    measured (``pairs``: every (baseline, SUT) trial pair of the check, both rounds), so the
    check judged per kernel cycle only, as it must. Fails when ``also`` is absent although two
    pairs at one speed with figures were measured (then the check lost them). Zen 4 host,
    2026-12-02: 1 of 8 pairs at one speed, the SUT's trials reading 23-40 M it/s against the
    twin's 19-29."""
    if paired.also is not None:
        return ""
    alike = [
        (b, s)
        for b, s in judged_pairs(pairs, 1.0, speeds_alike=True)
        if b.sut_cycles_per_packet and s.sut_cycles_per_packet
    ]
    assert len(alike) < 2, (len(alike), paired)
    speeds = [tuple((t.details or {}).get("sut_core_speed") for t in pair) for pair in pairs]
    return (
        f"the host changed the core speed or placement within all but {len(alike)} of {len(pairs)} "
        f"pairs (core speeds, baseline and SUT, M it/s: {speeds})"
    )


def test_paired_check_sees_injected_cost_with_the_idle_twin_stopped(topology_path, leftovers, monkeypatch):
    """testpmd-mac with +20 % injected cost against its uninjected twin at 37.5 kpps (the
    gate's cpp_load), 4 pairs of 1 s trials (4 more when undecided): the change reads well
    above +8 % (2026-11-27 on this VM class: +10 % injected read +9.2 to +13.6 % in six
    bring-ups of 8 pairs), and
    during the SUT's trials the twin's testpmd is stopped (state T), during the twin's the
    SUT's; afterwards both run and teardown removes both testbeds."""
    lib = EmbeddedTestbed(topology_path, prefix=PREFIX, telemetry=False)
    left, left_twin = leftovers(PREFIX), leftovers(twin_prefix(PREFIX))
    lib.bring_up_embedded_testbed("testpmd-mac", "64B", inject_cost="20%")
    seen, placements, pairs = [], [], []
    real_pairs = paired_keywords.measure_pairs

    def recorded(*args, **kwargs):  # the real pairs, kept for what the skip says
        got = real_pairs(*args, **kwargs)
        pairs.extend(got)
        return got

    monkeypatch.setattr(paired_keywords, "measure_pairs", recorded)
    try:
        gen = lib.generators["64B"]
        real = gen.measure

        def observed(load, duration):
            twin = lib._twin
            other = pids_in_netns(twin.session.testbed.sut_ns) if twin else []
            seen.append(("sut", sorted({_state(p) for p in other})))
            got = real(load, duration)
            placements.append((placement_of(got), got.sut_cycles_per_packet))  # what a pair is left out for
            return got

        gen.measure = observed
        result = ndrpdr_result(150_000.0, telemetry={"cpp_at_load_pps": 37_500.0})

        def check():  # the pairs of this attempt only (measured_twice may ask again)
            pairs.clear()
            return lib.measure_cycles_against_baseline(result, pairs=4, duration=1.0)

        paired = measured_twice(check)
        twin_pids = pids_in_netns(lib._twin.session.testbed.sut_ns)
        sut_pids = pids_in_netns(lib._s.testbed.sut_ns)
        assert twin_pids and sut_pids
        assert {_state(p) for p in twin_pids + sut_pids} <= {"R", "S"}  # both resumed
    finally:
        lib.tear_down_embedded_testbed()
    left.assert_clean()
    left_twin.assert_clean()
    assert seen and all(states == ["T"] for _, states in seen), seen  # the twin stopped meanwhile
    skip_if_the_host_moved_the_cores(paired, placements)
    # judged per cycle of the kernel's work on the same frames (its ports' NAPI threads on the
    # SUT core), the busy cycles at one core speed beside it (scaled by the polling exponent);
    # a pair across a move of the cores or a change of core speed is measured again, up to
    # twice the pairs asked for; undecided on the first 4 pairs (e.g. 99 % CI -10.5 to +61.7 %
    # at +20.3 %, 2026-12-02 00:25), the check measures 4 more as the gate does
    assert paired is not None and paired.reference, paired
    no_busy = why_no_busy_verdict(paired, pairs)
    busy = paired.also
    if busy is not None:
        # measure_pairs stops at 4 pairs kept by placement (and core speed), or after 8, in each
        # of at most two rounds: every pair measured is judged or dropped (e.g. 6 measured, 3
        # judged: fresh clone, 2026-12-01 22:37)
        assert 4 <= busy.pairs + busy.dropped <= 16 and busy.pairs >= 2, busy
        assert busy.exponent == 0.25, paired
    m = paired.metrics()
    assert m["cpp_paired_kernel_cpp"] > 0 and paired.unscaled is not None, m
    assert m.get("cpp_paired_busy_change") == (None if busy is None else round(busy.change, 4)), m
    # the figure judged reads well above +8 %: per kernel cycle, or the busy cycles where the
    # injected work moved the kernel's part too (testpmd-mac at +20 %: its kernel's +15 %)
    moved = reference_moved(paired, 0.05)
    if moved and busy is None:  # nothing left to judge by: the check holds it inconclusive
        assert verdict(paired, 0.05)[0] == "SKIP", paired
        pytest.skip(f"{moved}, and {no_busy}: {paired.describe()}")
    judged = busy if moved else paired
    status, reason = verdict(paired, 0.05)
    few = judged.pairs < 4 or 2 * judged.pairs < len(pairs)  # fewer than asked, or than half measured
    if status == "SKIP" and ("clean pair(s), at least" in reason or few):
        # the host moved the cores or the core speed within most pairs: the check said so and
        # judged nothing (fresh clone, 2026-12-01 22:20: 2 clean pairs of 4; 3 passes after), or
        # held the few pairs left undecided (fresh clone on the Zen 4 host, 2026-12-02 06:50:
        # 3 pairs kept, +13.8 % with a 99 % CI of -22 to +66 %; 10:03 beside a fresh clone's
        # tests: 4 of 16 kept, -4.0 %, -57 to +115 %; CI 2026-12-02: the kernel's part moved
        # +9.9 %, so the busy cycles judged, on 3 pairs: +30.9 % with a CI reaching 0)
        pytest.skip(
            f"too few clean pairs on this host: {reason}; {len(pairs)} measured; SUT trials: {placements}"
        )
    assert judged.change > 0.08, paired.describe()
    assert status == "FAIL", (status, reason)


def test_sut_and_twin_run_the_builds_given(topology_path, leftovers, tmp_path):
    """A per-patch job's setting: the SUT under test runs one build of testpmd, its twin
    another (here two copies of the installed one, at other paths): each testpmd process runs
    the file it was given (``/proc/<pid>/exe``), and the versions say which."""
    import shutil

    builds = {}
    for side in ("patched", "parent"):
        (tmp_path / side).mkdir()
        builds[side] = shutil.copy2(shutil.which("dpdk-testpmd") or "/usr/bin/dpdk-testpmd", tmp_path / side)
    lib = EmbeddedTestbed(topology_path, prefix=PREFIX, telemetry=False)
    left, left_twin = leftovers(PREFIX), leftovers(twin_prefix(PREFIX))
    lib.bring_up_embedded_testbed("testpmd-io", "64B", sut_binary=f"dpdk-testpmd={builds['patched']}")
    try:
        result = ndrpdr_result(150_000.0, telemetry={"cpp_at_load_pps": 50_000.0})
        # one round (more_pairs=0): what is asserted is the pairs of one round; an undecided
        # verdict's second round (2026-11-29 CI: 8 pairs kept, 3 dropped) is tested in
        # tests/unit/test_paired_keyword.py and measured by benchmarks/gate_signal.py.
        # 4 pairs (up to 8 measured): on the Zen 3 host, moving the cores every few seconds,
        # 3 (up to 6) kept fewer than the 2 an estimate needs in 2 of 7 runs on 2026-11-28
        paired = measured_twice(
            lambda: lib.measure_cycles_against_baseline(
                result,
                pairs=4,
                duration=0.5,
                baseline_binary=f"dpdk-testpmd={builds['parent']}",
                more_pairs=0,
            )
        )
        exes = {
            side: {os.readlink(f"/proc/{p}/exe") for p in pids_in_netns(ns)}
            for side, ns in (("patched", lib._s.testbed.sut_ns), ("parent", lib._twin.session.testbed.sut_ns))
        }
        versions = (lib._s.sut.version(), lib._twin.session.sut.version())
    finally:
        lib.tear_down_embedded_testbed()
    left.assert_clean()
    left_twin.assert_clean()
    testpmds = {side: {e for e in got if e.endswith("dpdk-testpmd")} for side, got in exes.items()}
    assert testpmds == {"patched": {builds["patched"]}, "parent": {builds["parent"]}}, exes
    assert builds["patched"] in versions[0] and builds["parent"] in versions[1], versions
    skip_if_the_host_moved_the_cores(paired, "not recorded")
    # the pairs at one core speed (the busy cycles' estimate beside the per-kernel one) are the
    # ones measured again up to twice the pairs asked for
    busy = paired.also if paired.also is not None else paired
    assert busy.pairs == 4 or busy.pairs + busy.dropped == 8, paired


def test_paired_check_at_saturation_sees_injected_cost_in_l3fwd(topology_path, leftovers):
    """l3fwd reports no busy cycles, so the paired check compares it with its twin at
    saturation (90 % of the generator ceiling): its thread's CPU time per forwarded frame. 1,000
    injected in-line loads on the SUT's generator ports (0.028 % of a frame each by the gate's
    readings on the Xeon host, 2026-11-30 night: about +28 %) must read well above +8 % on 4
    pairs of 1 s trials (the pairs scatter ~10 %). The load overloads it: in a fast phase of
    that host l3fwd forwarded 350 kpps without loss, so a 400 kpps ceiling would not."""
    from dpgate.testbeds.embedded.suts.cost import inject_units

    lib = EmbeddedTestbed(topology_path, prefix=PREFIX, telemetry=False)
    left, left_twin = leftovers(PREFIX), leftovers(twin_prefix(PREFIX))
    lib.bring_up_embedded_testbed("l3fwd-ip4", "64B")
    try:
        inject_units(lib._s.sut, 1000)  # on this testbed's generator ports only; the twin has its own
        result = ndrpdr_result(120_000.0, telemetry={}, max_pps=900_000.0)
        paired = measured_twice(
            lambda: lib.measure_cycles_against_baseline(result, pairs=4, duration=1.0, more_pairs=0)
        )
    finally:
        lib.tear_down_embedded_testbed()
    left.assert_clean()
    left_twin.assert_clean()
    skip_if_the_host_moved_the_cores(paired, "l3fwd: no per-trial record kept here")
    assert paired.saturated and paired.metrics()["cpp_paired_saturated"] is True, paired
    assert paired.load_pps == 810_000.0, paired
    assert paired.change > 0.08, paired.describe()
