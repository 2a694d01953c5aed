"""``dpgate compare results/ --history history/ [--min-change 3]``: every test's NDR, PDR, MRR
and cycles against its history (see :mod:`dpgate.regression.compare`); exit 1 on a regression.
A regression whose trials others disturbed beyond ``--disturbance-max`` (default 10 %) is held
as inconclusive, as the gate holds it (``dpgate.robot.gates``)."""

from __future__ import annotations

import argparse
import os
import sys

from dpgate.cli.argtypes import hours
from dpgate.config.units import parse_ratio
from dpgate.model.errors import ConfigError
from dpgate.outputs.results import load_records
from dpgate.regression.compare import held_reason, verdicts_for
from dpgate.telemetry.disturbance import DISTURBANCE_MAX


def add_parser(sub) -> None:
    c = sub.add_parser("compare", help="compare a run with the history of the same tests (jumpavg)")
    c.add_argument("outdir", help="output directory of the run (with dpgate/tests/)")
    c.add_argument("--history", required=True, help="history store directory")
    c.add_argument("--min-change", type=float, default=3.0, help="minimum relative change in %% (default 3)")
    c.add_argument(
        "--history-span",
        type=hours("--history-span"),
        default=None,
        help="hours the history's runs must span before their own scatter may allow less than the "
        "declared noise (default: the run's recorded regression_history_span_h, else 24)",
    )
    c.add_argument(
        "--disturbance-max",
        default=f"{DISTURBANCE_MAX:.0%}",
        help="hold a regression as inconclusive when others took more than this share of a TG/SUT "
        "core in the trials it rests on (default %(default)s, the gate's)",
    )
    c.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    if not os.path.isdir(os.path.join(args.outdir, "dpgate", "tests")):
        raise ConfigError(
            f"{args.outdir!r} has no dpgate/tests/ results: pass the --outdir of a dpgate gate run",
            path="outdir",
        )
    dmax = parse_ratio(args.disturbance_max, "--disturbance-max", upper_inclusive=True)
    n, bad, held = 0, 0, 0
    for rec in load_records(args.outdir):
        for v in verdicts_for(rec, args.history, args.min_change / 100.0, history_span_h=args.history_span):
            n += 1
            why = held_reason(rec.get("metrics", {}), v, dmax)
            if why:
                held += 1
                print(f"{v.line()} (inconclusive: {why})")
                continue
            bad += v.verdict == "regression"
            print(v.line())
    print(f"{bad} regression(s) in {n} checks, {held} held as disturbed", file=sys.stderr)
    return 1 if bad else 0
