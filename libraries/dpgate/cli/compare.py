"""``dpgate compare results/ --history history/ [--min-change 3]``: every test's NDR, PDR and
MRR against its history (see :mod:`dpgate.regression.compare`); exit 1 on a regression."""

from __future__ import annotations

import argparse
import os
import sys

from dpgate.cli.argtypes import hours
from dpgate.model.errors import ConfigError
from dpgate.regression.compare import compare


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
    c.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    if not os.path.isdir(os.path.join(args.outdir, "dpgate", "tests")):
        raise ConfigError(
            f"{args.outdir!r} has no dpgate/tests/ results: pass the --outdir of a dpgate gate run",
            path="outdir",
        )
    verdicts = compare(args.outdir, args.history, args.min_change / 100.0, args.history_span)
    for v in verdicts:
        print(v.line())
    bad = [v for v in verdicts if v.verdict == "regression"]
    print(f"{len(bad)} regression(s) in {len(verdicts)} checks", file=sys.stderr)
    return 1 if bad else 0
