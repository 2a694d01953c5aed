"""``dpgate cleanup [--prefix dpg0-]``: remove namespaces and processes left by a killed run."""

from __future__ import annotations

import argparse

from dpgate.testbeds.embedded.testbed import check_environment, cleanup_prefix


def add_parser(sub) -> None:
    c = sub.add_parser("cleanup", help="remove namespaces/processes left by a killed run")
    c.add_argument("--prefix", default="dpg")
    c.set_defaults(func=cmd_cleanup)


def cmd_cleanup(args: argparse.Namespace) -> int:
    check_environment(tools=("ip",))
    removed = cleanup_prefix(args.prefix)
    print("removed: " + (", ".join(removed) if removed else "nothing"))
    return 0
