"""Two runs on one machine never destroy each other's testbed, results or history (issue 17).

Real processes on the real embedded testbed: two `dpgate trial` and two `dpgate gate` on
one prefix (the second waits, then runs; nothing is killed), two prefixes side by side,
a SIGKILLed run's leftovers removed by the next run, `dpgate cleanup` refusing a live
owner, two concurrent `dpgate history add` into one store. Prefixes lk0-, lk1-, lk2-.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from dpgate.exec.lock import holder
from dpgate.outputs.results import load_records
from dpgate.regression.history import disturbed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.path.join(ROOT, "suites/embedded/linux-xconnect-ndrpdr.robot")
TRIAL = ["--sut", "linux-xconnect", "--rate", "20kpps", "--frame-size", "64", "--json", "--no-calibrate"]


@pytest.fixture
def dpgate(dpgate_cmd):
    argv0, env = dpgate_cmd

    def start(*args: str) -> subprocess.Popen:
        return subprocess.Popen(
            argv0 + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )

    return start


def wait_held_by(prefix: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        h = holder(prefix)
        if h is not None and h.pid == proc.pid:
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError(f"{prefix} not held by pid {proc.pid} within {timeout} s")


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def correct_trial(out: str, seconds: int) -> None:
    obj = json.loads(out)
    assert obj["intended_packets"] == 20_000 * seconds
    assert obj["tx_packets"] == obj["rx_packets"] == obj["intended_packets"], obj
    assert obj["loss_packets"] == 0, obj


def netns(prefix: str):
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return sorted(ln.split()[0] for ln in out.splitlines() if ln.startswith(prefix))


def test_second_trial_on_a_busy_prefix_waits_then_runs_and_cleanup_refuses_the_live_owner(dpgate, leftovers):
    left = leftovers("lk0-")
    first = dpgate("trial", *TRIAL, "--duration", "6", "--prefix", "lk0-")
    wait_held_by("lk0-", first)
    second = dpgate("trial", *TRIAL, "--duration", "2", "--prefix", "lk0-")
    time.sleep(1.0)
    cleanup = subprocess.run(
        first.args[:3] + ["cleanup", "--prefix", "lk0-"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "libraries")),
        timeout=60,
    )
    assert cleanup.returncode == 3, cleanup
    assert f"testbed lk0- is in use by pid {first.pid}, `dpgate trial`, since " in cleanup.stderr
    assert "pass --force" in cleanup.stderr and cleanup.stderr.count("\n") == 1
    assert netns("lk0-") == ["lk0-sut", "lk0-tg"]  # untouched
    rc1, out1, err1 = finish(first)
    rc2, out2, err2 = finish(second)
    assert rc1 == 0, err1  # not killed by the second run
    assert rc2 == 0, err2
    correct_trial(out1, 6)
    correct_trial(out2, 2)
    assert f"dpgate: testbed lk0- is in use by pid {first.pid}, `dpgate trial`, since " in err2
    assert "waiting (0 s of at most 10 min)" in err2
    left.assert_clean()
    assert holder("lk0-") is None


def test_two_prefixes_run_side_by_side(dpgate, leftovers):
    t0 = time.monotonic()
    a = dpgate("trial", *TRIAL, "--duration", "4", "--prefix", "lk1-")
    b = dpgate("trial", *TRIAL, "--duration", "4", "--prefix", "lk2-")
    (rc_a, out_a, err_a), (rc_b, out_b, err_b) = finish(a), finish(b)
    assert rc_a == 0 and rc_b == 0, err_a + err_b
    correct_trial(out_a, 4)
    correct_trial(out_b, 4)
    assert "in use" not in err_a + err_b
    assert time.monotonic() - t0 < 2 * 4 + 30  # not one after the other plus set-ups
    leftovers("lk1-").assert_clean()
    leftovers("lk2-").assert_clean()


def test_killed_run_leftovers_are_removed_by_the_next_run(dpgate, leftovers, sending):
    left = leftovers("lk2-")
    victim = dpgate("trial", *TRIAL, "--duration", "30", "--prefix", "lk2-")
    wait_held_by("lk2-", victim)
    end = time.monotonic() + 60
    while not sending("lk2-"):
        assert time.monotonic() < end and victim.poll() is None, "the trial never started sending"
        time.sleep(0.1)
    left.remember()
    victim.send_signal(signal.SIGKILL)  # no teardown runs
    victim.communicate(timeout=10)
    assert netns("lk2-") == ["lk2-sut", "lk2-tg"], "the killed run should leave its testbed behind"
    assert holder("lk2-") is None  # the kernel dropped its lock
    nxt = dpgate("trial", *TRIAL, "--duration", "2", "--prefix", "lk2-")
    rc, out, err = finish(nxt)
    assert rc == 0, err
    correct_trial(out, 2)
    assert "in use" not in err
    left.assert_clean()


def test_cleanup_force_removes_a_live_owners_testbed(dpgate_cmd):
    argv0, env = dpgate_cmd
    code = (
        "import time; from dpgate.exec import lock; lock.testbed_lock('lk1-').acquire(command='dpgate gate');"
        "print('held', flush=True); time.sleep(60)"
    )
    owner = subprocess.Popen([argv0[0], "-c", code], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert owner.stdout.readline().strip() == "held"
        subprocess.run(["ip", "netns", "add", "lk1-tg"], check=True)
        refused = subprocess.run(
            argv0 + ["cleanup", "--prefix", "lk1-"], capture_output=True, text=True, env=env
        )
        assert refused.returncode == 3 and f"in use by pid {owner.pid}, `dpgate gate`" in refused.stderr
        assert netns("lk1-") == ["lk1-tg"]
        forced = subprocess.run(
            argv0 + ["cleanup", "--prefix", "lk1-", "--force"], capture_output=True, text=True, env=env
        )
        assert forced.returncode == 0, forced.stderr
        assert f"--force: removing testbed lk1- of the live run pid {owner.pid}" in forced.stderr
        assert "removed: lk1-tg" in forced.stdout and netns("lk1-") == []
    finally:
        owner.kill()
        owner.wait()
        subprocess.run(["ip", "netns", "del", "lk1-tg"], capture_output=True)


def test_two_gates_on_one_prefix_and_two_history_adds_to_one_store(dpgate, leftovers, tmp_path, dpgate_cmd):
    left = leftovers("lk1-")
    th = tmp_path / "th.yaml"
    th.write_text("nfs:\n  linux-xconnect:\n    all: {ndr_min: 1 kpps, pdr_min: 1 kpps}\n")

    def gate(outdir):
        return dpgate(
            "gate",
            "--outdir",
            str(outdir),
            "--prefix",
            "lk1-",
            "--include",
            "64B",
            "--thresholds",
            str(th),
            "--variable",
            "SEARCH_TIME_LIMIT:4",
            "--variable",
            "PER_COMMIT_DURATION_SUM:2",
            "--mrr-trials",
            "0",
            "--no-history",
            SUITE,
        )

    out_a, out_b = tmp_path / "a", tmp_path / "b"
    a = gate(out_a)
    wait_held_by("lk1-", a)
    b = gate(out_b)
    same_outdir = gate(out_a)  # a second run into a live run's --outdir: refused at once
    rc_s, _, err_s = finish(same_outdir, timeout=60)
    assert rc_s == 3, err_s
    assert f"output directory {out_a} is in use by pid {a.pid}, `dpgate gate`, since " in err_s
    assert "pass another --outdir" in err_s
    (rc_a, so_a, err_a), (rc_b, so_b, err_b) = finish(a, 400), finish(b, 400)
    assert rc_a == 0, so_a[-2000:] + err_a[-2000:]
    assert rc_b == 0, so_b[-2000:] + err_b[-2000:]
    assert f"dpgate: testbed lk1- is in use by pid {a.pid}, `dpgate gate`, since " in err_b
    for out in (out_a, out_b):
        rec = one_record(out)
        assert rec["status"] == "PASS" and rec["metrics"]["ndr_pps"] > 0, rec.get("message")
        assert rec["prefix"] == "lk1-"
    left.assert_clean()

    # Four concurrent adds (each run twice) into one store. A run whose trials others' CPU
    # time disturbed (here: the other gate starting beside it) is kept out of history by
    # design (`history add` says "added 0"), so the store holds exactly what the adds
    # reported, none lost or torn.
    argv0, env = dpgate_cmd
    store = tmp_path / "store"
    jobs = [(out_a, "ca1"), (out_b, "cb1"), (out_a, "ca2"), (out_b, "cb2")]
    adds = [
        subprocess.Popen(
            argv0 + ["history", "add", str(o), "--store", str(store), "--commit", c],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for o, c in jobs
    ]
    done = [finish(p, 60) for p in adds]
    assert [rc for rc, _, _ in done] == [0, 0, 0, 0], [err for _, _, err in done]
    added = [int(so.split()[1]) for _, so, _ in done]  # "added N test result(s) to STORE"
    assert added[0] == added[2] and added[1] == added[3], added  # the same run, the same answer
    for (o, _), n in zip(jobs, added):
        assert n == 1 or (n == 0 and disturbed(one_record(o))), (o, n)  # skipped only if disturbed
    expected = sorted(c for (_, c), n in zip(jobs, added) if n)
    hists = list(store.rglob("*.jsonl"))
    if not expected:  # both gates disturbed: nothing to append, nothing appended
        assert hists == []
        return
    (hist,) = hists
    entries = [json.loads(line) for line in hist.read_text().splitlines()]
    assert sorted(e["commit"] for e in entries) == expected
    assert hist.read_text().endswith("\n")


def one_record(outdir) -> dict:
    (rec,) = load_records(str(outdir))  # the reader `history add` uses
    return rec
