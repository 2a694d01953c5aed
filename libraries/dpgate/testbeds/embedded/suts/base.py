"""What every embedded SUT provides, and the registry of SUT names."""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING, Dict, List, Optional, Type

from dpgate.exec.runner import tail
from dpgate.model.errors import ConfigError, SutError

if TYPE_CHECKING:  # pragma: no cover
    from dpgate.testbeds.embedded.testbed import NamespaceTestbed


class EmbeddedSut:
    """Base class: configure, start pinned to the SUT core, check readiness, stop.

    Subclasses set ``name``, ``traffic`` ("l2" or "ip4") and implement ``_start``/``_stop``/
    ``ready``. ``stats()`` returns SUT-side counters (drops, cycles) to attribute loss.
    """

    name = "base"
    traffic = "l2"
    description = ""
    #: True when the SUT's own process can die (kernel SUTs cannot).
    has_process = False
    #: True when the SUT busy-polls its core (its CPU time is 100 % at any load, so
    #: cpp_at_load must come from its own busy-cycle counters)
    polls = False
    #: Quiet time (s) after which a lossy trial's late frames are given up for lost
    #: (``dpgate.traffic.steps``); None: the generator's (``SETTLE_S``, 20 ms). A SUT sets a
    #: shorter one only where the last late frame of every recorded trial came well inside it
    #: (each trial's ``settle_ms``), and the next trial counts any that still came after it
    #: (``late_after_last_settle``).
    settle_s: Optional[float] = None

    def __init__(self, testbed: NamespaceTestbed, flows: Optional[int] = None):
        self.tb = testbed
        self.flows = flows
        self.started = False
        self.log_path = os.path.join(testbed.workdir, f"{self.name}.log")

    @property
    def ns(self) -> str:
        return self.tb.sut_ns

    @property
    def cpus(self) -> List[int]:
        return self.tb.sut_cpus

    def ports(self):
        return [s for _, s in self.tb.topology.pairs()]

    def tg_ports(self):
        return [t for t, _ in self.tb.topology.pairs()]

    def start(self) -> EmbeddedSut:
        try:
            self._start()
            self.tb.pin_napi_threads()
            self.wait_ready()
        except Exception:
            self.stop()
            raise
        self.started = True
        return self

    def wait_ready(self, timeout: float = 20.0) -> None:
        import time

        end = time.monotonic() + timeout
        problem: Optional[str] = "not checked"
        while time.monotonic() < end:
            problem = self.ready()
            if problem is None:
                return
            if self.has_process and not self.alive():
                break
            time.sleep(0.2)
        raise SutError(f"SUT {self.name} not ready: {problem}\n--- last log lines ---\n{self.last_log()}")

    def stop(self) -> None:
        try:
            self._stop()
        finally:
            self.started = False

    def check_alive(self) -> None:
        """Raise SutError with the SUT's last log lines if its process died."""
        if self.has_process and not self.alive():
            raise SutError(
                f"SUT {self.name} is not running any more ({self.exit_status()})\n"
                f"--- last log lines of {self.log_path} ---\n{self.last_log()}"
            )

    #: The SUT's main process (a subprocess.Popen) when ``has_process``.
    proc: Optional[subprocess.Popen] = None

    def alive(self) -> bool:
        if not self.has_process:
            return True
        return self.proc is not None and self.proc.poll() is None

    def exit_status(self) -> str:
        if self.proc is None:
            return "never started"
        code = self.proc.poll()
        return f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"

    def ready(self) -> Optional[str]:
        """None when ready, else what is missing."""
        return None

    def stats(self) -> Dict[str, float]:
        return {"sut_drops": self.tb.packet_socket_drops()}

    def trial_begin(self) -> None:
        """Called just before traffic starts (e.g. reset SUT-side per-trial counters)."""

    def trial_end(self, rx_packets: int) -> Dict[str, float]:
        """Called after traffic stopped; returns per-trial SUT metrics (cycles per packet...)."""
        return {}

    def version(self) -> str:
        return "linux " + os.uname().release

    def last_log(self, lines: int = 15) -> str:
        return tail(self.log_path, lines)

    def _start(self) -> None:
        raise NotImplementedError

    def _stop(self) -> None:
        pass


_REGISTRY: Dict[str, Type[EmbeddedSut]] = {}


def register(cls: Type[EmbeddedSut]) -> Type[EmbeddedSut]:
    _REGISTRY[cls.name] = cls
    return cls


def sut_names() -> List[str]:
    _load_all()
    return sorted(_REGISTRY)


def sut_class(name: str) -> Type[EmbeddedSut]:
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(
            f"unknown NF/SUT {name!r}; accepted: {', '.join(sorted(_REGISTRY))}", path="sut"
        ) from None


def _load_all() -> None:
    import importlib

    for mod in ("linux", "ovs", "testpmd", "labnfs"):
        try:
            importlib.import_module(f"{__package__}.{mod}")
        except ModuleNotFoundError as err:
            if err.name != f"{__package__}.{mod}":
                raise
    # noqa: F401  (registration side effect, at call time)
