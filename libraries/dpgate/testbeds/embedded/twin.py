"""A baseline twin of the embedded SUT, up beside it, for paired trials (:mod:`dpgate.telemetry.paired`).

The twin is a second :class:`~dpgate.testbeds.embedded.session.EmbeddedSession` of the same
NF: its own namespaces (the case's prefix + ``b``, so ``dpgate cleanup --prefix`` of the
case's prefix removes it too), veths, generator and SUT process, on the same TG and SUT
cores, without the faults injected into the SUT under test, running the installed programs
or the builds it is given (a per-patch job: the parent commit's). Trials alternate between the
two; while one side measures, the other's SUT processes are stopped (``SIGSTOP``) when it
busy-polls, so that it does not take half of the core the measured side runs on; a kernel
SUT without traffic uses no CPU and needs nothing. A CPU stealer injected into the SUT under
test (``--sut-cpu-steal``) belongs to that SUT and is stopped during the baseline's trials.

    with BaselineTwin("topologies/embedded.yaml", "testpmd-mac", "dpg0-") as twin:
        pairs = measure_pairs(gen, twin.generator(profile), load, 8)
"""

from __future__ import annotations

import contextlib
import signal
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from dpgate.exec.stopped import signal_all, stopped
from dpgate.model.errors import ConfigError
from dpgate.telemetry.cppload import cpp_conditions
from dpgate.telemetry.cpuacct import pids_in_netns
from dpgate.telemetry.paired import abba_order, same_placement
from dpgate.telemetry.placement import same_speed
from dpgate.testbeds.embedded.session import EmbeddedSession

#: After a stopped poll loop resumes: time for it to spin up before traffic starts.
RESUME_SETTLE_S = 0.3


def twin_prefix(prefix: str) -> str:
    """The twin's namespace prefix: the case's with ``b`` added (at most 10 characters).

    >>> twin_prefix("dpg0-"), twin_prefix("sg0-")
    ('dpg0-b', 'sg0-b')
    >>> twin_prefix("abcdefghij")
    Traceback (most recent call last):
    ...
    dpgate.model.errors.ConfigError: prefix: 'abcdefghij' leaves no room for the baseline twin's prefix (at most 9 characters with a paired check)
    """
    if len(prefix) >= 10:
        raise ConfigError(
            f"{prefix!r} leaves no room for the baseline twin's prefix (at most 9 characters with a paired check)",
            path="prefix",
        )
    return prefix + "b"


class BaselineTwin:
    """The baseline SUT beside the one under test; ``up()`` starts it, ``down()`` removes it."""

    def __init__(
        self,
        topology: str,
        nf: str,
        prefix: str,
        generator: Optional[str] = None,
        on_trial: Optional[Callable[[Any], None]] = None,
        binaries: Optional[Dict[str, str]] = None,
    ):
        """``binaries``: the baseline's builds (:mod:`dpgate.config.binaries`), e.g. the parent
        commit's testpmd in a per-patch job; without, the installed programs."""
        self.session = EmbeddedSession(
            topology, nf, prefix=twin_prefix(prefix), calibrate=False, generator=generator, binaries=binaries
        )
        self.generators: Dict[str, Any] = {}
        #: where each of the twin's trials goes as it ends, marked ``details.paired_side: baseline``
        self.on_trial = on_trial

    def _tagged(self, trial: Any) -> None:
        trial.details["paired_side"] = "baseline"
        if self.on_trial is not None:
            self.on_trial(trial)

    def up(self) -> BaselineTwin:
        self.session.up()
        return self

    def generator(self, tag: str, profile) -> Any:
        """The twin's generator for a frame size (``tag``), made on first use."""
        if tag not in self.generators:
            gen = self.session.new_generator(profile, on_trial=self._tagged)
            gen.sut = self.session.sut
            self.generators[tag] = gen
        return self.generators[tag]

    def down(self) -> None:
        gens, self.generators = self.generators, {}
        try:
            for gen in gens.values():
                gen.close()
        finally:
            self.session.down()

    def __enter__(self) -> BaselineTwin:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()


