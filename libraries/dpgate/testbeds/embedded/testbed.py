"""The embedded testbed: network namespaces and veth pairs on this machine.

``NamespaceTestbed(topology).up()`` takes the testbed's lock (``dpgate.exec.lock``: a run
on a busy prefix waits, then fails naming the holder), removes leftovers of an earlier run
with the same prefix (we own the testbed now, so their owner is dead), creates the TG and
SUT namespaces and the veth links, and applies the kernel settings that keep the SUT's
work on the SUT core (see docs and the facts note): TSO off on TG ports, GRO on and
threaded NAPI on SUT ports with the NAPI threads pinned to the SUT core, IPv6 off (no
stray ND frames in the counters), br_netfilter off in the SUT namespace. ``down()`` kills
every process in our namespaces and deletes them (which deletes the veths); it is safe to
call twice and after a failure.

Example::

    with NamespaceTestbed(load_topology("topologies/embedded.yaml")) as tb:
        print(tb.port_stats(tb.tg_ns, "tg0"))
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import time
from typing import Dict, List, Optional

from dpgate.config.topology import Topology
from dpgate.exec.lock import FileLock, hold_testbed
from dpgate.exec.runner import CommandError, kill_pids, require_tool, run
from dpgate.model.errors import EnvironmentProblem

REQUIRED_TOOLS = ("ip", "ethtool", "taskset", "tcpreplay", "tee", "sysctl")


def check_environment(tools=REQUIRED_TOOLS) -> None:
    """Root, netns support and tools present, or one clear error."""
    if os.geteuid() != 0:
        raise EnvironmentProblem(
            "the embedded testbed needs root (it creates network namespaces and veth links): run as root or with sudo"
        )
    for t in tools:
        require_tool(t)
    if not os.path.exists("/proc/self/ns/net"):
        raise EnvironmentProblem(
            "this kernel has no network namespace support (CONFIG_NET_NS): use a lab testbed"
        )


def list_namespaces() -> List[str]:
    res = run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in res.stdout.splitlines() if line.strip()]


def namespace_pids(ns: str) -> List[int]:
    res = run(["ip", "netns", "pids", ns], check=False)
    return [int(p) for p in res.stdout.split() if p.isdigit()]


def cleanup_prefix(prefix: str) -> List[str]:
    """Remove namespaces (and their processes) named with ``prefix``; returns what was removed."""
    removed = []
    for ns in list_namespaces():
        if ns.startswith(prefix):
            kill_pids(namespace_pids(ns))
            run(["ip", "netns", "del", ns], check=False)
            removed.append(ns)
    workdir = run_dir(prefix)
    # and those of prefixes that extend this one, as their namespaces (a paired check's twin: ``<prefix>b``)
    for path in [workdir] + glob.glob(glob.escape(workdir) + "-*"):
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
    _remove_hugepage_files(prefix)
    return removed


def _remove_hugepage_files(prefix: str) -> None:
    for d in ("/dev/hugepages", "/run/dpdk"):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            if name.startswith(prefix):
                path = os.path.join(d, name)
                if os.path.isdir(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass


def link_counters(stats64: Dict) -> Dict[str, int]:
    """rx/tx packets, bytes and dropped of one link from the ``stats64`` of ``ip -j -s link``.

    >>> link_counters({"rx": {"packets": 3, "bytes": 192, "dropped": 0},
    ...                "tx": {"packets": 2, "bytes": 128, "dropped": 1}})["tx_dropped"]
    1
    """
    return {f"{d}_{k}": stats64[d][k] for d in ("rx", "tx") for k in ("packets", "bytes", "dropped")}


def run_dir(prefix: str) -> str:
    """Per-testbed scratch directory (pcaps, SUT logs, OVS db/sockets)."""
    return os.path.join(os.environ.get("DPGATE_RUN_DIR", "/tmp"), f"dpgate-{prefix.rstrip('-')}")


class NamespaceTestbed:
    def __init__(self, topology: Topology, napi_threaded: bool = True):
        if topology.kind != "embedded":
            raise EnvironmentProblem(f"topology {topology.name!r} is {topology.kind!r}, not embedded")
        self.topology = topology
        self.napi_threaded = napi_threaded
        self.is_up = False
        self.workdir = run_dir(topology.prefix)
        #: The SUT ports' threaded-NAPI kernel threads (their CPU time is the SUT's own).
        self.napi_pids: List[int] = []
        #: (TG rx ports, their rx count) when the last trial on these ports settled, whichever
        #: generator ran it (one per frame size share the ports): ``late_after_last_settle``
        self.settled_rx: Optional[tuple] = None
        self._lock: Optional[FileLock] = None

    # -- names -------------------------------------------------------------
    @property
    def tg_ns(self) -> str:
        return self.topology.tg.namespace  # type: ignore[return-value]

    @property
    def sut_ns(self) -> str:
        return self.topology.dut.namespace  # type: ignore[return-value]

    @property
    def tg_cpus(self) -> List[int]:
        return list(self.topology.tg.cpus)

    @property
    def sut_cpus(self) -> List[int]:
        return list(self.topology.dut.cpus)

    # -- lifecycle ----------------------------------------------------------
    def up(self) -> NamespaceTestbed:
        check_environment()
        ncpu = os.cpu_count() or 1
        for role, cpus in (("TG", self.tg_cpus), ("DUT", self.sut_cpus)):
            bad = [c for c in cpus if c >= ncpu]
            if bad:
                raise EnvironmentProblem(
                    f"{self.topology.source}: nodes.{role}.cpus: CPU {bad[0]} does not exist on this machine "
                    f"(it has {ncpu}: 0..{ncpu - 1}); edit the topology"
                )
        if self._lock is None:
            self._lock = hold_testbed(self.topology.prefix)  # re-entrant: the CLI may hold it already
        cleanup_prefix(self.topology.prefix)  # we own the testbed: what is there is a dead run's
        os.makedirs(self.workdir, exist_ok=True)
        try:
            self._build()
        except Exception:
            self.down()
            raise
        self.is_up = True
        return self

    def _build(self) -> None:
        tg, sut = self.tg_ns, self.sut_ns
        for ns in (tg, sut):
            try:
                run(["ip", "netns", "add", ns])
            except CommandError as err:
                raise EnvironmentProblem(
                    f"cannot create network namespace {ns!r}: {err.stderr.strip()}"
                ) from None
            run(["ip", "link", "set", "lo", "up"], ns=ns)
            for key in ("all", "default"):
                run(["sysctl", "-q", "-w", f"net.ipv6.conf.{key}.disable_ipv6=1"], ns=ns, check=False)
        for tgp, sutp in self.topology.pairs():
            run(
                [
                    "ip",
                    "link",
                    "add",
                    tgp.name,
                    "netns",
                    tg,
                    "address",
                    tgp.mac,
                    "type",
                    "veth",
                    "peer",
                    "name",
                    sutp.name,
                    "netns",
                    sut,
                    "address",
                    sutp.mac,
                ]
            )
        for tgp, sutp in self.topology.pairs():
            run(["ethtool", "-K", tgp.name, "tso", "off"], ns=tg, check=False)
            run(["ethtool", "-K", sutp.name, "gro", "on"], ns=sut, check=False)
            run(["ip", "link", "set", tgp.name, "up"], ns=tg)
            run(["ip", "link", "set", sutp.name, "up"], ns=sut)
            if self.napi_threaded:
                before = set(self._napi_named())
                run(["tee", f"/sys/class/net/{sutp.name}/threaded"], ns=sut, input="1\n", check=False)
                self.napi_pids += [p for p in self._napi_named() if p not in before]
                self.__dict__.setdefault("_napi_known", set()).update(before)
        # br_netfilter (if loaded) costs ~16 % on the bridge path: off in the SUT namespace.
        for fam in ("iptables", "ip6tables", "arptables"):
            run(["sysctl", "-q", "-w", f"net.bridge.bridge-nf-call-{fam}=0"], ns=sut, check=False)
        self._wait_carrier()
        self.pin_napi_threads()

    def napi_deferral(self, us: float, polls: int = 100) -> bool:
        """Interrupt moderation on the SUT ports (0 turns it off): after a NAPI poll the port
        does not ask its peer to wake it for the next frame but polls again ``us``
        microseconds later, up to ``polls`` times without traffic (the kernel's
        ``gro_flush_timeout`` and ``napi_defer_hard_irqs``; veth honours them), as a NIC with
        ``ethtool -C rx-usecs`` would. Used for ``cpp_at_load``: the frames of a fixed
        interval share one wake-up, so cycles per frame measure the work per frame, not how
        many frames a wake-up happened to find. False when a port refused (a kernel without
        ``napi_defer_hard_irqs``, before 5.7, or a namespace already gone)."""
        ns, count = int(round(float(us) * 1000)), int(polls) if us else 0
        ports = [sutp.name for _, sutp in self.topology.pairs()]
        ok = True
        # one tee per knob for every port (each `ip netns exec` costs 6-7 ms on a busy VM)
        for knob, val in (("gro_flush_timeout", ns), ("napi_defer_hard_irqs", count)):
            paths = [f"/sys/class/net/{p}/{knob}" for p in ports]
            res = run(["tee", *paths], ns=self.sut_ns, input=f"{val}\n", check=False)
            ok = ok and res.returncode == 0
        return ok

    def _wait_carrier(self, timeout: float = 5.0) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            states = [self.link_state(self.tg_ns, t.name) for t, _ in self.topology.pairs()]
            if all(s == "UP" for s in states):
                return
            time.sleep(0.05)
        raise EnvironmentProblem(f"veth links did not come up within {timeout:g} s: {states}")

    def _napi_named(self) -> List[int]:
        """Pids of NAPI threads named after our SUT ports (``napi/sut0-<id>``): on a shared
        machine other testbeds' ports may have the same names, so this alone is not ours."""
        names = {s.name for _, s in self.topology.pairs()}
        out = []
        for pid_s in os.listdir("/proc"):
            if not pid_s.isdigit():
                continue
            try:
                with open(f"/proc/{pid_s}/comm") as fh:
                    comm = fh.read().strip()
            except OSError:
                continue
            m = re.match(r"napi/(.+)-\d+$", comm)
            if m and m.group(1) in names:
                out.append(int(pid_s))
        return out

    def pin_napi_threads(self) -> List[int]:
        """Pin our SUT ports' threaded-NAPI kernel threads to the SUT core(s).

        Ours are the threads that appeared when we switched our ports to threaded NAPI
        (``_build`` takes the difference), or, when ours are gone (a SUT re-created its
        ports' NAPI), the ones that appeared since the last look. Other testbeds' threads
        with the same port names are never pinned or counted as ours."""
        named = self._napi_named()
        known = self.__dict__.setdefault("_napi_known", set())
        ours = [p for p in self.napi_pids if os.path.exists(f"/proc/{p}")]
        if len(ours) < len(self.topology.pairs()):
            ours += [p for p in named if p not in known and p not in ours]
        known.update(named)
        cpus = ",".join(str(c) for c in self.sut_cpus)
        for pid in ours:
            run(["taskset", "-pc", cpus, str(pid)], check=False)
        self.napi_pids = sorted(ours)
        return self.napi_pids

    def down(self) -> Dict[str, List[str]]:
        """Kill everything in our namespaces and delete them. Idempotent."""
        try:
            self.is_up = False
            self.close_counters()
            removed = cleanup_prefix(self.topology.prefix)
        finally:
            self.is_up = False
            lock, self._lock = self._lock, None
            if lock is not None:
                lock.release()
        return {"namespaces": removed}

    def __enter__(self) -> NamespaceTestbed:
        return self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    # -- counters -----------------------------------------------------------
    def link_state(self, ns: str, ifname: str) -> str:
        res = run(["ip", "-j", "link", "show", "dev", ifname], ns=ns, check=False)
        try:
            return json.loads(res.stdout)[0].get("operstate", "UNKNOWN")
        except (ValueError, IndexError):
            return "MISSING"

    def counters(self, ns: str):
        """The namespace's process-free counter reader (``dpgate.traffic.nsdev``), started once."""
        from dpgate.traffic.nsdev import NetnsCounters

        readers = self.__dict__.setdefault("_counters", {})
        if ns not in readers:
            readers[ns] = NetnsCounters(ns).start()
        return readers[ns]

    def close_counters(self) -> None:
        for reader in self.__dict__.pop("_counters", {}).values():
            reader.close()

    def port_stats(self, ns: str, ifname: str) -> Dict[str, int]:
        """Kernel counters of one port: rx/tx packets, bytes, dropped (read without a process
        start from ``/proc/<holder>/net/dev`` while the testbed is up)."""
        if self.is_up:
            stats = self.counters(ns).read()
            if ifname not in stats:
                raise EnvironmentProblem(f"interface {ifname!r} not found in namespace {ns!r}")
            return stats[ifname]
        res = run(["ip", "-j", "-s", "link", "show", "dev", ifname], ns=ns)
        return link_counters(json.loads(res.stdout)[0]["stats64"])

    def ns_stats(self, ns: str) -> Dict[str, Dict[str, int]]:
        """Counters of every link of a namespace (``/proc/<holder>/net/dev`` while the testbed
        is up, else one ``ip -j -s link`` call)."""
        if self.is_up:
            return self.counters(ns).read()
        res = run(["ip", "-j", "-s", "link", "show"], ns=ns)
        return {
            link["ifname"]: link_counters(link["stats64"])
            for link in json.loads(res.stdout)
            if link.get("stats64")
        }

    def all_port_stats(self) -> Dict[str, Dict[str, int]]:
        out = {}
        for tgp, sutp in self.topology.pairs():
            out[f"tg.{tgp.name}"] = self.port_stats(self.tg_ns, tgp.name)
            out[f"sut.{sutp.name}"] = self.port_stats(self.sut_ns, sutp.name)
        return out

    def packet_socket_drops(self, ns: Optional[str] = None) -> int:
        """Sum of af_packet socket drops (``ss -f link -a -m`` skmem ``d<N>``) in a namespace."""
        if self.is_up:
            from dpgate.traffic.replayproc import run_in_netns

            out = run_in_netns([require_tool("ss"), "-f", "link", "-a", "-m"], ns or self.sut_ns)
        else:
            out = run(["ss", "-f", "link", "-a", "-m"], ns=ns or self.sut_ns, check=False).stdout
        return sum(int(m) for m in re.findall(r"skmem:\([^)]*?\bd(\d+)\)", out))
