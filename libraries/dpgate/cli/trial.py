"""``dpgate trial``: bring up the embedded testbed, run one trial, tear down.

    dpgate trial --topology topologies/embedded.yaml --sut linux-ip4 --rate 50kpps \\
                 --duration 2 --frame-size 64 [--json]

``dpgate trial`` and its JSON keys (the TrialResult field names) are public: stable.

The trial owns its testbed for its whole life (``dpgate.exec.lock``): a second run on the same
prefix waits up to ``--wait-testbed`` (default 10m) with a progress line every 30 s, then
fails with one error naming the holder.
"""

from __future__ import annotations

import argparse
import json
from typing import Callable, Dict, Optional

from dpgate.config.binaries import parse_binaries
from dpgate.config.units import FrameSize, Rate, UnitError, format_pps, parse_frame_size, parse_rate
from dpgate.exec.lock import hold_testbed, parse_wait
from dpgate.model.errors import ConfigError
from dpgate.model.trial import TrialResult
from dpgate.testbeds.embedded.session import EmbeddedSession


def _positive_float(what: str) -> Callable[[str], float]:
    def conv(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number of seconds, got {text!r}") from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{what} must be > 0, got {text!r}")
        return v

    return conv


def _frame_size(text: str) -> FrameSize:
    try:
        return parse_frame_size(text)
    except UnitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _rate(text: str) -> Rate:
    try:
        return parse_rate(text)
    except UnitError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _wait(text: str) -> float:
    try:
        return parse_wait(text)
    except ConfigError as err:
        raise argparse.ArgumentTypeError(err.reason) from None


def add_wait_option(parser: argparse.ArgumentParser) -> None:
    """``--wait-testbed DURATION`` (trial, gate): how long to wait for a testbed another run owns."""
    parser.add_argument(
        "--wait-testbed",
        type=_wait,
        default="10m",
        metavar="DURATION",
        help="wait this long for a testbed another run owns, e.g. 90s, 10m, 0 (default 10m)",
    )


def add_generator_option(parser: argparse.ArgumentParser) -> None:
    """``--generator`` (trial, gate): the embedded traffic generator."""
    parser.add_argument(
        "--generator",
        choices=("auto", "dpgen", "tcpreplay"),
        default="auto",
        help="embedded traffic generator (default auto: dpgen when build/dpgen/dpgen is built, else tcpreplay)",
    )


def add_binary_option(
    parser: argparse.ArgumentParser, flag: str = "--sut-binary", whose: str = "the SUT"
) -> None:
    """``--sut-binary`` (trial, gate), ``--baseline-binary`` (gate): a build instead of the
    installed program, ``NAME=PATH`` (:mod:`dpgate.config.binaries`), repeatable."""
    parser.add_argument(
        flag,
        action="append",
        default=[],
        metavar="NAME=PATH",
        help=f"the build {whose} runs instead of the installed program, e.g. "
        "dpdk-testpmd=/build/app/dpdk-testpmd (dpdk-testpmd, dpdk-l3fwd; repeatable)",
    )


def binaries_of(args: argparse.Namespace, attr: str = "sut_binary") -> Dict[str, str]:
    """The checked builds of ``--sut-binary`` (``attr``) as {program: path}."""
    return parse_binaries(",".join(getattr(args, attr, None) or []), "--" + attr.replace("_", "-"))


def check_binary_options(args: argparse.Namespace, topology_kind: str) -> None:
    """``dpgate gate``'s builds, checked before any suite runs."""
    if getattr(args, "baseline_binary", None) and not getattr(args, "paired", False):
        raise ConfigError(
            "the baseline twin runs in the paired check only: add --paired", path="--baseline-binary"
        )
    if (
        getattr(args, "sut_binary", None) or getattr(args, "baseline_binary", None)
    ) and topology_kind != "embedded":
        raise ConfigError("a lab SUT's build is set on its DUT, not here", path="--sut-binary")
    for attr in ("sut_binary", "baseline_binary"):
        binaries_of(args, attr)  # raises naming the option


def add_parser(sub) -> None:
    t = sub.add_parser("trial", help="bring up the embedded testbed, run one trial, tear down")
    t.add_argument("--topology", default="topologies/embedded.yaml")
    t.add_argument("--sut", required=True, help="embedded SUT (see 'dpgate suts')")
    t.add_argument("--rate", required=True, type=_rate, help="e.g. 50kpps, 0.2Mpps, 200000, 50%% (of max)")
    t.add_argument("--duration", type=_positive_float("--duration"), default=2.0, help="seconds (default 2)")
    t.add_argument("--frame-size", type=_frame_size, default=64, help="64..9216 or IMIX (default 64)")
    t.add_argument(
        "--flows", type=int, default=None, help="flows per direction (default 3125 L2 / 62500 IPv4)"
    )
    t.add_argument("--bidirectional", action="store_true")
    t.add_argument("--prefix", default=None, help="namespace prefix (default: the topology's)")
    t.add_argument("--no-calibrate", action="store_true", help="skip measuring the generator ceiling")
    add_generator_option(t)
    add_binary_option(t)
    t.add_argument("--json", action="store_true", help="print one JSON object (TrialResult fields)")
    add_wait_option(t)
    t.set_defaults(func=cmd_trial)


def cmd_trial(args: argparse.Namespace) -> int:
    session = EmbeddedSession(
        args.topology,
        args.sut,
        frame_size=args.frame_size,
        flows=args.flows,
        bidirectional=args.bidirectional,
        prefix=args.prefix,
        calibrate=not args.no_calibrate or args.rate.percent is not None,
        generator=args.generator,
        binaries=binaries_of(args),
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


def format_trial(r: TrialResult, max_pps: Optional[float], sut: str) -> str:
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
    if r.sut_cpu_cycles_per_packet is not None:
        lines.append(f"  SUT own CPU cycles/packet {r.sut_cpu_cycles_per_packet:.1f}")
    if r.disturbance is not None:
        lines.append(
            f"  disturbance {r.disturbance * 100:.1f} % of a TG/SUT core used by other work or a slow host"
        )
    speeds = (r.details or {}).get("core_speeds")
    if speeds:
        lines.append(
            "  core speed (M it/s) " + ", ".join(f"CPU {c}: {v:.1f}" for c, v in sorted(speeds.items()))
        )
    gen = (r.details or {}).get("generator")
    if max_pps:
        lines.append(f"  generator ceiling {format_pps(max_pps)}" + (f" ({gen})" if gen else ""))
    elif gen:
        lines.append(f"  generator {gen}")
    return "\n".join(lines)
