"""Error types. Every error a user can see names the thing that is wrong and how to fix it."""

from __future__ import annotations


class DpgateError(Exception):
    """Base of all dpgate errors; ``str(err)`` is the one-line message for the user."""

    #: Robot Framework shows the message alone, without the exception class name.
    ROBOT_SUPPRESS_NAME = True


class ConfigError(DpgateError):
    """Bad user input: a topology, variables file, keyword argument or command-line option.

    >>> str(ConfigError("expected an integer >= 0, got 'x'", source="topo.yaml", path="nodes.TG.cpus[0]"))
    "topo.yaml: nodes.TG.cpus[0]: expected an integer >= 0, got 'x'"
    """

    def __init__(self, message: str, source: str = "", path: str = ""):
        self.source, self.path, self.reason = source, path, message
        where = ": ".join(p for p in (source, path) if p)
        super().__init__(f"{where}: {message}" if where else message)


class EnvironmentProblem(DpgateError):
    """The machine lacks something: root, netns support, a tool, a package."""


class TrialError(DpgateError):
    """A trial could not be completed (generator died, SUT died, timeout)."""


class SutError(DpgateError):
    """A SUT failed to start, became unready, or died; the message carries its last log lines."""
