"""``dpgate suts``: list the embedded SUT drivers."""

from __future__ import annotations

import argparse

from dpgate.testbeds.embedded.suts.base import sut_class, sut_names


def add_parser(sub) -> None:
    sub.add_parser("suts", help="list the embedded SUTs").set_defaults(func=cmd_suts)


def cmd_suts(args: argparse.Namespace) -> int:
    for name in sut_names():
        cls = sut_class(name)
        print(f"{name:16s} {cls.traffic:4s} {cls.description}")
    return 0
