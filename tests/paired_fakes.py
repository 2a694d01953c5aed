"""Fakes of the paired check's sides at the ``measure(load, duration) -> TrialResult`` seam.

Shared by tests/unit/test_paired_measure.py and test_paired_keyword.py. Each refuses what the
real generator refuses (a duration <= 0); the processes they watch are real (``sleep``).
"""

from __future__ import annotations

from dpgate.exec.stopped import proc_state as state


class Trial:
    def __init__(self, cycles, busy=None):
        self.sut_cpu_cycles_per_packet = cycles
        self.sut_cycles_per_packet = busy
        self.details = {"cpu": {"disturbance": 0.01}}


class Sut:
    ns = "dpgate-test-no-such-ns"


class FakeGen:
    """One side's generator: records, at each trial, the state of the other side's process."""

    def __init__(self, name, cycles, extra, watch, log, fail_at=None):
        self.name, self.cycles, self.extra_sut_pids, self.watch, self.log = name, cycles, extra, watch, log
        self.sut = Sut()
        self.fail_at = fail_at

    def measure(self, load, duration):
        if duration <= 0:
            raise ValueError("duration must be > 0")
        self.log.append((self.name, [state(p) for p in self.watch]))
        if self.fail_at is not None and len(self.log) >= self.fail_at:
            raise RuntimeError("generator died")
        return Trial(self.cycles)


class DetailGen(FakeGen):
    """A side whose trials read the values given for one ``details`` key, in turn."""

    key = ""

    def __init__(self, name, cycles, log, values):
        super().__init__(name, cycles, [], [], log)
        self.values = values

    def measure(self, load, duration):
        t = super().measure(load, duration)
        t.details[self.key] = self.values.pop(0)
        return t


class PlacedGen(DetailGen):
    """A side whose trials ran in the placements given, in turn."""

    key = "xcore_placement"


class ScriptedGen(FakeGen):
    """A side whose trials read the cycles given, in turn (a test fails if it runs out)."""

    def __init__(self, name, cycles, log):
        super().__init__(name, 0.0, [], [], log)
        self.script = list(cycles)

    def measure(self, load, duration):
        self.cycles = self.script.pop(0)
        return super().measure(load, duration)


class TwinStub:
    """The keyword's view of a baseline twin: its profile, its build, its generator."""

    def __init__(self, gen):
        from types import SimpleNamespace

        self.gen = gen
        self.session = SimpleNamespace(
            profile=SimpleNamespace(kind="l2", flows=None, bidirectional=False),
            sut=SimpleNamespace(binary=None),
            binaries={},
        )

    def generator(self, tag, profile):
        return self.gen


def paired_keyword(sut_cycles, base_cycles, log):
    """``Measure Cycles Against Baseline`` of the real keyword library over scripted sides."""
    from types import SimpleNamespace

    from dpgate.robot.paired import PairedMeasure

    sut, base = ScriptedGen("sut", sut_cycles, log), ScriptedGen("base", base_cycles, log)

    class Lib(PairedMeasure):
        def _gen(self, frame_size):
            return sut

        def _baseline_twin(self, binaries):
            return TwinStub(base)

    result = SimpleNamespace(frame_size="64B", telemetry={"cpp_at_load_pps": 50_000.0})
    return Lib(), result


# the first 4 pairs read +8 % but disagree (99 % CI reaches 0); the next 4 agree on +8 %
NOISY = [1000.0, 1000.0, 1000.0, 1000.0]
NOISY_SUT = [1130.0, 1030.0, 1110.0, 1050.0]
STEADY_SUT = [1080.0, 1081.0, 1079.0, 1080.0]


def disturbed(measure):
    def wrapped(load, duration):
        t = measure(load, duration)
        t.details = {"cpu": {"disturbance": 0.4}}
        return t

    return wrapped
