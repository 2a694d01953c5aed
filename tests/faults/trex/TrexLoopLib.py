"""Test-only Robot library: NDR/PDR over the REAL TRex server on a looped TG (dpgate.traffic.trex.loop),
with fault injection (kill TRex mid-trial, hold its ports from another client). Results go
through dpgate's record + listener like the lab keywords, so the JUnit is the real one."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Optional

from robot.api.deco import keyword, library

from dpgate.robot.base import ndrpdr_result, record
from dpgate.search.bounded import search_ndr_pdr, trial_dicts
from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex.loop import TrexLoop


@library(scope="SUITE")
class TrexLoopLib:
    def __init__(self, prefix: str = "txf-", mgmt_net: str = "198.19.255.12"):
        self.prefix, self.mgmt_net = prefix, mgmt_net
        self.loop: Optional[TrexLoop] = None
        self.other: Any = None

    @keyword
    def bring_up_trex_loop(self) -> None:
        self.loop = TrexLoop(self.prefix, "veth", mgmt_net=self.mgmt_net).up()

    @keyword
    def tear_down_trex_loop(self) -> None:
        if self.other is not None:
            self.release_trex_ports()
        if self.loop is not None:
            self.loop.down()
            self.loop = None

    @keyword
    def find_ndr_and_pdr_over_trex(
        self, frame_size: str = "64B", max_rate: float = 150_000, time_limit: float = 25
    ) -> Any:
        assert self.loop is not None
        size = frame_size[:-1] if frame_size.endswith("B") else frame_size
        gen = self.loop.generator(make_profile("ip4", int(size) if size.isdigit() else size))
        try:
            run = search_ndr_pdr(
                gen.measure,
                10_000,
                float(max_rate),
                "0",
                "0.5%",
                "per-commit",
                {"trial_duration": "1"},
                float(time_limit),
            )
        finally:
            gen.disconnect()
        out = ndrpdr_result(
            run,
            nf="trex-loop",
            frame_size=frame_size,
            profile="per-commit",
            lo=10_000,
            hi=float(max_rate),
            cores=1,
            hz=1.0,
            source="declared",
            generator_max_pps=None,
            sut_cpp=None,
            telemetry={},
            ceiling_note="",
        )
        metrics = dict(out.metrics(), tg=gen.tg_name)
        record(
            metrics=metrics,
            nf=out.nf,
            testbed="trex-loop",
            prefix=self.prefix,
            profile="per-commit",
            trials=trial_dicts(run.res),
            latency=None,
            latency_note="not measured in this fault suite",
        )
        return out

    @keyword
    def kill_trex_server_after(self, seconds: float) -> None:
        """Fault: SIGKILL the TRex server (by its pid) ``seconds`` from now."""
        assert self.loop is not None and self.loop.server.proc is not None
        pid = self.loop.server.proc.pid
        threading.Timer(float(seconds), lambda: os.kill(pid, signal.SIGKILL)).start()

    @keyword
    def hold_trex_ports_as(self, user: str) -> None:
        """Fault: another TRex client (``user``) acquires both ports."""
        from dpgate.traffic.trex.install import import_trex_api

        assert self.loop is not None
        api = import_trex_api()
        self.other = api.STLClient(server=self.loop.tg_ip, username=user, verbose_level="none")
        self.other.connect()
        self.other.acquire(ports=[0, 1])

    @keyword
    def trex_ports_should_still_be_held_by_the_other_client(self) -> None:
        assert self.other is not None
        held = self.other.get_acquired_ports()
        if held != [0, 1]:
            raise AssertionError(f"the other client lost its ports: it holds {held}")

    @keyword
    def release_trex_ports(self) -> None:
        if self.other is not None:
            try:
                self.other.release(ports=[0, 1])
                self.other.disconnect()
            finally:
                self.other = None
