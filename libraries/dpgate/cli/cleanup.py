"""``dpgate cleanup [--prefix dpg0-] [--force]``: remove namespaces and processes left by a killed run.

A testbed a live run owns (``dpgate.exec.lock``) is refused with one error naming the owner,
unless ``--force`` (that run then fails).
"""

from __future__ import annotations

import argparse
import sys

from dpgate.exec.lock import Busy, live_testbeds, testbed_lock
from dpgate.testbeds.embedded.testbed import check_environment, cleanup_prefix


def add_parser(sub) -> None:
    c = sub.add_parser("cleanup", help="remove namespaces/processes left by a killed run")
    c.add_argument("--prefix", default="dpg")
    c.add_argument(
        "--force", action="store_true", help="also remove testbeds a live run owns (that run will fail)"
    )
    c.set_defaults(func=cmd_cleanup)


def cmd_cleanup(args: argparse.Namespace) -> int:
    check_environment(tools=("ip",))
    live = live_testbeds(args.prefix)
    if live and not args.force:
        name, owner = live[0]
        raise Busy(
            f"testbed {name} is in use by {owner.describe()}: not cleaning it up; wait for that run "
            f"to end, or pass --force to remove it anyway (that run will fail)",
            owner,
        )
    for name, owner in live:
        print(f"dpgate: --force: removing testbed {name} of the live run pid {owner.pid}", file=sys.stderr)
    lock = None if live else testbed_lock(args.prefix).acquire(wait=0, command="dpgate cleanup")
    try:
        removed = cleanup_prefix(args.prefix)
    finally:
        if lock is not None:
            lock.release()
    print("removed: " + (", ".join(removed) if removed else "nothing"))
    return 0
