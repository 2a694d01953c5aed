"""``dpgate report results/ [--baseline old/] [--history history/]``: the static HTML sign-off
report with PNG plots (see :mod:`dpgate.outputs.report`)."""

from __future__ import annotations

import argparse
import os

from dpgate.outputs.report import build_report


def add_parser(sub) -> None:
    r = sub.add_parser("report", help="static HTML sign-off report with PNG plots")
    r.add_argument("outdir", help="output directory of a run (with dpgate/tests/)")
    r.add_argument(
        "--baseline", default=None, help="output directory of the baseline run (e.g. last release)"
    )
    r.add_argument("--history", default=None, help="history store: adds the regression verdict of each test")
    r.add_argument("--out", default=None, help="report directory (default <outdir>/signoff)")
    r.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    path = build_report(
        args.outdir, args.out or os.path.join(args.outdir, "signoff"), args.baseline, args.history
    )
    print(f"report: {os.path.abspath(path)}")
    return 0
