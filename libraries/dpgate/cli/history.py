"""``dpgate history add results/ --store history/ [--commit SHA]``: append a run's tests to the
history store (see :mod:`dpgate.regression.history`)."""

from __future__ import annotations

import argparse

from dpgate.regression.history import add_to_history


def add_parser(sub) -> None:
    h = sub.add_parser("history", help="history store: 'add' a run's results")
    h.add_argument("action", choices=("add",))
    h.add_argument("outdir")
    h.add_argument("--store", required=True)
    h.add_argument("--commit", default=None)
    h.set_defaults(func=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    n = add_to_history(args.outdir, args.store, args.commit)
    print(f"added {n} test result(s) to {args.store}")
    return 0
