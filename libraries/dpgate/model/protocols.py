"""The seams between layers, as typing Protocols: what a node, a traffic generator, a SUT
and a port must offer. Any object with these members fits (no base class to inherit), so
a unit test's recording fake fits too, and mypy checks the callers against the seam.

A generator written against :class:`TrafficGenerator`::

    class MyGenerator:
        max_pps: Optional[float] = 10e6              # the ceiling the search may ask for
        def measure(self, load_pps: float, duration_s: float) -> TrialResult:
            tx, rx = self._send(load_pps, duration_s)
            return TrialResult.from_counts(load_pps, duration_s, tx_packets=tx, rx_packets=rx)
        def close(self) -> None:
            self._release_ports()

>>> from dpgate.exec.remote import LocalNode
>>> isinstance(LocalNode(), Node)
True
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, runtime_checkable

from dpgate.model.trial import TrialResult

#: One trial: ``measure(load_pps, duration_s)`` (a :class:`TrafficGenerator`'s ``measure``).
Measure = Callable[[float, float], TrialResult]


@runtime_checkable
class CommandResult(Protocol):
    """The outcome of one command (:class:`dpgate.exec.remote.Result`)."""

    @property
    def argv(self) -> List[str]: ...

    @property
    def returncode(self) -> int: ...

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...


@runtime_checkable
class Node(Protocol):
    """Runs argv lists (never shell strings) on a machine: this one, a namespace, a lab DUT over SSH."""

    @property
    def name(self) -> str: ...

    def run(
        self,
        argv: Sequence[str],
        timeout: float = ...,
        check: bool = ...,
        sudo: Optional[bool] = ...,
        input: Optional[str] = ...,
    ) -> CommandResult: ...


@runtime_checkable
class TrafficGenerator(Protocol):
    """Sends traffic at a load for a duration and counts what came back; the search's only seam."""

    @property
    def max_pps(self) -> Optional[float]: ...

    def measure(self, load_pps: float, duration_s: float) -> TrialResult: ...

    def close(self) -> None: ...


@runtime_checkable
class Sut(Protocol):
    """A system under test: a data plane started on its cores, with counters and a version."""

    def start(self) -> Any: ...

    def stop(self) -> None: ...

    def version(self) -> str: ...

    def stats(self) -> Dict[str, Any]: ...


@runtime_checkable
class Port(Protocol):
    """One interface of a testbed node, as the topology declares it."""

    @property
    def name(self) -> str: ...
