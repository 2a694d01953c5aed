"""Facts about a lab DUT read through a ``dpgate.remote`` node: CPU layout, core frequency,
and a ``subprocess.run``-shaped runner so the telemetry collector counts on the DUT.

Example::

    cpus = read_cpus(node)                       # lscpu -p=CPU,CORE,SOCKET,NODE on the DUT
    hz = detect_cpu_hz(node, cpu=2)              # cpufreq base/max, else /proc/cpuinfo
    TelemetryCollector([2, 3], runner=NodeRunner(node)).probe()
"""

from __future__ import annotations

import subprocess
from typing import Any, List, Optional, Sequence

from ..errors import DpgateError, EnvironmentProblem
from .cores import Cpu, parse_lscpu

LSCPU = ["lscpu", "-p=CPU,CORE,SOCKET,NODE"]

#: Why pcm is not counted on a remote DUT (see ``NodeRunner``).
PCM_REMOTE_REASON = ("pcm-pcie/pcm-memory are not run over SSH by dpgate yet "
                     "(the collector starts pcm on the controller); DDIO/PCIe counters need a local run on the DUT")


def read_cpus(node: Any) -> List[Cpu]:
    """The DUT's logical CPUs with core, socket and NUMA node (``lscpu -p``)."""
    return parse_lscpu(node.run(LSCPU, timeout=30).stdout)


def restrict_to(cpus: Sequence[Cpu], allowed: Sequence[int]) -> List[Cpu]:
    """Keep the physical cores that hold any CPU in ``allowed`` (with all their SMT siblings).

    The topology lists the DUT's CPUs for the SUT (``cpus`` and ``main_cpu``), usually one
    thread per core; HT cases need the siblings too, so whole cores are kept.

    >>> cs = [Cpu(1, 1, 0, 0), Cpu(2, 2, 0, 0), Cpu(29, 1, 0, 0), Cpu(30, 2, 0, 0)]
    >>> [c.cpu for c in restrict_to(cs, [2])]
    [2, 30]
    """
    if not allowed:
        return list(cpus)
    keep = {(c.socket, c.core) for c in cpus if c.cpu in set(allowed)}
    return [c for c in cpus if (c.socket, c.core) in keep]


def detect_cpu_hz(node: Any, cpu: int = 0) -> float:
    """Nominal frequency of ``cpu`` on the node: cpufreq ``base_frequency`` (kHz), else
    ``cpuinfo_max_freq`` (kHz, nominal only with turbo off), else ``cpu MHz`` of /proc/cpuinfo."""
    for name in ("base_frequency", "cpuinfo_max_freq"):
        res = node.run(["cat", f"/sys/devices/system/cpu/cpu{int(cpu)}/cpufreq/{name}"], check=False, timeout=15)
        try:
            if res.returncode == 0:
                return float(res.stdout.strip()) * 1e3
        except ValueError:
            pass
    res = node.run(["cat", "/proc/cpuinfo"], check=False, timeout=15)
    for line in res.stdout.splitlines():
        if line.lower().startswith("cpu mhz"):
            return float(line.split(":")[1]) * 1e6
    raise EnvironmentProblem(f"cannot detect the DUT CPU frequency of CPU {cpu}: declare it in the topology "
                             "(cpu_freq: {source: declared, hz: 2.5e9})")


class NodeRunner:
    """``subprocess.run``-shaped callable that runs argv on a node (for TelemetryCollector).

    Exit 127 / tool not found becomes FileNotFoundError and a timeout becomes
    subprocess.TimeoutExpired, as the collector expects from subprocess.run. pcm tools are
    answered with exit 1 and :data:`PCM_REMOTE_REASON` on remote nodes without running them:
    the collector starts ``pcm-pcie`` with a local Popen during ``measure()``, which would
    count the controller, not the DUT.
    """

    def __init__(self, node: Any, remote: bool = True):
        self.node = node
        self.remote = remote

    def __call__(self, argv: Sequence[str], capture_output: bool = True, text: bool = True,
                 timeout: Optional[float] = None, **_: Any) -> subprocess.CompletedProcess:
        argv = [str(a) for a in argv]
        if self.remote and argv[0].startswith("pcm"):
            return subprocess.CompletedProcess(argv, 1, "", PCM_REMOTE_REASON)
        try:
            res = self.node.run(argv, timeout=timeout or 60.0, check=False)
        except EnvironmentProblem as err:
            if "not found" in str(err):
                raise FileNotFoundError(argv[0]) from None
            raise
        except DpgateError as err:
            if "timed out" in str(err) or "did not finish" in str(err):
                raise subprocess.TimeoutExpired(argv, timeout or 60.0) from None
            raise
        if res.returncode == 127:
            raise FileNotFoundError(argv[0])
        return subprocess.CompletedProcess(argv, res.returncode, res.stdout, res.stderr)


    def run(self, argv: Sequence[str], timeout: float = 30.0, check: bool = False, **kw: Any) -> Any:
        """The node interface as well (telemetry helpers that take a node get the same pcm rule)."""
        argv = [str(a) for a in argv]
        if self.remote and argv[0].startswith("pcm"):
            from ..remote import Result

            return Result(argv, 1, "", PCM_REMOTE_REASON)
        return self.node.run(argv, timeout=timeout, check=check, **kw)


def fix_pcm_reason(metrics: dict) -> dict:
    """Rewrite the collector's ``pcm exited with code 1: <PCM_REMOTE_REASON>`` to the reason alone."""
    out = {}
    for key, value in metrics.items():
        if isinstance(value, str) and PCM_REMOTE_REASON in value:
            value = f"not supported ({PCM_REMOTE_REASON})"
        out[key] = value
    return out
