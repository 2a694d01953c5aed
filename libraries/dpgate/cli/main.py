"""The ``dpgate`` command line: one module per subcommand, each with ``add_parser(sub)`` that
sets ``func``; :func:`main` parses, installs the signal handlers and maps errors to exit codes.

    dpgate trial --topology topologies/embedded.yaml --sut linux-ip4 --rate 50kpps \\
                 --duration 2 --frame-size 64 [--json]
    dpgate suts                      # list the embedded SUTs
    dpgate cleanup [--prefix dpg0-]  # remove leftovers of a killed run
    dpgate gate | compare | history | report   (see their modules)

Exit codes: 0 ok, 2 bad input, 3 environment problem, 4 trial/SUT failure, 130/143
interrupted (SIGINT/SIGTERM; teardown still ran).
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import List, Optional

from dpgate.cli import cleanup, compare, gate, history, report, suts, trial
from dpgate.config.units import UnitError
from dpgate.model.errors import ConfigError, DpgateError, EnvironmentProblem

EXIT_BAD_INPUT, EXIT_ENV, EXIT_TRIAL = 2, 3, 4
#: Subcommands in the order ``dpgate --help`` lists them.
SUBCOMMANDS = (trial, suts, cleanup, gate, compare, history, report)


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


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dpgate", description="Gate CI on data-plane performance.")
    sub = p.add_subparsers(dest="cmd", required=True)
    for module in SUBCOMMANDS:
        module.add_parser(sub)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    install_signal_handlers()
    try:
        return int(args.func(args))
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
