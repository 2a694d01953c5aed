"""TRex server lifecycle: config file from the topology's TG ports, start in the TG
namespace, wait until its RPC answers, stop, and check nothing of it remains.

Config (``dpgate.traffic.trex.config.render_config``), one entry per TG port in TRex port order:

* af_packet on a Linux interface: ``--vdev=net_af_packetN,iface=<if>,blocksz=4096,
  framesz=2048,framecnt=8192,qdisc_bypass=1`` (TRex's short form uses 256-frame rings and
  drops on receive from 200 kpps, ../shared/vendor/trex-build.md);
* memif: ``--vdev=net_memifN,role=server,id=<id>,socket-abstract=no,socket=<path>`` (TRex
  creates the socket; a stale socket file is deleted before start, else TRex fails with
  "Could not find all interfaces");
* pci: the PCI address, as physical labs use.

With only virtual ports the config says ``low_end: true`` and ``low_end_core: <cpu>``: TRex
then runs its main, RX and worker threads on that one CPU and adds ``--no-pci --no-huge``.

Example (the config file's own examples are in ``dpgate.traffic.trex.config``)::

    with TrexServer.for_topology(topo, run_dir="/tmp/dpgate-tp0") as trex:   # started, RPC answers
        trex.tg_name                                                        # e.g. 'TRex v3.08'
    # stopped here, nothing of it left (trex.leftovers() == [])

The server command is an argv list, run as
``ip netns exec <ns> <trex>/trex-sw-server -i --cfg <cfg> -c 1 --software --no-key --iom 0 --hdrh``
(``--hdrh``: without it the latency stats carry no ``hdrh`` histogram, so no percentiles);
the client reaches it at ``trex.server`` (in the one-machine lab, over the management veth
of the TG namespace; see docs/trex.md and docs/lab.md).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from dpgate.model.errors import EnvironmentProblem
from dpgate.traffic.trex.config import TrexPort, ports_from_topology, render_config  # noqa: F401  (public names)
from dpgate.traffic.trex.install import SERVER_SCRIPT, trex_dir

PID_FILE = "server.pid"


class TrexServer:
    """One TRex STL server process we own (by pid).

    >>> srv = TrexServer([TrexPort("af_packet", "02:00:00:00:00:01", "02:00:00:00:00:02", iface="t0")],
    ...                  namespace="tx-tg", core=0, run_dir="/tmp/x", trex="/opt/trex")
    >>> srv.argv()[:5]
    ['ip', 'netns', 'exec', 'tx-tg', '/opt/trex/trex-sw-server']
    """

    def __init__(
        self,
        ports: Sequence[TrexPort],
        namespace: Optional[str],
        core: int,
        run_dir: str,
        trex: Optional[str] = None,
        server: str = "127.0.0.1",
        sync_port: int = 4501,
        async_port: int = 4500,
        hdrh: bool = True,
        client_path: Optional[str] = None,
    ):
        self.ports = list(ports)
        self.namespace = namespace
        self.core = core
        self.dir = Path(run_dir) / "trex"
        self.trex = Path(trex) if trex else None
        self.server, self.sync_port, self.async_port = server, sync_port, async_port
        self.hdrh = hdrh
        self.client_path = client_path
        self.cfg_path = self.dir / "trex_cfg.yaml"
        #: DPDK file prefix, unique per TG namespace (TRex's default "rte" collides with any other DPDK app)
        self.file_prefix = f"{namespace or 'dpgate'}-trex"
        self.log_path = self.dir / "server.log"
        self.proc: Optional[subprocess.Popen] = None
        self.version: Optional[str] = None

    @classmethod
    def for_topology(cls, topo: Any, run_dir: str, trex: Optional[str] = None, **kw: Any) -> TrexServer:
        tg = topo.tg
        t = tg.trex
        core = tg.cpus[0] if tg.cpus else 0
        return cls(
            ports_from_topology(topo),
            tg.namespace,
            core,
            run_dir,
            trex=trex,
            server=t.server if t else "127.0.0.1",
            sync_port=t.sync_port if t else 4501,
            async_port=t.async_port if t else 4500,
            client_path=t.client_path if t else None,
            **kw,
        )

    # -- command ------------------------------------------------------------------------
    def argv(self) -> List[str]:
        trex = self.trex or trex_dir()
        cmd = [
            str(trex / SERVER_SCRIPT),
            "-i",
            "--cfg",
            str(self.cfg_path),
            "-c",
            "1",
            "--software",
            "--no-key",
            "--iom",
            "0",
        ]
        if self.hdrh:
            cmd.append("--hdrh")
        return (["ip", "netns", "exec", self.namespace] if self.namespace else []) + cmd

    # -- lifecycle ----------------------------------------------------------------------
    def start(self, timeout_s: float = 60.0) -> TrexServer:
        if self.trex is None:
            self.trex = trex_dir()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.cfg_path.write_text(render_config(self.ports, self.core, file_prefix=self.file_prefix))
        for p in self.ports:
            if p.kind == "memif" and p.memif_socket:
                Path(p.memif_socket).parent.mkdir(parents=True, exist_ok=True)
                if os.path.exists(p.memif_socket):
                    os.unlink(p.memif_socket)  # stale: TRex would fail "Could not find all interfaces"
        self._check_free()
        log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                self.argv(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=str(self.dir),
                start_new_session=True,
            )
        finally:
            log.close()
        (self.dir / PID_FILE).write_text(f"{self.proc.pid}\n")
        try:
            self.wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _check_free(self) -> None:
        if _tcp_open(self.server, self.sync_port, 0.3):
            raise EnvironmentProblem(
                f"TRex RPC port {self.server}:{self.sync_port} already answers before our "
                "server started: another TRex runs there; stop it or use other addresses"
            )

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return " | ".join(text[-lines:])

    def wait_ready(
        self, timeout_s: float = 60.0, probe: Optional[Callable[[], Optional[str]]] = None
    ) -> None:
        """Until the RPC answers a real client (its version is kept), the process dies, or the
        timeout: the last two are one error with the server log's last lines."""
        deadline = time.monotonic() + timeout_s
        probe = probe or self._probe
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise EnvironmentProblem(
                    f"TRex server exited with code {self.proc.returncode} while starting ({self.log_path}): {self.log_tail()}"
                )
            if _tcp_open(self.server, self.sync_port, 0.5):
                version = probe()
                if version:
                    self.version = version
                    return
            time.sleep(0.3)
        raise EnvironmentProblem(
            f"TRex server not ready at {self.server}:{self.sync_port} after {timeout_s:g} s ({self.log_path}): {self.log_tail()}"
        )

    def _probe(self) -> Optional[str]:
        from dpgate.traffic.trex.install import client_path_for, import_trex_api

        api = import_trex_api(self.client_path or client_path_for(self.trex or trex_dir()))
        c = api.STLClient(
            server=self.server, sync_port=self.sync_port, async_port=self.async_port, verbose_level="none"
        )
        try:
            c.connect()
            return str(c.get_server_version().get("version") or "unknown")
        except Exception:  # not answering yet: the caller polls again
            return None
        finally:
            try:
                c.disconnect()
            except Exception:
                pass

    @property
    def tg_name(self) -> str:
        """``TRex v3.08`` (the generator name for results and JUnit)."""
        return f"TRex {self.version}" if self.version else "TRex"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe_exit(self) -> str:
        """``pid 123 exited with code -9; log: ...`` for error messages."""
        code = self.proc.poll() if self.proc is not None else None
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
        pid = self.proc.pid if self.proc is not None else "?"
        tail = "" if code is not None and code < 0 else f": {self.log_tail(3)}"
        return f"pid {pid} {how}; log {self.log_path}{tail}"

    def stop(self, timeout_s: float = 15.0) -> None:
        """SIGINT (TRex exits cleanly), SIGKILL after ``timeout_s``; by pid only. Then checks that
        no process runs our config file and removes the memif sockets TRex leaves behind."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGINT, timeout_s), (signal.SIGKILL, 5.0)):
                try:
                    proc.send_signal(sig)
                    proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
                except ProcessLookupError:
                    break
        left = self.leftovers()
        for pid in left:  # ours for sure: they run our run dir's config file
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.ports:
            if p.kind == "memif" and p.memif_socket and os.path.exists(p.memif_socket):
                os.unlink(p.memif_socket)
        shutil.rmtree(f"/var/run/dpdk/{self.file_prefix}", ignore_errors=True)  # DPDK runtime dir of ours
        (self.dir / PID_FILE).unlink(missing_ok=True)
        if left and self.leftovers():
            raise EnvironmentProblem(f"TRex server processes {left} survived SIGKILL")

    def leftovers(self) -> List[int]:
        """Pids of processes whose command line names our config file."""
        needle = str(self.cfg_path).encode()
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    if needle in f.read():
                        out.append(int(d))
            except OSError:
                continue
        return out

    def __enter__(self) -> TrexServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _tcp_open(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


class RunningTrex:
    """A TRex server another process of ours started (``<run_dir>/trex/server.pid``): lets a
    generator in the robot child notice its death at once, like ``TrexServer.alive()``."""

    def __init__(self, pid: int, log_path: Path):
        self.pid, self.log_path = pid, log_path

    @classmethod
    def attach(cls, run_dir: Optional[str]) -> Optional[RunningTrex]:
        """The handle when ``run_dir`` holds a pid file of a live server, else None."""
        if not run_dir:
            return None
        path = Path(run_dir) / "trex" / PID_FILE
        try:
            pid = int(path.read_text().strip())
        except (OSError, ValueError):
            return None
        handle = cls(pid, path.parent / "server.log")
        return handle if handle.alive() else None

    def alive(self) -> bool:
        try:
            with open(f"/proc/{self.pid}/stat") as fh:
                return fh.read().rsplit(") ", 1)[1][:1] not in ("Z", "X")
        except (OSError, IndexError):
            return False

    def describe_exit(self) -> str:
        return f"pid {self.pid} is gone; log {self.log_path}"
