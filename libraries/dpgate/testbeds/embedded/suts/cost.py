"""Cost injection: make the SUT itself do more work per packet, as a code regression would.

``--sut-cpu-steal`` takes CPU time away from the SUT; this adds per-packet work inside the
SUT's own forwarding path, so its cycles per packet (``cpp_at_load``) rise and, for a SUT
faster than the generator no more, its throughput drops:

* kernel SUTs (linux-xconnect, linux-bridge, linux-ip4): one classic-BPF tc classifier on
  each SUT port's ingress, ahead of anything the SUT has there (``prio 1``; the
  cross-connect's own mirred filter is ``prio 10``), running ``N`` dependent ``A += 1``
  instructions per frame and then answering "no match", so forwarding is unchanged. The
  kernel JIT-compiles it (``net.core.bpf_jit_enable``), so one unit is about one cycle per
  frame, linear in ``N`` (at most 4,095) and nearly free of cache effects;
* testpmd (io, mac) and OVS-DPDK: the same program on the *generator* ports' ingress. testpmd's
  net_af_packet transmit is a ``sendto`` that the kernel completes on the SUT core: veth
  hands each frame to its peer's backlog there and the softirq that delivers it (through
  that ingress) runs when the call re-enables bottom halves, before testpmd's burst ends.
  So the work lands inside testpmd's own busy cycles (``--record-core-cycles``) per
  forwarded frame, as a slower transmit path would, and forwarding is unchanged. OVS-DPDK's
  PMD thread transmits through the same driver: the work lands in its processing cycles. (DPDK's
  ``noisy`` engine, the lab driver's injection, records no cycles in 22.11 and has no mac
  variant.)

``N``/``R`` for a percentage come from :data:`CALIBRATION`: the SUT's ``cpp_at_load`` on the
reference machine class and the measured cost of one unit, so that ``percent`` adds that
share of the SUT's cycles per packet. ``benchmarks/cpp_at_load.py --calibrate-units N``
measures what ``N`` units really add on a machine (docs/embedded.md has the calibration).

    inject_cost(session.sut, 10)      # after the SUT started; returns what was done
"""

from __future__ import annotations

from typing import Dict, List

from dpgate.exec.runner import run
from dpgate.model.errors import ConfigError

#: Instructions per classic BPF program (tc's netlink message holds 16 KiB, 8 bytes each).
BPF_CHUNK = 1900
#: Most injected instructions per frame (programs run one after another).
WORK_MAX = 20 * BPF_CHUNK
#: Per SUT: (reference cpp_at_load in cycles, cycles one unit of injection adds per packet).
#: A unit is one BPF instruction per frame.
#: Kernel SUTs (2026-11-25): cpp_at_load as the gate measures it now, SUT core held awake and
#: its ports' NAPI deferred to ~64 frames a poll, trials at full core speed only; on the 2-core
#: VM at the rows' cpp_load: linux-xconnect 2568-2657, linux-bridge 3739-3972, linux-ip4
#: 5210-5609. One instruction adds ~1.0 cycle (``benchmarks/cpp_at_load.py --calibrate-units
#: 600``/``1000``, 3+2 bring-ups each: 1.0-1.3 xconnect, 0.95 bridge at full speed, 1.2-1.5
#: ip4; single bring-ups in a slow host phase read 0.1-0.7). Before the deferral, the same
#: work was mostly absorbed (more frames per wake-up): +1000 instructions moved bridge by
#: 1.5-2 %; deferred, +600 moved it +15 %.
#: testpmd (2026-11-26): cpp_at_load is its own busy cycles at the rows' cpp_load: io
#: 11,256-13,481 (72 kpps), mac 16,095-17,188 (37.5 kpps) at full speed; an instruction on
#: the generator ports' ingress adds 0.41-0.53 (io, 1310 per frame) and 0.80-0.99 (mac, 2000)
#: of its busy cycles (``--calibrate-units``, 2 bring-ups x 6 pairs of trials each).
#: Since 2026-11-26 (later that day) the polling SUTs' cpp_at_load trials run with their
#: ports' NAPI deferred as the kernel SUTs' do (``dpgate.telemetry.disturbance``), which
#: halved their busy cycles and made them steady: at full speed testpmd-io 6,112-6,582
#: (72 kpps), testpmd-mac 8,137-8,535 (37.5 kpps), OVS-DPDK's PMD processing cycles
#: 5,971-6,350 (72 kpps); 1,300 instructions on the generator ports' ingress add 0.98-1.19
#: (io), 0.95-1.10 (mac), 0.98-1.12 (OVS-DPDK) a unit (``--calibrate-units``, 2 bring-ups x
#: 5 pairs each). Unmoderated (before) a unit was 0.5 (io), 0.9 (mac), 0.87 (OVS-DPDK).
CALIBRATION: Dict[str, tuple[float, float]] = {
    "linux-xconnect": (2650.0, 1.0),
    "linux-bridge": (3850.0, 1.0),
    "linux-ip4": (5500.0, 1.0),
    "testpmd-io": (6400.0, 1.05),
    "testpmd-mac": (8300.0, 1.0),
    "ovsdpdk-xconnect": (6150.0, 1.05),
}