def sut_pids(gen: Any, polling: bool, keep: Sequence[int] = ()) -> List[int]:
    """What to stop while the other side measures: the processes counted as ``gen``'s SUT's
    (an injected stealer), the loops holding its SUT core awake (``awake_pids``) but those
    both sides share (``keep``) and, for a SUT that busy-polls, the processes in its namespace."""
    pids = (
        (pids_in_netns(gen.sut.ns) if polling else [])
        + list(getattr(gen, "extra_sut_pids", []) or [])
        + list(getattr(gen, "awake_pids", []) or [])
    )
    return [p for p in pids if p not in keep]


@contextlib.contextmanager
def one_side(other: Any, polling: bool, keep: Sequence[int] = ()) -> Iterator[None]:
    """One side measures: ``other``'s SUT stopped meanwhile (:func:`sut_pids`), and seen
    stopped in /proc before traffic starts."""
    with stopped(sut_pids(other, polling, keep)):
        yield


@contextlib.contextmanager
def shared_awake(owner: Any, borrower: Any) -> Iterator[List[int]]:
    """``borrower``'s trials use ``owner``'s SUT-core awake loop (``borrow_sut_awake``), so
    both sides' ``sut_core_speed`` is read by one process; yields the shared pids (none: a
    generator without the method, or nothing held)."""
    borrow = getattr(borrower, "borrow_sut_awake", None)
    if borrow is None:
        yield []
        return
    with borrow(owner) as pids:
        yield list(pids)


def measure_pairs(
    sut_gen: Any,
    base_gen: Any,
    load: float,
    pairs: int,
    duration: float = 2.0,
    polling: bool = False,
    speeds_alike: bool = False,
) -> List[Tuple[Any, Any]]:
    """``pairs`` (baseline trial, SUT trial) at ``load`` pps, in :func:`abba_order`, each
    trial under the conditions of a ``cpp_at_load`` trial (:func:`cpp_conditions`: held
    awake, moderated, a disturbed trial measured again). A pair whose two trials the host ran
    with the cores placed differently (or moved them during one: ``same_placement``) is
    measured again, up to ``pairs`` more: all pairs come back, in time order, and the caller
    leaves those out (on the Zen 3 host, flipping every 1-10 s, one pair in 3-4); with
    ``speeds_alike`` (a polling SUT's cycles), so is one whose trials ran at different core
    speeds (``same_speed``).

    Both sides' conditions are set once for the whole phase, not per trial: each side's
    moderation is on its own ports, and one awake loop, the SUT's, holds the SUT core for
    both sides (:func:`shared_awake`): it also reads the core's speed each trial is scaled
    by, and two loops read one core differently for a whole phase. Setting them per trial
    (a Python child started, eight sysfs writes through ``ip netns exec``) cost 50-75 ms
    between trials on the Zen 3 host."""
    gens = {"base": base_gen, "sut": sut_gen}
    out: List[Tuple[Any, Any]] = []
    last, kept = None, 0
    everything: List[int] = []
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(cpp_conditions(sut_gen, load, polling))
            shared = held.enter_context(shared_awake(sut_gen, base_gen))  # one loop for both sides
            held.enter_context(cpp_conditions(base_gen, load, polling))
            everything = sut_pids(sut_gen, polling) + sut_pids(base_gen, polling, shared)
            for i in range(2 * pairs):
                if kept >= pairs:
                    break
                got: Dict[str, Any] = {}
                for side in abba_order(i + 1)[2 * i :]:
                    me, other = gens[side], gens["sut" if side == "base" else "base"]
                    with one_side(other, polling, shared):
                        if polling and side != last:  # this side's poll loop was stopped until now
                            time.sleep(RESUME_SETTLE_S)
                        last = side
                        got[side] = me.measure(load, duration)
                out.append((got["base"], got["sut"]))
                alike = same_placement(got["base"], got["sut"])
                kept += alike and (not speeds_alike or same_speed(got["base"], got["sut"]))
        finally:
            signal_all(everything, signal.SIGCONT)  # whatever happened, nothing stays stopped
    return out
