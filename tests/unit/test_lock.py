"""dpgate.exec.lock: flock + owner record, waits, inheritance by a child, atomic appends.

Other processes are real (``python -c`` children that take a lock, hold it, die); the lock
directory is a temporary one (``DPGATE_LOCK_DIR``), so nothing here touches live testbeds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from dpgate.exec import appendfile, lock
from dpgate.model.errors import ConfigError

LIBRARIES = os.path.join(os.path.dirname(__file__), "..", "..", "libraries")

HOLD = """
import sys, time
from dpgate.exec import lock
lk = lock.testbed_lock(sys.argv[1]).acquire(command="dpgate gate")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture(autouse=True)
def lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv(lock.LOCK_DIR_ENV, str(tmp_path / "locks"))
    monkeypatch.delenv(lock.INHERIT_ENV, raising=False)
    yield tmp_path / "locks"
    assert not lock._HELD, "a test left a lock held"


def holder_process(prefix: str, seconds: float = 30.0, env=None) -> subprocess.Popen:
    e = dict(os.environ if env is None else env)
    e["PYTHONPATH"] = os.path.abspath(LIBRARIES)
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD, prefix, str(seconds)], stdout=subprocess.PIPE, env=e, text=True
    )
    assert p.stdout.readline().strip() == "held"
    return p


def stop(p: subprocess.Popen, sig=signal.SIGKILL) -> None:
    p.send_signal(sig)
    p.wait(5)


def test_second_run_is_refused_with_the_holder_named_then_gets_it_when_the_holder_dies():
    p = holder_process("lk9-")
    try:
        with pytest.raises(lock.Busy) as err:
            lock.testbed_lock("lk9-").acquire(wait=0)
        msg = str(err.value)
        assert msg.startswith(f"testbed lk9- is in use by pid {p.pid}, `dpgate gate`, since ")
        assert msg.endswith("; use --prefix for a second embedded testbed or wait")
        assert err.value.holder.pid == p.pid
    finally:
        stop(p)  # SIGKILL: no cleanup code runs, the kernel drops the flock
    lk = lock.testbed_lock("lk9-").acquire(wait=0, command="dpgate trial")
    assert lock.holder("lk9-").command == "dpgate trial"
    lk.release()
    assert lock.holder("lk9-") is None


def test_stale_owner_record_of_a_dead_pid_is_ignored(lock_dir):
    lock_dir.mkdir(parents=True)
    (lock_dir / "lk9-.lock").write_text(json.dumps({"pid": 999999, "command": "dpgate gate", "started": 1.0}))
    assert lock.holder("lk9-") is None
    lk = lock.testbed_lock("lk9-").acquire(wait=0)
    assert json.loads((lock_dir / "lk9-.lock").read_text())["pid"] == os.getpid()
    lk.release()
    assert (lock_dir / "lk9-.lock").read_text() == ""  # released: no record left


def test_waits_with_progress_lines_and_takes_the_lock_when_it_is_freed():
    p = holder_process("lk9-", seconds=1.5)
    lines = []
    t0 = time.monotonic()
    lk = lock.testbed_lock("lk9-").acquire(wait=20, progress=lines.append, poll=0.1)
    waited = time.monotonic() - t0
    lk.release()
    p.wait(5)
    assert 0.5 < waited < 10
    assert lines and lines[0].startswith(f"dpgate: testbed lk9- is in use by pid {p.pid}, `dpgate gate`")
    assert "waiting (0 s of at most 20 s)" in lines[0]


def test_wait_bound_ends_in_one_error_naming_the_holder_and_the_wait():
    p = holder_process("lk9-")
    try:
        t0 = time.monotonic()
        with pytest.raises(lock.Busy, match=rf"in use by pid {p.pid}, .* \(waited 1 s\); use --prefix"):
            lock.testbed_lock("lk9-").acquire(wait=1.0, poll=0.1)
        assert time.monotonic() - t0 < 3
    finally:
        stop(p)


