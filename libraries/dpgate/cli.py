"""The ``dpgate`` command line.

    dpgate trial --topology topologies/embedded.yaml --sut linux-ip4 --rate 50kpps \\
                 --duration 2 --frame-size 64 [--json]
    dpgate suts                      # list the embedded SUTs
    dpgate cleanup [--prefix dpg0-] [--force]  # remove leftovers of a killed run

A run owns its testbed for its whole life (``dpgate.exec.lock``): a second run on the same
prefix waits up to ``--wait-testbed`` (default 10m) with a progress line every 30 s, then
fails with one error naming the holder; ``cleanup`` refuses a live owner's testbed unless
``--force``.

``dpgate trial`` and its JSON keys (the TrialResult field names) are public: stable.
Exit codes: 0 ok, 2 bad input, 3 environment problem, 4 trial/SUT failure, 130/143
interrupted (SIGINT/SIGTERM; teardown still ran).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import List, Optional

from .errors import ConfigError, DpgateError, EnvironmentProblem
from .units import UnitError, format_pps, parse_frame_size, parse_rate

EXIT_BAD_INPUT, EXIT_ENV, EXIT_TRIAL = 2, 3, 4


class Interrupted(BaseException):
    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"interrupted by signal {signum}")


def _raise_interrupted(signum, frame):  # pragma: no cover - signal path tested end to end
    raise Interrupted(signum)


def install_signal_handlers() -> None:
    """SIGTERM (CI cancel) and SIGINT unwind the stack, so every teardown runs."""
    signal.signal(signal.SIGTERM, _raise_interrupted)
    signal.signal(signal.SIGINT, _raise_interrupted)


def _positive_float(what: str):
    def conv(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number of seconds, got {text!r}") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{what} must be > 0, got {text!r}")
        return v

    return conv


def _frame_size(text: str):
    try:
        return parse_frame_size(text)
    except UnitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _rate(text: str):
    try:
        return parse_rate(text)
    except UnitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _wait(text: str) -> float:
    from .exec.lock import parse_wait

    try:
        return parse_wait(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(err.reason) from None


def add_wait_option(parser) -> None:
    parser.add_argument("--wait-testbed", type=_wait, default="10m", metavar="DURATION",
                        help="wait this long for a testbed another run owns, e.g. 90s, 10m, 0 (default 10m)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dpgate", description="Gate CI on data-plane performance.")
    sub = p.add_subparsers(dest="cmd", required=True)

    t = sub.add_parser("trial", help="bring up the embedded testbed, run one trial, tear down")
    t.add_argument("--topology", default="topologies/embedded.yaml")
    t.add_argument("--sut", required=True, help="embedded SUT (see 'dpgate suts')")
    t.add_argument("--rate", required=True, type=_rate, help="e.g. 50kpps, 0.2Mpps, 200000, 50%% (of max)")
    t.add_argument("--duration", type=_positive_float("--duration"), default=2.0, help="seconds (default 2)")
    t.add_argument("--frame-size", type=_frame_size, default=64, help="64..9216 or IMIX (default 64)")
    t.add_argument("--flows", type=int, default=None, help="flows per direction (default 3125 L2 / 62500 IPv4)")
    t.add_argument("--bidirectional", action="store_true")
    t.add_argument("--prefix", default=None, help="namespace prefix (default: the topology's)")
    t.add_argument("--no-calibrate", action="store_true", help="skip measuring the generator ceiling")
    t.add_argument("--json", action="store_true", help="print one JSON object (TrialResult fields)")
    add_wait_option(t)

    sub.add_parser("suts", help="list the embedded SUTs")

    c = sub.add_parser("cleanup", help="remove namespaces/processes left by a killed run")
    c.add_argument("--prefix", default="dpg")
    c.add_argument("--force", action="store_true",
                   help="also remove testbeds a live run owns (that run will fail)")

    from . import compare, gate, report

    gate.add_parser(sub)
    compare.add_parser(sub)
    report.add_parser(sub)
    return p


def cmd_trial(args) -> int:
    from .embedded import EmbeddedSession
    from .exec.lock import hold_testbed

    session = EmbeddedSession(
        args.topology, args.sut, frame_size=args.frame_size, flows=args.flows,
        bidirectional=args.bidirectional, prefix=args.prefix,
        calibrate=not args.no_calibrate or args.rate.percent is not None,
    )
    lock = hold_testbed(session.topology.prefix, args.wait_testbed, "dpgate trial")
    try:
        with session:
            load = args.rate.resolve(session.max_pps)
            result = session.measure(load, args.duration)
    finally:
        lock.release()
    if args.json:
        print(json.dumps(result.to_dict(), sort_keys=True))
    else:
        print(format_trial(result, session.max_pps, args.sut))
    return 0


def format_trial(r, max_pps: Optional[float], sut: str) -> str:
    lines = [
        f"SUT {sut}, frame {r.frame_size}, {r.intended_duration_s:g} s at {format_pps(r.intended_load_pps)}",
        f"  intended   {r.intended_packets:>12,d} packets",
        f"  sent (TG)  {r.tx_packets:>12,d}   shortfall {r.tg_shortfall:,d}"
        + (f" (limited by {r.limited_by})" if r.limited_by else ""),
        f"  received   {r.rx_packets:>12,d}   rx rate {format_pps(r.rx_rate_pps)}",
        f"  loss       {r.loss_packets:>12,d}   ratio {r.loss_ratio:.6f}",
        f"  SUT drops  {r.sut_drops if r.sut_drops is not None else 'n/a'}",
    ]
    if r.sut_cycles_per_packet is not None:
        lines.append(f"  SUT-reported cycles/packet {r.sut_cycles_per_packet:.1f}")
    if max_pps:
        lines.append(f"  generator ceiling {format_pps(max_pps)}")
    return "\n".join(lines)


def cmd_suts(args) -> int:
    from .suts.base import sut_class, sut_names

    for name in sut_names():
        cls = sut_class(name)
        print(f"{name:16s} {cls.traffic:4s} {cls.description}")
    return 0


def cmd_cleanup(args) -> int:
    from .exec.lock import Busy, live_testbeds, testbed_lock
    from .testbed import check_environment, cleanup_prefix

    check_environment(tools=("ip",))
    live = live_testbeds(args.prefix)
    if live and not args.force:
        name, owner = live[0]
        raise Busy(f"testbed {name} is in use by {owner.describe()}: not cleaning it up; wait for that run "
                   f"to end, or pass --force to remove it anyway (that run will fail)", owner)
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


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    install_signal_handlers()
    handler = {"trial": cmd_trial, "suts": cmd_suts, "cleanup": cmd_cleanup}.get(args.cmd)
    if handler is None:
        handler = args.func
    try:
        return handler(args)
    except (ConfigError, UnitError) as err:
        print(f"dpgate: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except EnvironmentProblem as err:
        print(f"dpgate: error: {err}", file=sys.stderr)
        return EXIT_ENV
    except DpgateError as err:
        print(f"dpgate: error: {err}", file=sys.stderr)
        return EXIT_TRIAL
    except Interrupted as intr:
        print(f"dpgate: interrupted by signal {intr.signum}; teardown done", file=sys.stderr)
        return 128 + intr.signum


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
