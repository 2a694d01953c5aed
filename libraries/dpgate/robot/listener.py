"""Robot listener: test status into the result records, JUnit after every test, progress.

    robot --listener dpgate.listener.DpgateListener:results/junit.xml suites/embedded

After each test the JUnit file is rewritten from all records so far: a run killed
mid-suite still leaves a valid JUnit file for every test that finished.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Optional

from robot.libraries.BuiltIn import BuiltIn

from dpgate.model.record import F
from dpgate.outputs.junit import write_junit
from dpgate.outputs.results import ResultStore, load_records


def _full_name(item) -> str:
    """Full (dotted) name of a suite: the same string as Robot's ${SUITE NAME}."""
    return getattr(item, "full_name", None) or item.longname


class DpgateListener:
    ROBOT_LISTENER_API_VERSION = 3

    def __init__(self, junit: Optional[str] = None):
        self.junit = junit
        self.outdir: Optional[str] = None
        self.total = 0
        self.done = 0
        self.t0 = time.monotonic()

    def start_suite(self, data, result) -> None:
        if self.outdir is None:
            self.outdir = BuiltIn().get_variable_value("${OUTPUT DIR}", ".")
            if self.junit is None:
                self.junit = os.path.join(self.outdir, "junit.xml")
            self.total = data.test_count

    def start_test(self, data, result) -> None:
        store = ResultStore(self.outdir or ".")
        suite = _full_name(result.parent) if result.parent else ""
        store.update(
            f"{suite}.{result.name}",
            suite=suite,
            name=result.name,
            status="RUNNING",
            started=time.time(),
            tags=list(data.tags),
        )
        self._console(f"[{self.done + 1}/{self.total}] {result.name} ...")

    def end_test(self, data, result) -> None:
        store = ResultStore(self.outdir or ".")
        suite = _full_name(result.parent) if result.parent else ""
        elapsed = (
            result.elapsed_time.total_seconds()
            if hasattr(result, "elapsed_time")
            else result.elapsedtime / 1000.0
        )
        rec = store.update(
            f"{suite}.{result.name}",
            suite=suite,
            name=result.name,
            status=result.status,
            message=result.message,
            elapsed_s=elapsed,
            tags=list(result.tags),
        )
        self.done += 1
        m = rec.get(F.METRICS, {})
        nums = ""
        if "ndr_pps" in m:
            nums = f" NDR {m['ndr_pps'] / 1e6:.3f} Mpps PDR {m['pdr_pps'] / 1e6:.3f} Mpps CPP {m.get('cpp')}"
        self._console(
            f"[{self.done}/{self.total}] {result.name} {result.status}{nums}"
            + (f": {result.message}" if result.status != "PASS" and result.message else "")
        )
        self._write()

    def close(self) -> None:
        self._write()

    def _write(self) -> None:
        if self.outdir and self.junit:
            write_junit(load_records(self.outdir), self.junit)

    @staticmethod
    def _console(text: str) -> None:
        out = sys.__stdout__ or sys.stdout
        out.write(text + "\n")
        out.flush()
