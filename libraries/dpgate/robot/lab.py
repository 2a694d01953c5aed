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

The SUT/DUT/TRex plumbing lives in :mod:`dpgate.robot.lab_measure`.

It runs for real on the lab on one machine (``dpgate gate --topology topologies/lab-local.yaml``);
unit tests drive it through a fake TRex client and a recording node (tests/unit/test_labrobot.py).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple, Union

from robot.api import logger
from robot.api.deco import keyword, library

from dpgate.config.units import Rate
from dpgate.exec.hostcpu import node_cpu_facts
from dpgate.exec.nodelock import NodeLock
from dpgate.model.errors import ConfigError, DpgateError
from dpgate.model.ndrpdr import NdrPdrResult
from dpgate.robot.base import SearchSetting, rate_arg
from dpgate.robot.lab_measure import LabPlumbing
from dpgate.search.bounded import SearchRun
from dpgate.testbeds.lab.cores import allocate, parse_cores, parse_ht
from dpgate.testbeds.lab.dut import read_cpus, restrict_to
from dpgate.testbeds.lab.nfs import lab_nf
from dpgate.traffic.trex.latency import latency_metrics

DEFAULT_SIZES = ("64B", "IMIX", "1518B")


@library(scope="SUITE", converters={Rate: rate_arg}, doc_format="ROBOT")
class LabTestbed(LabPlumbing):
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
        numa = (
            dut.numa if dut.numa is not None else next((p.numa for p in dut.ports if p.numa is not None), 0)
        )
        # a topology listing its main CPU among its cpus shares it with the workers (2-CPU lab on one machine)
        self.cores = allocate(
            restrict_to(self.cpus, allowed),
            phy_cores=n,
            ht=smt,
            numa=numa,
            main=dut.main_cpu,
            shared_main=dut.main_cpu is not None and dut.main_cpu in dut.cpus,
        )
        logger.info(
            f"DUT cores {self.cores.tag}: main {self.cores.main}, workers {self.cores.corelist} (NUMA {self.cores.numa})"
        )
        return self.cores.tag

    # -- lifecycle ------------------------------------------------------------------------
    @keyword
    def bring_up_lab_testbed(
        self, nf: str, *frame_sizes: str, cores: Union[int, str] = 1, ht: Union[bool, str] = False
    ) -> str:
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
            logger.warn(
                f"DUT lock not released ({err}); it expires after {lock.lease_s if lock else 0:.0f} s"
            )
        if node is not None:
            try:
                node.close()
            except Exception as err:
                errors.append(f"closing SSH: {err}")
        self._collector = None
        if errors:
            raise DpgateError("teardown incomplete: " + "; ".join(errors))

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
        return self._find_ndr_and_pdr(
            frame_size, profile, min_rate, max_rate, ndr_loss, pdr_loss, time_limit, overrides
        )

    # -- the hooks of the shared Find NDR And PDR flow (dpgate.robot.base) ------------------
    def _search_generator(self, frame_size: str):
        if self.sut is None:
            raise ConfigError("lab testbed is not up: call 'Bring Up Lab Testbed' first")
        gen = self._gen(frame_size)
        self._active(gen)
        return gen

    def _search_measure(self, gen):
        return lambda load, duration: self._measure(gen, load, duration)

    def _search_alive(self, gen) -> None:
        self._check_sut_alive()

    def _search_cpu_freq(self) -> Tuple[float, str]:
        return self.cpu_freq()

    def _search_telemetry(self, run: SearchRun, busy_cpp, after: Dict[str, Any]) -> Dict[str, Any]:
        return {
            "search_complete": run.complete,
            "core_tag": self.cores.tag,
            "threads": len(self.cores.workers),
        }

    def _search_setting(self) -> SearchSetting:
        topo = self._topo()
        return SearchSetting(
            cores=self.cores.phy_cores,
            testbed=topo.name,
            prefix=topo.prefix,
            ceiling_note="TG line rate {hi}: the SUT may be faster than these ports can show",
        )

    def _search_record(self, gen, run: SearchRun, out: NdrPdrResult, after: Dict[str, Any]):
        """CSIT's latency trials at 90/50/10 % of PDR, then the metrics and the DUT cores."""
        latency, note = self._latency_after(gen, run.pdr)
        metrics = dict(out.metrics(), tg=getattr(gen, "tg_name", "TRex"), **latency_metrics(latency or {}))
        metrics.update(node_cpu_facts(self._dut()))  # the history compares runs of one DUT CPU
        cores = self.cores
        return metrics, dict(
            dut_cores={
                "tag": cores.tag,
                "main": cores.main,
                "workers": list(cores.workers),
                "numa": cores.numa,
            },
            latency=latency,
            latency_note=note,
        )