def test_overlapping_prefixes_exclude_each_other_but_distinct_ones_do_not():
    p = holder_process("lk9-")
    try:
        with pytest.raises(lock.Busy, match="on the overlapping testbed lk9-"):
            lock.testbed_lock("lk").acquire(wait=0)
        other = lock.testbed_lock("lk8-").acquire(wait=0)
        other.release()
        assert [x for x, _ in lock.live_testbeds("lk")] == ["lk9-"]
        assert lock.live_testbeds("lk8-") == []
    finally:
        stop(p)


def test_reentrant_in_one_process_and_released_by_the_last_holder():
    a = lock.testbed_lock("lk9-").acquire()
    b = lock.testbed_lock("lk9-").acquire()  # e.g. the trial command, then the testbed's own up()
    b.release()
    assert lock.holder("lk9-").pid == os.getpid()
    a.release()
    assert lock.holder("lk9-") is None


def test_child_given_the_lock_takes_it_without_waiting_and_keeps_it_alive():
    lk = lock.testbed_lock("lk9-").acquire(command="dpgate gate")
    env = dict(os.environ)
    fds = lock.inherit(env, lk)
    env["PYTHONPATH"] = os.path.abspath(LIBRARIES)
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, "lk9-", "30"], stdout=subprocess.PIPE, env=env, text=True, pass_fds=fds
    )
    try:
        assert child.stdout.readline().strip() == "held"  # no wait, no deadlock
        lk.release()  # the parent lets go (or dies) first: the child still holds the testbed
        h = lock.holder("lk9-")
        assert h is not None and h.command == "dpgate gate"
        with pytest.raises(lock.Busy):
            lock.testbed_lock("lk9-").acquire(wait=0)
    finally:
        stop(child)
    assert lock.holder("lk9-") is None


def test_a_child_without_the_token_waits_like_anyone_else():
    lk = lock.testbed_lock("lk9-").acquire()
    try:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(LIBRARIES))
        r = subprocess.run(
            [sys.executable, "-c", "from dpgate.exec import lock; lock.testbed_lock('lk9-').acquire()"],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert r.returncode != 0 and f"testbed lk9- is in use by pid {os.getpid()}" in r.stderr
    finally:
        lk.release()


def test_outdir_lock_refuses_a_second_run_into_the_same_directory(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(LIBRARIES))
    code = (
        "import sys, time; from dpgate.exec import lock\n"
        "lock.outdir_lock(sys.argv[1]).acquire(command='dpgate gate')\n"
        "print('held', flush=True); time.sleep(30)"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "res")], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert p.stdout.readline().strip() == "held"
        with pytest.raises(
            lock.Busy,
            match=rf"output directory .*res is in use by pid {p.pid}, `dpgate gate`.*"
            "pass another --outdir",
        ):
            lock.outdir_lock(str(tmp_path / "res")).acquire()
    finally:
        stop(p)
    lock.outdir_lock(str(tmp_path / "res")).acquire().release()


def test_parse_wait_rejects_bad_values():
    assert lock.parse_wait("30s") == 30.0
    with pytest.raises(ConfigError, match=r"--wait-testbed: expected a duration like 10m, 90s or 0"):
        lock.parse_wait("soon")
    with pytest.raises(ConfigError, match="--prefix"):
        lock.testbed_lock("../etc")


def test_append_line_cuts_a_torn_tail_and_read_lines_skips_an_unfinished_line(tmp_path):
    path = str(tmp_path / "h.jsonl")
    appendfile.append_line(path, '{"a": 1}')
    with open(path, "a") as fh:
        fh.write('{"b": ')  # a writer died mid-line
    assert appendfile.read_lines(path) == ['{"a": 1}']
    appendfile.append_line(path, '{"c": 3}')
    assert open(path).read() == '{"a": 1}\n{"c": 3}\n'


def test_concurrent_appends_from_many_processes_all_land_whole(tmp_path):
    path = str(tmp_path / "h.jsonl")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(LIBRARIES))
    code = (
        "import sys, json; from dpgate.exec import appendfile\n"
        "for i in range(200):\n"
        "    appendfile.append_line(sys.argv[1], json.dumps({'w': sys.argv[2], 'i': i, 'pad': 'x' * 5000}))"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, path, str(w)], env=env) for w in range(4)]
    seen = 0
    while any(p.poll() is None for p in procs):
        for line in appendfile.read_lines(path):  # readers meanwhile never see half a line
            json.loads(line)
        seen += 1
    assert all(p.wait() == 0 for p in procs)
    rows = [json.loads(x) for x in appendfile.read_lines(path)]
    assert sorted((r["w"], r["i"]) for r in rows) == [(str(w), i) for w in range(4) for i in range(200)]
    assert seen > 0


