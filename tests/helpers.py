"""What several test folders (unit, integration, faults) share: the public names they check,
a ready NdrPdrResult for the gate keywords, the lab-on-one-machine topology copy and the
``dpgate gate`` command line. Importable as ``helpers`` (pyproject: pytest ``pythonpath``).

The public names are spelled out here, not taken from the code: a renamed field must fail
the tests that check it.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional

from dpgate.model.ndrpdr import NdrPdrResult

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Public trial keys (issue 2, part 6; ``dpgate trial --json``): changing them breaks users.
PUBLIC_TRIAL_FIELDS = frozenset(
    {
        "intended_load_pps",
        "intended_duration_s",
        "intended_packets",
        "tx_packets",
        "rx_packets",
        "loss_packets",
        "loss_ratio",
        "tg_shortfall",
        "actual_duration_s",
        "limited_by",
    }
)

#: Embedded SUT names users and suites rely on (``dpgate suts`` lists at least these).
EMBEDDED_SUTS = frozenset(
    {"linux-xconnect", "linux-bridge", "linux-ip4", "ovs-xconnect", "testpmd-io", "testpmd-mac"}
)


def ndrpdr_result(
    ndr: float = 212_000.0,
    pdr: Optional[float] = None,
    cpp: Optional[float] = None,
    telemetry: Optional[Dict[str, Any]] = None,
    max_pps: Optional[float] = 500_000.0,
    hz: float = 2.6e9,
    **fields: Any,
) -> NdrPdrResult:
    """A search result as the keywords return it (PDR = NDR unless given; ``fields`` override).

    >>> ndrpdr_result(200_000.0, cpp=9000.0).cpp_ndr
    9000.0
    """
    pdr = ndr if pdr is None else pdr
    out = NdrPdrResult(
        nf="linux-ip4",
        frame_size="64B",
        ndr_pps=ndr,
        pdr_pps=pdr,
        ndr_upper_pps=ndr * 1.005,
        pdr_upper_pps=pdr * 1.005,
        ndr_loss=0.0,
        pdr_loss=0.005,
        profile="per-commit",
        trials=12,
        search_s=30.0,
        cores=1,
        cpu_hz=hz,
        freq_source="declared",
        cpp_ndr=cpp if cpp is not None else hz / ndr,
        cpp_pdr=hz / pdr,
        generator_max_pps=max_pps,
        limited_by=None,
        telemetry=telemetry or {},
    )
    return dataclasses.replace(out, **fields) if fields else out


def fixture_reader(*folder: str, newline: Optional[str] = None) -> Callable[..., str]:
    """``fixture(name)``: the text of ``tests/fixtures/<folder...>/<name>`` (recorded real outputs);
    ``newline=""`` keeps line ends as recorded (``\\r\\n`` too).

    >>> fixture_reader("testpmd")("stop-io-20kpps.txt").count("Accumulated forward statistics")
    1
    """
    base = os.path.join(ROOT, "tests", "fixtures", *folder)

    def fixture(*name: str) -> str:
        with open(os.path.join(base, *name), encoding="utf-8", newline=newline) as fh:
            return fh.read()

    return fixture


def ovs_vsctl_set(setting: str) -> List[str]:
    """The argv that sets one ``other_config`` key of Open_vSwitch without waiting for vswitchd.

    >>> ovs_vsctl_set("dpdk-init=true")[-1]
    'other_config:dpdk-init=true'
    """
    return ["ovs-vsctl", "--no-wait", "set", "Open_vSwitch", ".", f"other_config:{setting}"]


def local_topology(directory: Any, tg_addr: str, dut_addr: str) -> str:
    """A copy of topologies/lab-local.yaml with its own management addresses (so a test never
    collides with a lab on one machine someone else runs here); returns its path."""
    with open(os.path.join(ROOT, "topologies", "lab-local.yaml"), encoding="utf-8") as fh:
        text = fh.read()
    text = text.replace("198.19.255.6", tg_addr).replace("198.19.255.2", dut_addr)
    path = os.path.join(str(directory), "lab-local.yaml")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def assert_lab_local_clean(prefix: str) -> None:
    """Nothing of a lab on one machine with ``prefix`` left: namespaces, run dir, processes."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"{prefix}tg" not in names and f"{prefix}dut" not in names
    run_dir = "/tmp/dpgate-" + prefix.rstrip("-")
    assert not os.path.exists(run_dir)
    ps = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    assert [line for line in ps.splitlines() if run_dir in line and not line.startswith("Z")] == []


def gate_argv(
    topology: str, prefix: str, outdir: str, include: str, time_limit_s: int, suites: str
) -> List[str]:
    """``python -m dpgate.cli gate`` on ``suites`` without history, tests matching ``include``."""
    return [
        sys.executable,
        "-m",
        "dpgate.cli",
        "gate",
        "--topology",
        topology,
        "--prefix",
        prefix,
        "--outdir",
        outdir,
        "--no-history",
        "--include",
        include,
        "--variable",
        f"SEARCH_TIME_LIMIT:{time_limit_s}",
        suites,
    ]


def gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie) within ``within_s``."""
    import time

    end = time.monotonic() + within_s
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.02)
    return False


def orphaned_child(imports: str, start: str) -> int:
    """Run a Python process that starts a child (``start``: an expression giving its pid,
    after ``imports``) and exits at once without stopping it; the child's pid."""
    lib = os.path.join(os.path.dirname(__file__), "..", "libraries")
    code = f"import sys; sys.path.insert(0, sys.argv[1]); {imports}; print({start}, flush=True); import os; os._exit(0)"
    out = subprocess.run([sys.executable, "-c", code, lib], capture_output=True, text=True, timeout=30)
    return int(out.stdout.split()[0])


_STARTS = itertools.count(1)  # each fixture run starts at its own time, as real runs do


def write_run(tmp_path: Any, name: str, metrics: Dict, status: str = "PASS", **fields: Any) -> str:
    """One gate run's result dir ``tmp_path/name`` with test S.64B-1c-x-ndrpdr on the embedded
    testbed; returns its path (for ``dpgate.regression`` tests)."""
    from dpgate.outputs.results import ResultStore

    out = tmp_path / name
    ResultStore(str(out)).update(
        "S.64B-1c-x-ndrpdr",
        suite="S",
        name="64B-1c-x-ndrpdr",
        status=status,
        started=fields.pop("started") if "started" in fields else next(_STARTS),
        testbed="embedded",
        metrics=metrics,
        **fields,
    )
    return str(out)


def load_benchmark(name: str):
    """``benchmarks/<name>.py`` as a module (benchmarks are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        f"bench_{name}", os.path.join(ROOT, "benchmarks", f"{name}.py")
    )
    assert spec and spec.loader, name
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_robot_quietly(suite: Any, out: Any, variables: List[str], pythonpath: List[str]) -> Any:
    """Run a Robot suite file for real (no log/report, console captured) with ``tests/`` on the
    path too (for ``helpers``); returns its first test's result (``status``, ``message``)."""
    import io

    import robot
    from robot.api import ExecutionResult

    here = os.path.dirname(os.path.abspath(__file__))
    robot.run(
        str(suite),
        outputdir=str(out),
        variable=variables,
        pythonpath=[*map(str, pythonpath), here],
        log="NONE",
        report="NONE",
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    return ExecutionResult(os.path.join(str(out), "output.xml")).suite.tests[0]
