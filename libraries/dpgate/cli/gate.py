"""``dpgate gate``: the CI stage. Runs the suites, prints a summary, exits non-zero iff a gate failed.

    dpgate gate                                  # embedded suites, per-commit profile
    dpgate gate --profile sign-off --outdir results/release
    dpgate gate --include linux-ip4 --variable PREFIX:dpg1-
    dpgate gate --history /ci-cache/dpgate-history --commit $CI_COMMIT_SHA
    dpgate gate --sut-cpu-steal 10 --no-history-add     # fault injection: a 10 % slower SUT
    dpgate gate --topology topologies/lab-local.yaml suites/lab --include "64B AND 1T1C"   # lab on one machine

A lab topology runs the lab suites against it; a lab on one machine (TG and DUT namespaces,
``topologies/lab-local.yaml``) is brought up for the run, with TRex in its TG namespace, and
removed afterwards, also after a failure or an interrupt (``dpgate.testbeds.lab.session``).

Each run starts from a clean ``<outdir>/dpgate`` (records of an earlier run into the same
directory would otherwise reappear in this run's JUnit). With a history store (default
``<outdir>/history``; ``--no-history`` for none) every test also checks its NDR, PDR and
MRR against the history of the same test and testbed (``dpgate compare`` rules) and fails
on a regression; after the run its passing tests are added to the store (not with
``--no-history-add``, and never runs with injected faults).

The gate owns its output directory and its testbed's namespace prefix for its whole life
(``dpgate.exec.lock``): a second gate into the same ``--outdir`` is refused at once naming
the holder; one on a busy testbed waits up to ``--wait-testbed`` (default 10m). Robot, the
gate's child, inherits the testbed lock (``DPGATE_LOCKS_HELD`` and the lock's open file).

Exit codes: 0 all gates passed (skips allowed), 1 a gate failed or a test errored,
2 bad input, 3 environment problem, 130/143 interrupted (results and JUnit still written).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import shutil
import signal
import subprocess
import sys
from typing import List, Optional

from dpgate.cli.argtypes import hours, percent
from dpgate.cli.gate_summary import history_summary, paired_summary, summary_table
from dpgate.cli.trial import (
    add_binary_option,
    add_generator_option,
    add_wait_option,
    binaries_of,
    check_binary_options,
)
from dpgate.config.binaries import joined
from dpgate.config.machineclass import (
    check_thresholds,
    class_speed,
    parse_machine_class,
    resolve_thresholds,
)
from dpgate.config.thresholds import load_thresholds
from dpgate.config.topology import Topology, load_topology
from dpgate.exec.lock import FileLock, hold_testbed, inherit, outdir_lock
from dpgate.model.errors import ConfigError
from dpgate.model.record import F
from dpgate.outputs.exporters import write_csv, write_openmetrics
from dpgate.outputs.junit import write_junit
from dpgate.outputs.results import load_records
from dpgate.regression.history import add_to_history
from dpgate.testbeds.embedded.testbed import check_environment
from dpgate.testbeds.embedded.twin import twin_prefix
from dpgate.testbeds.lab.session import is_local_lab, local_lab_session
from dpgate.traffic.choice import generator_kind

PROFILES = ("per-commit", "sign-off", "rfc2544-binary")


def add_parser(sub) -> None:
    g = sub.add_parser("gate", help="run the gate suites and exit non-zero iff a gate failed")
    g.add_argument(
        "suites", nargs="*", default=["suites/embedded"], help="suite files/dirs (default suites/embedded)"
    )
    g.add_argument("--outdir", default="results", help="output directory (default results/)")
    g.add_argument("--profile", default="per-commit", choices=PROFILES, help="search profile")
    g.add_argument("--thresholds", default=None, help="thresholds file (default variables/embedded.yaml)")
    g.add_argument("--topology", default=None, help="topology file (default topologies/embedded.yaml)")
    g.add_argument(
        "--prefix", default=None, help="namespace prefix of the embedded testbed or lab on one machine"
    )
    g.add_argument("--telemetry-policy", default="skip", choices=("skip", "fail"))
    g.add_argument("--include", action="append", default=[], help="only tests with this tag (repeatable)")
    g.add_argument("--exclude", action="append", default=[], help="skip tests with this tag (repeatable)")
    g.add_argument("--variable", action="append", default=[], help="extra Robot variable NAME:VALUE")
    g.add_argument("--junit", default=None, help="JUnit path (default <outdir>/junit.xml)")
    g.add_argument(
        "--history", default=None, help="history store for the regression check (default <outdir>/history)"
    )
    g.add_argument("--no-history", action="store_true", help="no regression check against history")
    g.add_argument(
        "--no-history-add", action="store_true", help="check against history but do not add this run"
    )
    g.add_argument(
        "--min-change",
        type=percent("--min-change"),
        default=3.0,
        help="smallest change in %% the regression check reports (default 3)",
    )
    g.add_argument(
        "--history-span",
        type=hours("--history-span"),
        default=24.0,
        help="hours a history's runs must span before their own scatter may allow less than the "
        "case's declared noise (default 24: runs back to back see one hour's scatter)",
    )
    g.add_argument(
        "--commit", default=None, help="commit under test (default: CI_COMMIT_SHA / GIT_COMMIT / GITHUB_SHA)"
    )
    g.add_argument(
        "--mrr-trials", type=int, default=None, help="MRR trials after each search (default 3; 0 = none)"
    )
    g.add_argument(
        "--inject-cost",
        type=percent("--inject-cost"),
        default=0.0,
        help="fault injection: make the SUT do this %% more work per packet (tc classic-BPF loads)",
    )
    g.add_argument(
        "--paired",
        action="store_true",
        help="embedded: also measure cpp_at_load against a baseline twin of the SUT beside it, "
        "trials alternating (gate cpp_paired_max_rise, default 5 %%; docs/embedded.md 'Paired check')",
    )
    g.add_argument(
        "--sut-cpu-steal",
        type=percent("--sut-cpu-steal"),
        default=0.0,
        help="fault injection: take this %% of the SUT core(s) away (shows the regression check works)",
    )
    g.add_argument(
        "--machine-class",
        type=_machine_class,
        default="auto",
        help="which of the thresholds file's machine_classes applies: auto (probe the cores before "
        "the run), base (the file as it is), a core speed in M it/s (a class naming this host's CPU "
        "still wins) or a class's file name, e.g. embedded-fast.yaml (that class, whatever the "
        "host) (default auto)",
    )
    add_generator_option(g)
    add_binary_option(g)
    add_binary_option(
        g, "--baseline-binary", "the paired check's baseline twin (a per-patch job: the parent's)"
    )
    add_wait_option(g)
    g.set_defaults(func=cmd_gate)


def _machine_class(value: str) -> str:
    try:
        parse_machine_class(value)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(err.reason) from None
    return value


def pick_machine_class(args) -> None:
    """Probe the cores for the thresholds' machine class now, before the testbed is up and
    once for the whole run, say which file applies, and hand the speed to Robot."""
    path = args.thresholds or "variables/embedded.yaml"
    if parse_machine_class(args.machine_class) is not None or not load_thresholds(path).machine_classes:
        return
    args.machine_class = f"{class_speed():.1f}"
    print(f"thresholds: {resolve_thresholds(path, args.machine_class, how='probed')[1]}", flush=True)


def history_dir(args) -> Optional[str]:
    if getattr(args, "no_history", False):
        return None
    return os.path.abspath(args.history or os.path.join(args.outdir, "history"))


def robot_argv(args) -> List[str]:
    junit = os.path.abspath(args.junit or os.path.join(args.outdir, "junit.xml"))
    argv = [
        sys.executable,
        "-m",
        "robot",
        "--outputdir",
        args.outdir,
        "--console",
        "quiet",
        "--listener",
        f"dpgate.listener.DpgateListener:{junit}",
        "--prerunmodifier",
        "dpgate.robotmods.CaseTags",
        "--variable",
        f"SEARCH_PROFILE:{args.profile}",
        "--variable",
        f"TELEMETRY_POLICY:{args.telemetry_policy}",
    ]
    if args.thresholds:
        argv += ["--variable", f"THRESHOLDS_FILE:{os.path.abspath(args.thresholds)}"]
    if getattr(args, "machine_class", "auto") != "auto":
        argv += ["--variable", f"MACHINE_CLASS:{args.machine_class}"]
    if args.topology:
        argv += ["--variable", f"TOPOLOGY:{os.path.abspath(args.topology)}"]
    if args.prefix:
        argv += ["--variable", f"PREFIX:{args.prefix}"]
    hist = history_dir(args)
    if hist:
        argv += ["--variable", f"HISTORY:{hist}", "--variable", f"MIN_CHANGE:{args.min_change:g}%"]
        argv += ["--variable", f"HISTORY_SPAN:{getattr(args, 'history_span', 24.0):g}h"]
    if getattr(args, "mrr_trials", None) is not None:
        if args.mrr_trials < 0:
            raise ConfigError(f"--mrr-trials must be >= 0, got {args.mrr_trials}", path="--mrr-trials")
        argv += ["--variable", f"MRR_TRIALS:{args.mrr_trials}"]
    if getattr(args, "sut_cpu_steal", 0):
        argv += ["--variable", f"SUT_CPU_STEAL:{args.sut_cpu_steal:g}%"]
    if getattr(args, "generator", "auto") != "auto":
        argv += ["--variable", f"GENERATOR:{args.generator}"]
    if getattr(args, "inject_cost", 0):
        argv += ["--variable", f"INJECT_COST:{args.inject_cost:g}%"]
    if getattr(args, "paired", False):
        argv += ["--variable", "PAIRED:True"]
    for attr, var in (("sut_binary", "SUT_BINARY"), ("baseline_binary", "BASELINE_BINARY")):
        if getattr(args, attr, None):
            argv += ["--variable", f"{var}:{joined(binaries_of(args, attr))}"]
    for tag in args.include:
        argv += ["--include", tag]
    for tag in args.exclude:
        argv += ["--exclude", tag]
    argv += list(getattr(args, "extra_robot", []))  # the lab session's defaults; the user's --variable wins
    for var in args.variable:
        if ":" not in var:
            raise ConfigError(f"--variable {var!r} must be NAME:VALUE", path="--variable")
        argv += ["--variable", var]
    return argv + list(args.suites)


def preflight(args) -> Topology:
    """Check the input and the machine; returns the topology."""
    for s in args.suites:
        if not os.path.exists(s):
            raise ConfigError(f"suite path {s!r} does not exist", path="suites")
    var_prefix = [v.split(":", 1)[1] for v in args.variable if v.startswith("PREFIX:")]
    topo = load_topology(
        args.topology or "topologies/embedded.yaml", args.prefix or (var_prefix or [None])[-1]
    )
    if args.thresholds is None and topo.kind != "embedded":
        args.thresholds = "variables/lab-local.yaml" if is_local_lab(topo) else "variables/lab-2n-skx.yaml"
    path = args.thresholds or "variables/embedded.yaml"
    check_thresholds(path)
    if isinstance(parse_machine_class(getattr(args, "machine_class", "auto")), str):  # listed?
        print(f"thresholds: {resolve_thresholds(path, args.machine_class)[1]}", flush=True)
    if getattr(args, "paired", False) and topo.kind != "embedded":
        raise ConfigError(
            "the paired check runs on the embedded testbed only (its twin is a second one)", path="--paired"
        )
    check_binary_options(args, topo.kind)
    if topo.kind == "embedded":
        if getattr(args, "paired", False):
            twin_prefix(topo.prefix)  # room for the twin's prefix
        check_environment()
        generator_kind(getattr(args, "generator", "auto"))  # --generator dpgen when it is not built
    return topo


def take_ownership(args, topo: Topology) -> List[FileLock]:
    """Lock the output directory (no wait) and the testbed's namespace prefix (``--wait-testbed``):
    the embedded testbed, or a lab built in namespaces on this machine (a real lab's DUT and
    TRex are locked by the lab keywords, ``dpgate.exec.nodelock`` and TRex's port ownership)."""
    locks = [outdir_lock(os.path.abspath(args.outdir)).acquire(wait=0, command="dpgate gate")]
    try:
        if topo.kind == "embedded" or any(getattr(n, "namespace", None) for n in topo.nodes.values()):
            locks.append(hold_testbed(topo.prefix, getattr(args, "wait_testbed", None), "dpgate gate"))
    except BaseException:
        locks[0].release()
        raise
    return locks


def fresh_outdir(outdir: str) -> None:
    """Remove the dpgate records of an earlier run into ``outdir`` (not its history)."""
    os.makedirs(outdir, exist_ok=True)
    old = os.path.join(outdir, "dpgate")
    if os.path.isdir(old):
        shutil.rmtree(old)


def cmd_gate(args) -> int:
    topo = preflight(args)
    locks = take_ownership(args, topo)
    try:
        pick_machine_class(args)
        with local_lab_session(args.topology or "topologies/embedded.yaml", args.prefix) as extra:
            args.extra_robot = extra
            return _run_gate(args, locks)
    finally:
        for lock in reversed(locks):
            lock.release()


def _run_gate(args, locks: List[FileLock]) -> int:
    fresh_outdir(args.outdir)
    junit = args.junit or os.path.join(args.outdir, "junit.xml")
    if args.commit:
        os.environ["DPGATE_COMMIT"] = args.commit
    # Robot runs in its own session: a signal sent to our whole process group (CI cancel)
    # reaches it once, through us. Robot treats a second signal as "stop now, skip
    # teardowns", so only the first one is forwarded at once; a repeated signal to us
    # is forwarded as the user's insistence. If we die, the kernel sends Robot SIGTERM.
    env = dict(os.environ)
    fds = inherit(env, *locks[1:])  # Robot's testbed set-up must not wait for its own parent
    proc = subprocess.Popen(
        robot_argv(args), start_new_session=True, preexec_fn=_die_with_parent, env=env, pass_fds=fds
    )
    interrupted: Optional[int] = None
    received = 0

    def forward(signum, frame):
        nonlocal interrupted, received
        interrupted = signum
        received += 1
        if received in (1, 3):
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                rc = proc.wait()
                break
            except InterruptedError:  # pragma: no cover
                continue
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    records = load_records(args.outdir)
    for rec in records:
        if rec.get(F.STATUS) in (None, "RUNNING"):
            rec[F.STATUS] = "ERROR"
            rec[F.MESSAGE] = "test did not finish (run interrupted)" if interrupted else "test did not finish"
    write_junit(records, junit)
    write_openmetrics(records, os.path.join(args.outdir, "metrics.txt"))
    write_csv(records, os.path.join(args.outdir, "results.csv"))
    print(summary_table(records))
    paired = paired_summary(records)
    if paired:
        print("\n" + paired)
    hist = history_dir(args)
    if hist:
        print("\n" + history_summary(records, hist))
        if not interrupted and not args.no_history_add:
            n = add_to_history(args.outdir, hist, args.commit, only_passed=True)
            print(
                f"history: added {n} passing test(s) of this run to {hist}"
                + (
                    " (runs with injected faults are never added)"
                    if getattr(args, "sut_cpu_steal", 0) or getattr(args, "inject_cost", 0)
                    else ""
                )
            )
    out = os.path.abspath(args.outdir)
    print(
        f"\nreport: {os.path.join(out, 'report.html')}\nlog:    {os.path.join(out, 'log.html')}\n"
        f"junit:  {os.path.abspath(junit)}\nmetrics: {os.path.join(out, 'metrics.txt')} (OpenMetrics), "
        f"{os.path.join(out, 'results.csv')}\nresults: {os.path.join(out, 'dpgate')}"
    )
    if interrupted:
        print(
            f"dpgate: interrupted by signal {interrupted}: finished tests kept, teardown ran", file=sys.stderr
        )
        return 128 + interrupted
    failed = [r for r in records if r.get(F.STATUS) not in ("PASS", "SKIP")]
    if rc == 252:
        raise ConfigError("robot rejected the arguments (see its message above)")
    if rc and not failed:
        return 1
    return 1 if failed else 0


def _die_with_parent() -> None:
    """In the Robot child: get SIGTERM when dpgate dies (Linux prctl PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):  # pragma: no cover - non-Linux
        pass