def test_doctests():
    import doctest

    assert doctest.testmod(lock).failed == 0


def test_gate_takes_outdir_then_testbed_and_gives_the_outdir_back_when_the_testbed_stays_busy(tmp_path):
    from types import SimpleNamespace

    from dpgate.cli.gate import take_ownership

    topo = SimpleNamespace(kind="embedded", prefix="lk9-")
    args = SimpleNamespace(outdir=str(tmp_path / "res"), wait_testbed=0.0)
    p = holder_process("lk9-")
    try:
        with pytest.raises(lock.Busy, match=rf"^testbed lk9- is in use by pid {p.pid}, `dpgate gate`"):
            take_ownership(args, topo)
        assert lock.outdir_lock(args.outdir).holder() is None  # not kept while failing
    finally:
        stop(p)
    locks = take_ownership(args, topo)
    assert [lk.owner.command for lk in locks] == ["dpgate gate", "dpgate gate"]
    env = {}
    fds = lock.inherit(env, *locks[1:])
    assert env[lock.INHERIT_ENV] == f"lk9-.lock={locks[1].owner.token}" and fds == (locks[1].fd,)
    for lk in reversed(locks):
        lk.release()
    lab = take_ownership(
        args,
        SimpleNamespace(kind="lab-2node", prefix="dpg0-", nodes={"DUT1": SimpleNamespace(namespace=None)}),
    )
    assert len(lab) == 1  # a lab topology: the DUT/TRex locks are the lab keywords' business
    lab[0].release()


def test_unwritable_lock_directory_is_one_clear_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(lock.LOCK_DIR_ENV, str(blocker / "locks"))  # a path under a regular file
    with pytest.raises(
        lock.EnvironmentProblem,
        match=r"cannot create the lock file .*/locks/lk9-.lock of testbed "
        r"lk9-: .*point DPGATE_LOCK_DIR at a writable directory",
    ):
        lock.testbed_lock("lk9-").acquire()


def test_gate_locks_the_prefix_of_a_lab_built_in_namespaces(tmp_path):
    from types import SimpleNamespace

    from dpgate.cli.gate import take_ownership

    topo = SimpleNamespace(kind="lab-2node", prefix="lk9-", nodes={"TG": SimpleNamespace(namespace="lk9-tg")})
    locks = take_ownership(SimpleNamespace(outdir=str(tmp_path), wait_testbed=0.0), topo)
    assert lock.holder("lk9-").pid == os.getpid()
    for lk in reversed(locks):
        lk.release()


PARENT = """
import os, subprocess, sys
from dpgate.exec import lock
lk = lock.testbed_lock("lk9-").acquire(command="dpgate gate")
env = dict(os.environ)
fds = lock.inherit(env, lk)
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], "lk9-", "30"], env=env, pass_fds=fds,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
assert child.stdout.readline().strip() == "held"
print(child.pid, flush=True)
os._exit(0)  # the gate dies without releasing anything (like SIGKILL)
"""


def test_a_dead_gate_whose_robot_still_runs_keeps_the_testbed_and_says_so():
    env = dict(os.environ, PYTHONPATH=os.path.abspath(LIBRARIES))
    parent = subprocess.run(
        [sys.executable, "-c", PARENT, HOLD], env=env, capture_output=True, text=True, timeout=60
    )
    child = int(parent.stdout.strip())
    try:
        with pytest.raises(lock.Busy) as err:
            lock.testbed_lock("lk9-").acquire(wait=0)
        assert "`dpgate gate`, since " in str(err.value)
        assert f"(exited; pid {child} it started still holds the lock)" in str(err.value)
    finally:
        os.kill(child, signal.SIGKILL)
    end = time.monotonic() + 5
    while lock.holder("lk9-") is not None and time.monotonic() < end:
        time.sleep(0.05)
    assert lock.holder("lk9-") is None
