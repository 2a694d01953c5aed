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
* testpmd-io: the ``noisy`` forwarding engine (io forwarding plus ``R`` random reads of
  a lookup table per packet, DPDK's own "noisy VNF" emulation); testpmd-mac has no noisy
  variant in DPDK 22.11 and is refused.

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
#: A unit is one BPF instruction per frame (kernel SUTs) or one lookup read (testpmd noisy).
#: Kernel SUTs (2026-11-25): cpp_at_load as the gate measures it now, SUT core held awake and
#: its ports' NAPI deferred to ~64 frames a poll, trials at full core speed only; on the 2-core
#: VM at the rows' cpp_load: linux-xconnect 2568-2657, linux-bridge 3739-3972, linux-ip4
#: 5210-5609. One instruction adds ~1.0 cycle (``benchmarks/cpp_at_load.py --calibrate-units
#: 600``/``1000``, 3+2 bring-ups each: 1.0-1.3 xconnect, 0.95 bridge at full speed, 1.2-1.5
#: ip4; single bring-ups in a slow host phase read 0.1-0.7). Before the deferral, the same
#: work was mostly absorbed (more frames per wake-up): +1000 instructions moved bridge by
#: 1.5-2 %; deferred, +600 moved it +15 %.
#: testpmd-io: 10 and 40 reads per packet added 23 and 13-25 cycles per read to its
#: saturation CPP (base 7964-8560): ~20 cycles a read (the table mostly stays in L3).
CALIBRATION: Dict[str, tuple[float, float]] = {
    "linux-xconnect": (2650.0, 1.0),
    "linux-bridge": (3850.0, 1.0),
    "linux-ip4": (5500.0, 1.0),
    "testpmd-io": (8000.0, 20.0),
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


def inject_kernel(sut, n: int) -> Dict:
    for p in sut.ports():
        if "ingress" not in run(["tc", "qdisc", "show", "dev", p.name], ns=sut.ns, check=False).stdout:
            run(["tc", "qdisc", "add", "dev", p.name, "ingress"], ns=sut.ns)
        for argv in work_filters(p.name, n):
            run(argv, ns=sut.ns)
    return {"method": "tc ingress classic BPF, JIT-compiled", "bpf_insns_per_frame": int(n)}


def inject_cost(sut, percent: float) -> Dict:
    """Inject ``percent`` more per-packet work into a started SUT; returns the setting."""
    n = units_for(sut.name, percent)
    if sut.name.startswith("linux-"):
        out = inject_kernel(sut, n)
    elif sut.name == "testpmd-io":
        out = sut.set_noise(n)
    else:  # pragma: no cover - units_for refused it already
        raise ConfigError(f"cost injection is not available for SUT {sut.name!r}", path="inject_cost")
    out["percent"] = float(percent)
    return out
