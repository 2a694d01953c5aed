"""One embedded testbed session: testbed up, generator calibrated, SUT started, ``measure``.

Used by the ``dpgate`` command line and the Robot keyword libraries alike::

    with EmbeddedSession("topologies/embedded.yaml", sut="linux-ip4", frame_size=64) as s:
        result = s.measure(50_000, 2.0)
        s.max_pps          # the calibrated generator ceiling (the testbed's "line rate")
"""

from __future__ import annotations

from typing import Callable, Dict, Optional

from dpgate.config.topology import Topology, load_topology
from dpgate.exec.cpu import detect_cpu_hz
from dpgate.exec.hostcpu import cpu_facts
from dpgate.exec.remote import LocalNode
from dpgate.model.trial import TrialResult
from dpgate.testbeds.embedded.suts.base import EmbeddedSut, sut_class
from dpgate.testbeds.embedded.testbed import NamespaceTestbed
from dpgate.traffic.choice import generator_kind, generator_name, make_generator
from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trialflow import EmbeddedGenerator


class EmbeddedSession:
    def __init__(
        self,
        topology,
        sut: str,
        frame_size=64,
        flows: Optional[int] = None,
        bidirectional: bool = False,
        prefix: Optional[str] = None,
        calibrate: bool = True,
        on_trial: Optional[Callable[[TrialResult], None]] = None,
        generator: Optional[str] = None,
        binaries: Optional[Dict[str, str]] = None,
    ):
        self.topology: Topology = (
            topology if isinstance(topology, Topology) else load_topology(topology, prefix)
        )
        self.sut_cls = sut_class(sut)
        self.profile = make_profile(self.sut_cls.traffic, frame_size, flows, bidirectional)
        self.testbed = NamespaceTestbed(self.topology)
        #: "dpgen" or "tcpreplay": ``generator`` (the command line's), else the topology's TG
        #: ``generator``; "auto" (or neither) = dpgen when built
        declared = self.topology.tg.generator
        if generator in (None, "", "auto") and declared in ("dpgen", "tcpreplay"):
            generator = declared
        self.generator_kind = generator_kind(generator)
        self.generator: Optional[EmbeddedGenerator] = None
        self.sut: Optional[EmbeddedSut] = None
        self.do_calibrate = calibrate
        self.on_trial = on_trial
        #: builds to run instead of the installed programs (:mod:`dpgate.config.binaries`)
        self.binaries = dict(binaries or {})

    @property
    def max_pps(self) -> Optional[float]:
        return self.generator.max_pps if self.generator else None

    def up(self) -> EmbeddedSession:
        self.testbed.up()
        try:
            self.generator = self.new_generator(self.profile)
            if self.do_calibrate:
                self.generator.calibrate()
            self.generator.sut = self.start_sut(self.profile.effective_flows)
        except BaseException:
            self.down()
            raise
        return self

    def start_sut(self, flows: Optional[int]) -> EmbeddedSut:
        """Start the SUT (the build :attr:`binaries` gives for its program, if any), ``flows``
        routes for an ip4 SUT."""
        self.sut = self.sut_cls(self.testbed, flows=flows if self.sut_cls.traffic == "ip4" else None)
        use = getattr(self.sut, "use_binaries", None)
        if use is not None:
            use(self.binaries)
        self.sut.start()
        return self.sut

    def new_generator(self, profile, **kw) -> EmbeddedGenerator:
        """A generator of this session's kind for ``profile``, frames built, process started."""
        kw.setdefault("on_trial", self.on_trial)
        gen = make_generator(self.generator_kind, self.testbed, profile, **kw)
        gen.pcaps()
        if hasattr(gen, "start"):
            gen.start()
        return gen

    @property
    def tg_name(self) -> str:
        """The generator and its version (``dpgen 1.0``, ``tcpreplay 4.4.3``) for ``tg``."""
        return generator_name(self.generator_kind)

    def facts(self) -> Dict[str, str]:
        """What measured a case, for its record: the generator (``tg``), the SUT's binary when it
        has one, and the host's CPU (``host_cpu_model``, ``host_cpu_id``: the history compares runs
        of one CPU, ``dpgate.regression``)."""
        out = {"tg": self.tg_name}
        if binary := getattr(self.sut, "binary", None):
            out["sut_binary"] = binary
        out.update(cpu_facts())
        return out

    def measure(self, load_pps: float, duration_s: float) -> TrialResult:
        assert self.generator is not None, "session is not up"
        return self.generator.measure(load_pps, duration_s)

    def cpu_freq(self) -> tuple[float, str]:
        """(Hz, source) of the SUT core frequency used for CPP."""
        cf = self.topology.dut.cpu_freq
        if cf.source == "declared" and cf.hz:
            return cf.hz, "declared"
        cpu = self.topology.dut.cpus[0] if self.topology.dut.cpus else 0
        return detect_cpu_hz(LocalNode(), cpu), "detected"

    def down(self) -> None:
        try:
            if self.generator is not None:
                self.generator.close()
            if self.sut is not None:
                self.sut.stop()
        finally:
            self.testbed.down()

    def __enter__(self) -> EmbeddedSession:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()
