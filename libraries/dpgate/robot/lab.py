"""Robot Framework keyword library for lab testbeds: a TRex host and a DUT over SSH.

``LabTestbed`` (suite scope) is the lab counterpart of ``dpgate.robotlib.EmbeddedTestbed``:
it connects to the DUT with ``dpgate.exec.remote``, allocates SUT cores from the DUT's
``lscpu`` (NUMA node, SMT siblings: ``1T1C``, ``2T1C`` ...), configures and starts the
``dpgate.testbeds.lab`` driver of the NF pinned to them, and searches NDR/PDR over TRex
(``dpgate.traffic.trex.TrexGenerator``). Results are the same ``NdrPdrResult`` and go into the same
per-test record, so ``Gates`` and the JUnit listener work unchanged.

Example suite (see ``suites/lab/`` and ``resources/lab.resource``)::

    *** Settings ***
    Library    dpgate.labrobot.LabTestbed    topologies/mylab.yaml
    Library    dpgate.robotlib.Gates    variables/lab-2n-skx.yaml
    Suite Teardown    Tear Down Lab Testbed

    *** Test Cases ***
    64B-2t1c-ethip4-ip4base-ndrpdr
        ${tag}=    Bring Up Lab Testbed    vpp-ip4    64B    cores=1    ht=on
        ${result}=    Find NDR And PDR    64B
        ${t}=    Thresholds For    vpp-ip4    64B    cores=${tag}
        Check Gates    ${result}    ${t}

It runs for real on the lab on one machine (``dpgate gate --topology topologies/lab-local.yaml``);
unit tests drive it through a fake TRex client and a recording node (tests/unit/test_labrobot.py).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

from robot.api import logger
from robot.api.deco import keyword, library

from dpgate.config.topology import load_topology
from dpgate.config.units import Rate, frame_size_tag, parse_frame_size
from dpgate.exec.cpu import detect_cpu_hz
from dpgate.exec.lock import default_wait, to_stderr
from dpgate.exec.nodelock import NodeLock, lab_dut_lock
from dpgate.exec.remote import node_for
from dpgate.model.errors import ConfigError, DpgateError, SutError
from dpgate.model.ndrpdr import NdrPdrResult
from dpgate.model.protocols import TrafficGenerator
from dpgate.model.trial import TrialResult
from dpgate.robot.base import TestbedKeywords, ndrpdr_result, rate_arg, record, telemetry_at_goals
from dpgate.search.bounded import _measured_cpp_near, search_ndr_pdr, trial_dicts
from dpgate.search.latency import latency_trials
from dpgate.telemetry.collector import TelemetryCollector, capture_during_trial
from dpgate.testbeds.lab.cores import allocate, parse_cores, parse_ht
from dpgate.testbeds.lab.dut import read_cpus, restrict_to
from dpgate.testbeds.lab.nfs import lab_nf, make_sut
from dpgate.testbeds.lab.service import unit_log
from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex import TrexGenerator
from dpgate.traffic.trex.latency import latency_metrics
from dpgate.traffic.trex.server import RunningTrex

DEFAULT_SIZES = ("64B", "IMIX", "1518B")


@library(scope="SUITE", converters={Rate: rate_arg}, doc_format="ROBOT")
class LabTestbed(TestbedKeywords):
    """Lab testbed keywords: SUT over SSH pinned to allocated cores, TRex traffic, NDR/PDR.

    Import: ``Library  dpgate.labrobot.LabTestbed  topologies/mylab.yaml  telemetry=True``

    ``latency_pps`` adds TRex latency streams (pps per direction, 0 = none); the
    DUT password comes only from the environment variable named by ``ssh.password_env``.
    """

    def __init__(
        self,
        topology: str = "topologies/lab-2node.example.yaml",
        telemetry: bool = True,
        latency_pps: float = 0.0,
        flows: Optional[int] = None,
    ):
        self.topology_path = topology
        self.telemetry = telemetry
        self.latency_pps = float(latency_pps)
        self.flows = flows
        self.topology: Any = None
        self.node: Any = None
        self._dut_lock: Optional[NodeLock] = None
        self.cpus: Optional[list] = None
        self.cores: Any = None
        self.nf: Optional[str] = None
        self.sut: Any = None
        self.sut_key: Optional[Tuple[str, int, bool]] = None
        self.sut_version_text = "unknown"
        self.generators: Dict[Tuple[str, str], Any] = {}
        self._hz: Optional[Tuple[float, str]] = None
        self._collector: Any = None
        self._collector_cpus: List[int] = []

    # -- seams (tests override these two) --------------------------------------------
    def _open_node(self) -> Any:
        return node_for(self._topo().dut, log=logger.debug)

    def _make_generator(self, profile: Any) -> Any:
        topo = self._topo()
        # a TRex server dpgate started for this lab (lab on one machine): its death ends a trial at once
        running = RunningTrex.attach(getattr(topo, "run_dir", None))
        return TrexGenerator(topo, profile, latency_pps=self.latency_pps, trex_server=running)

    # -- topology and DUT ---------------------------------------------------------------
    def _topo(self):
        if self.topology is None:
            topo = load_topology(self.topology_path)
            if topo.kind == "embedded":
                raise ConfigError(
                    "LabTestbed needs a lab topology (kind: lab-2node), got an embedded one: "
                    "use dpgate.robotlib.EmbeddedTestbed for it",
                    self.topology_path,
                    "kind",
                )
            self.topology = topo
        return self.topology

    def _dut(self) -> Any:
        if self.node is None:
            node, topo = self._open_node(), self._topo()  # owned by this run until teardown:
            self._dut_lock = lab_dut_lock(
                node, getattr(topo.dut, "name", "DUT1"), topo.prefix, bool(getattr(topo.dut, "namespace", None))
            ).acquire(default_wait(), to_stderr)
            self.node = node
        return self.node

    @keyword
    def use_lab_topology(self, topology: str) -> None:
        """Switch to another topology file (e.g. the one a pabot pool member hands out).

        Only before `Bring Up Lab Testbed`, or after `Tear Down Lab Testbed`.

        | `Use Lab Topology` | topologies/lab2.yaml |
        """
        if self.sut is not None or self.node is not None:
            raise ConfigError("Use Lab Topology: tear the testbed down first (Tear Down Lab Testbed)")
        self.topology_path, self.topology, self.cpus, self._hz = topology, None, None, None

    @keyword
    def acquire_lab_testbed_from_pool(self, pool: str) -> str:
        """Under pabot with ``--resourcefile``: acquire a testbed (value set) tagged ``pool``
        and use its ``topology``; returns that path. Blocks until one is free: bound it with a
        keyword ``[Timeout]`` (resources/lab.resource does).

        | `Acquire Lab Testbed From Pool` | lab |
        """
        topology = self._acquire_from_pool(pool, "topology", "file")
        self.use_lab_topology(str(topology))
        return str(topology)

    @keyword
    def release_lab_testbed_to_pool(self) -> None:
        """Give the testbed acquired by `Acquire Lab Testbed From Pool` back to the pool."""
        self._release_to_pool()

    @keyword
    def run_on_dut(self, *argv: str, timeout: float = 30.0, sudo: Optional[bool] = None) -> str:
        """Run one command (an argument list, never a shell string) on the DUT; return stdout.

        Fails with the exit code and the last lines of stderr when the command fails;
        secrets are masked in both.

        | ${out}= | `Run On DUT` | vppctl | show | version |
        | ${out}= | `Run On DUT` | uname | -r | timeout=10 |
        """
        if not argv:
            raise ConfigError("Run On DUT needs a command, e.g. Run On DUT  uname  -r")
        return self._dut().run(list(argv), timeout=float(timeout), sudo=sudo).stdout

    @keyword
    def allocate_dut_cores(self, cores: Union[int, str] = 1, ht: Union[bool, str] = False) -> str:
        """Pick the SUT's main CPU and ``cores`` physical worker cores from the DUT's ``lscpu``.

        NUMA node: ``numa`` of the DUT in the topology (else its first port's, else 0).
        With ``ht=on`` each worker core gives both SMT siblings. If the topology lists
        ``cpus``/``main_cpu``, only those physical cores are used. Returns the tag, e.g.
        ``2T1C``.

        | ${tag}= | `Allocate DUT Cores` | cores=2 | ht=on |
        """

        n, smt = parse_cores(cores), parse_ht(ht)
        dut = self._topo().dut
        if self.cpus is None:
            self.cpus = read_cpus(self._dut())
        allowed = list(dut.cpus) + ([dut.main_cpu] if dut.main_cpu is not None else [])
        numa = dut.numa if dut.numa is not None else next((p.numa for p in dut.ports if p.numa is not None), 0)
        # a topology listing its main CPU among its cpus shares it with the workers (2-CPU lab on one machine)
        self.cores = allocate(
            restrict_to(self.cpus, allowed),
            phy_cores=n,
            ht=smt,
            numa=numa,
            main=dut.main_cpu,
            shared_main=dut.main_cpu is not None and dut.main_cpu in dut.cpus,
        )
        logger.info(f"DUT cores {self.cores.tag}: main {self.cores.main}, workers {self.cores.corelist} (NUMA {self.cores.numa})")
        return self.cores.tag

    # -- lifecycle ------------------------------------------------------------------------
    @keyword
    def bring_up_lab_testbed(self, nf: str, *frame_sizes: str, cores: Union[int, str] = 1, ht: Union[bool, str] = False) -> str:
        """Start SUT ``nf`` on ``cores`` physical cores (``ht`` on/off) and prepare TRex per frame size.

        The SUT keeps running across tests with the same NF and cores (one restart per core
        configuration, as the suites order their cases). Returns the core tag (``1T1C``,
        ``2T1C``, ``4T2C`` ...) for `Thresholds For`.

        | ${tag}= | `Bring Up Lab Testbed` | vpp-l2patch | 64B | IMIX | cores=2 | ht=on |
        """

        spec = lab_nf(nf)
        n, smt = parse_cores(cores), parse_ht(ht)
        key = (nf, n, smt)
        if self.sut is not None and self.sut_key == key:
            for size in frame_sizes:
                self._gen(size)
            return self.cores.tag
        self._stop_sut()
        try:
            self.nf = nf
            tag = self.allocate_dut_cores(n, smt)
            for size in frame_sizes or DEFAULT_SIZES:
                self._gen(size)  # TRex client import and profile checks before the SUT starts
            self._start_sut(spec.name)
            self.sut_key = key
        except BaseException:
            try:
                self._stop_sut()
            except Exception as err:  # the first error is the one to see
                logger.warn(f"stopping the SUT after a failed bring-up: {err}")
            raise
        return tag

    def _start_sut(self, nf: str) -> None:
        self.sut = make_sut(nf, self._dut(), self._topo(), self.cores, flows=self.flows)
        self.sut.configure()
        self.sut.start()
        try:
            self.sut_version_text = self.sut.version()
        except DpgateError as err:
            self.sut_version_text = f"unknown ({err})"
        logger.info(f"SUT {nf} started on {self.cores.tag}: {self.sut_version_text}")

    def _stop_sut(self) -> None:
        sut, self.sut, self.sut_key = self.sut, None, None
        if sut is not None:
            sut.stop()

    def _check_sut_alive(self) -> None:
        """SutError with the unit's last log lines when the SUT's process is not running (a
        systemd unit, or start-stop-daemon's pid on a DUT without systemd: the driver's ``alive``)."""
        unit = getattr(self.sut, "unit", None)
        if self.sut is None or not unit:
            return
        alive = getattr(self.sut, "alive", None)
        state = (
            alive()
            if callable(alive)
            else self._dut().run(["systemctl", "is-active", unit], check=False, timeout=15).stdout.strip()
        )
        if state == "active":
            return

        self.sut_key = None  # the next bring-up restarts it
        tail = " | ".join(unit_log(self._dut(), unit).strip().splitlines()[-5:])
        raise SutError(f"SUT {self.nf} ({unit}) is not running any more ({state or 'no state'})" + (f": {tail}" if tail else ""))

    @keyword
    def tear_down_lab_testbed(self) -> None:
        """Stop the SUT, disconnect TRex, close SSH: each step runs even when an earlier one fails."""
        errors: List[str] = []
        try:
            self._stop_sut()
        except Exception as err:  # keep tearing down
            errors.append(f"stopping the SUT: {err}")
        gens, self.generators = self.generators, {}
        for gen in gens.values():
            try:
                gen.close()
            except Exception as err:
                errors.append(f"disconnecting TRex: {err}")
        node, self.node = self.node, None
        lock, self._dut_lock = self._dut_lock, None
        try:  # a dead SSH session cannot release it: the lease then expires on its own
            if lock is not None:
                lock.release()
        except Exception as err:
            logger.warn(f"DUT lock not released ({err}); it expires after {lock.lease_s if lock else 0:.0f} s")
        if node is not None:
            try:
                node.close()
            except Exception as err:
                errors.append(f"closing SSH: {err}")
        self._collector = None
        if errors:
            raise DpgateError("teardown incomplete: " + "; ".join(errors))

    def _sut_version(self) -> str:
        return self.sut_version_text

    # -- generators -----------------------------------------------------------------------
    def _gen(self, frame_size: str):
        if self.nf is None:
            raise ConfigError("lab testbed is not up: call 'Bring Up Lab Testbed' first")
        kind = lab_nf(self.nf).traffic
        tag = frame_size_tag(parse_frame_size(frame_size))
        key = (kind, tag)
        if key not in self.generators:
            gen = self._make_generator(make_profile(kind, parse_frame_size(frame_size), self.flows, bidirectional=True))
            if not gen.max_pps:
                raise ConfigError(
                    "TG ports need speed (e.g. 10Gbps) or pps_limit so the search knows the maximum rate",
                    self._topo().source,
                    "nodes.TG.interfaces",
                )
            self.generators[key] = gen
        return self.generators[key]

    def _active(self, gen) -> None:
        """One TRex session at a time: the others release the ports first."""
        for other in self.generators.values():
            if other is not gen and getattr(other, "connected", False):
                other.close()

    def _measure(self, gen: TrafficGenerator, load: float, duration: float) -> TrialResult:
        result = gen.measure(load, duration)
        self._on_trial(result)
        return result

    def cpu_freq(self) -> Tuple[float, str]:
        """(Hz, source) of the DUT cores for CPP: declared in the topology, else detected on the DUT."""
        if self._hz is None:
            cf = self._topo().dut.cpu_freq
            if cf.source == "declared" and cf.hz:
                self._hz = (cf.hz, "declared")
            else:
                cpu = self.cores.workers[0] if self.cores and self.cores.workers else 0
                self._hz = (detect_cpu_hz(self._dut(), cpu), "detected")
        return self._hz

    # -- search ---------------------------------------------------------------------------
    @keyword
    def find_ndr_and_pdr(
        self,
        frame_size: str = "64B",
        profile: str = "per-commit",
        min_rate: Rate = Rate(pps=9001.0),
        max_rate: Rate = Rate(percent=100.0),
        ndr_loss: str = "0",
        pdr_loss: str = "0.5%",
        time_limit: float = 0,
        **overrides: str,
    ) -> NdrPdrResult:
        """Search NDR and PDR of ``frame_size`` over TRex, compute CPP on the allocated cores, record metrics.

        ``max_rate`` defaults to the TG ports' line rate (or ``pps_limit``) for both
        directions; results at that ceiling are marked ``limited_by=generator``. CPP uses
        the physical cores of the allocation (HT siblings count once) and the declared or
        detected DUT frequency. ``time_limit`` and profile overrides work as in the
        embedded library.

        | ${r}= | `Find NDR And PDR` | 64B | profile=per-commit |
        | ${r}= | `Find NDR And PDR` | IMIX | profile=sign-off | trial_duration=30 |
        """
        if self.sut is None:
            raise ConfigError("lab testbed is not up: call 'Bring Up Lab Testbed' first")
        gen = self._gen(frame_size)
        self._active(gen)
        lo, hi = min_rate.resolve(gen.max_pps), max_rate.resolve(gen.max_pps)
        self._check_sut_alive()
        run = search_ndr_pdr(
            lambda load, duration: self._measure(gen, load, duration),
            lo,
            hi,
            ndr_loss,
            pdr_loss,
            profile,
            overrides,
            time_limit,
            logger.warn,
        )
        self._check_sut_alive()
        hz, source = self.cpu_freq()
        sut_cpp, _ = _measured_cpp_near(run.res, run.ndr, hz)
        telemetry: Dict[str, Any] = {
            "search_complete": run.complete,
            "core_tag": self.cores.tag,
            "threads": len(self.cores.workers),
        }
        if self.telemetry:
            telemetry.update(telemetry_at_goals(lambda load, sfx: self._telemetry_at(gen, load, sfx), run))
        out = ndrpdr_result(
            run,
            nf=self.nf or "?",
            frame_size=frame_size,
            profile=profile,
            lo=lo,
            hi=hi,
            cores=self.cores.phy_cores,
            hz=hz,
            source=source,
            generator_max_pps=gen.max_pps,
            sut_cpp=sut_cpp,
            telemetry=telemetry,
            testbed=self._topo().name,
            ceiling_note="TG line rate {hi}: the SUT may be faster than these ports can show",
        )
        topo = self._topo()
        latency, note = self._latency_after(gen, run.pdr)
        metrics = dict(out.metrics(), tg=getattr(gen, "tg_name", "TRex"), **latency_metrics(latency or {}))
        record(
            metrics=metrics,
            nf=out.nf,
            sut_version=self.sut_version(),
            testbed=topo.name,
            prefix=topo.prefix,
            dut_cores={
                "tag": self.cores.tag,
                "main": self.cores.main,
                "workers": list(self.cores.workers),
                "numa": self.cores.numa,
            },
            profile=profile,
            trials=trial_dicts(run.res),
            latency=latency,
            latency_note=note,
        )
        return out

    def _latency_after(self, gen, pdr: float) -> Tuple[Optional[Dict[str, Any]], str]:
        """CSIT's latency trials after the search: 5 s at 90, 50 and 10 % of PDR with the TRex
        latency streams; per load the per-direction min/avg/max and hdrh percentiles (us)."""
        if self.latency_pps <= 0:
            return None, "not measured: import LabTestbed with latency_pps=<pps per direction> (LATENCY_PPS)"
        if pdr <= 0:
            return None, "not measured: PDR is 0"

        def one(load: float, duration: float):
            return self._measure(gen, load, duration).details.get("latency")

        out = {
            f"{round(load / pdr * 100)}% PDR": {"load_pps": round(load, 1), "directions": lat}
            for load, lat in latency_trials(one, pdr)
        }
        return out, (f"TRex latency streams at {self.latency_pps:g} pps per direction, 5 s trials at 90/50/10 % of PDR (CSIT)")

    def _telemetry_at(self, gen, load: float, suffix: str = "") -> Dict[str, Any]:
        """perf/pcm on the DUT worker CPUs (run through the DUT's node) during a trial at
        ``load`` (NDR; PDR with ``_pdr`` keys), see
        ``dpgate.telemetry.collector.capture_during_trial``: reasons without a trial on DUTs
        without counters; a telemetry failure is reported, not fatal."""

        workers = list(self.cores.workers)
        if self._collector is None or self._collector_cpus != workers:
            self._collector = TelemetryCollector(workers, node=self._dut())  # perf and pcm on the DUT
            self._collector_cpus = workers
        metrics = capture_during_trial(self._collector, gen.measure, load, suffix)
        for key, value in metrics.items():
            if key.startswith("telemetry_error"):
                logger.warn(f"telemetry on the DUT failed: {value}")
        return metrics