def units_for(sut_name: str, percent: float) -> int:
    """Injection units for ``percent`` more cycles per packet on ``sut_name``.

    >>> units_for("linux-xconnect", 10)
    265
    """
    if not 0 < percent <= 100:
        raise ConfigError(
            f"injected cost must be a percentage in (0, 100], got {percent!r}", path="inject_cost"
        )
    if sut_name not in CALIBRATION:
        raise ConfigError(
            f"cost injection is not available for SUT {sut_name!r} (available: "
            f"{', '.join(sorted(CALIBRATION))}); use --sut-cpu-steal for it",
            path="inject_cost",
        )
    base, unit = CALIBRATION[sut_name]
    return max(1, int(round(percent / 100.0 * base / unit)))


def work_filters(dev: str, n: int) -> List[List[str]]:
    """argv of tc ingress classifiers on ``dev`` doing ``n`` instructions per frame, no match:
    as many programs of at most :data:`BPF_CHUNK` instructions as ``n`` needs (one netlink
    message carries at most 16 KiB of program).

    >>> argv = work_filters("sut0", 3)[0]
    >>> argv[argv.index("prio") + 1], argv[-1]
    ('1', '4,4 0 0 1,4 0 0 1,4 0 0 1,6 0 0 0')
    >>> [len(a[-1].split(",")) - 2 for a in work_filters("sut0", 4000)]
    [1900, 1900, 200]
    """
    n = int(n)
    if not 1 <= n <= WORK_MAX:
        raise ConfigError(
            f"injected work must be 1..{WORK_MAX} BPF instructions per frame, got {n} "
            "(a smaller --inject-cost)",
            path="inject_cost",
        )
    out = []
    for i, start in enumerate(range(0, n, BPF_CHUNK)):
        k = min(BPF_CHUNK, n - start)
        # A += 1 (BPF_ALU|BPF_ADD|BPF_K = 4) k times, then return 0: "no match, go on".
        code = ",".join([str(k + 1)] + ["4 0 0 1"] * k + ["6 0 0 0"])
        head = ["tc", "filter", "add", "dev", dev, "parent", "ffff:", "protocol", "all", "prio", "1"]
        out.append(head + ["handle", str(i + 1), "bpf", "bytecode", code])
    return out


def _inject_ingress(ns: str, ports, n: int) -> None:
    """The ``n``-instruction programs on each port's ingress (an ingress qdisc added if none)."""
    for p in ports:
        if "ingress" not in run(["tc", "qdisc", "show", "dev", p.name], ns=ns, check=False).stdout:
            run(["tc", "qdisc", "add", "dev", p.name, "ingress"], ns=ns)
        for argv in work_filters(p.name, n):
            run(argv, ns=ns)


def inject_kernel(sut, n: int) -> Dict:
    _inject_ingress(sut.ns, sut.ports(), n)
    return {"method": "tc ingress classic BPF, JIT-compiled", "bpf_insns_per_frame": int(n)}


def inject_transmit(sut, n: int) -> Dict:
    """``n`` instructions per frame on the generator ports' ingress: run by the kernel inside
    a polling SUT's transmit call, on the SUT core (see the module's docstring)."""
    _inject_ingress(sut.tb.tg_ns, sut.tg_ports(), n)
    return {
        "method": "tc ingress classic BPF on the generator ports, run in the SUT's transmit call",
        "bpf_insns_per_frame": int(n),
    }


def inject_units(sut, n: int) -> Dict:
    """``n`` units of per-packet work in a started SUT (kernel SUT, testpmd or OVS-DPDK)."""
    if sut.name.startswith("linux-"):
        return inject_kernel(sut, n)
    if sut.name.startswith("testpmd-") or sut.name == "ovsdpdk-xconnect":
        return inject_transmit(sut, n)
    raise ConfigError(f"cost injection is not available for SUT {sut.name!r}", path="inject_cost")


def remove_injection(sut) -> None:
    """Take the injected programs (``prio 1`` ingress filters) off again, wherever they are."""
    where = [(sut.ns, sut.ports()), (sut.tb.tg_ns, sut.tg_ports())]
    for ns, ports in where:
        for p in ports:
            run(["tc", "filter", "del", "dev", p.name, "parent", "ffff:", "prio", "1"], ns=ns, check=False)


def inject_cost(sut, percent: float) -> Dict:
    """Inject ``percent`` more per-packet work into a started SUT; returns the setting."""
    out = inject_units(sut, units_for(sut.name, percent))
    out["percent"] = float(percent)
    return out
