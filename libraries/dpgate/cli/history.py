"""``dpgate history add results/ --store history/ [--commit SHA]``: append a run's tests to the
history store (see :mod:`dpgate.regression.history`).

``dpgate history replay history/ [--span 24 --span 6] [--against results-injected/]``: judge
the stored runs again in order with other ``--history-span`` values, to pick the span a host's
own runs allow (see :mod:`dpgate.regression.replay`)."""

from __future__ import annotations

import argparse
import os
from typing import Dict, List

from dpgate.cli.argtypes import hours
from dpgate.config.machineclass import resolve_thresholds
from dpgate.config.units import parse_ratio
from dpgate.model.errors import ConfigError
from dpgate.outputs.results import load_records
from dpgate.regression.history import DECLARED, add_to_history
from dpgate.regression.replay import Noises, replay


def add_parser(sub) -> None:
    h = sub.add_parser("history", help="history store: 'add' a run's results, 'replay' it with other spans")
    h.add_argument("action", choices=("add", "replay"))
    h.add_argument("path", metavar="outdir|store", help="add: the run's --outdir; replay: the history store")
    h.add_argument("--store", help="add: the history store to append to")
    h.add_argument("--commit", default=None)
    h.add_argument(
        "--span",
        action="append",
        type=hours("--span"),
        help="replay: a --history-span to judge with, in hours (repeat it; default 24, 12, 6 and 4)",
    )
    h.add_argument(
        "--against",
        action="append",
        default=[],
        metavar="OUTDIR",
        help="replay: also judge this run's results (e.g. a --inject-cost run) against the stored runs before it",
    )
    h.add_argument(
        "--min-change", type=float, default=3.0, help="replay: minimum relative change in %% (default 3)"
    )
    h.add_argument(
        "--thresholds",
        default=None,
        help="replay: thresholds file for entries stored before runs kept their allowances",
    )
    h.add_argument(
        "--machine-class",
        default="base",
        help="replay: the --thresholds file's machine class the runs were judged by (its file name, "
        "as the gate's first line said, e.g. embedded-fast.yaml; default base)",
    )
    h.set_defaults(func=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    if args.action == "add":
        if not args.store:
            raise ConfigError("history add needs the store to append to: --store DIR", path="--store")
        n = add_to_history(args.path, args.store, args.commit)
        print(f"added {n} test result(s) to {args.store}")
        return 0
    return cmd_replay(args)


def _noises(path: str, machine_class: str) -> Noises:
    table, why = resolve_thresholds(path, machine_class)
    print(f"thresholds for entries without their own allowances: {why}")

    def noises(nf: str, frame: str) -> Dict[str, float]:
        row = table.lookup(nf, frame)
        out = {}
        for key in DECLARED:
            text = getattr(row, key.replace("regression_", ""), None)
            if text is not None:
                out[key] = parse_ratio(text, key, upper_inclusive=True)
        return out

    return noises


def cmd_replay(args: argparse.Namespace) -> int:
    if not os.path.isdir(args.path):
        raise ConfigError(
            f"{args.path!r} is not a history store directory (give the gate's --history)", path="store"
        )
    against: List[Dict] = []
    for outdir in args.against:
        if not os.path.isdir(os.path.join(outdir, "dpgate", "tests")):
            raise ConfigError(
                f"{outdir!r} has no dpgate/tests/ results: give a gate run's --outdir", path="--against"
            )
        against.extend(load_records(outdir))
    noises = _noises(args.thresholds, args.machine_class) if args.thresholds else None
    spans = args.span or [24.0, 12.0, 6.0, 4.0]
    results = replay(args.path, spans, args.min_change / 100.0, noises, against)
    if not any(own.judged for own, _ in results):
        print(f"{args.path}: no test has two stored runs yet; nothing to replay")
        return 0
    for own, other in results:
        print(own.line())
        for v in own.fails:
            print(f"  would FAIL: {v.line()}")
        if against:
            print("  " + other.line("--against runs", left_out=False))
            for v in other.fails:
                print(f"    FAIL: {v.line()}")
    print(
        "a FAIL of a stored run is one the gate passed: a span that gives any is shorter than this host's drift allows"
    )
    return 0
