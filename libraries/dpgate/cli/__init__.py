"""The ``dpgate`` command line: one module per subcommand; :func:`main` dispatches."""

from dpgate.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
