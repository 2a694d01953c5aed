"""Cost injection: make the SUT itself do more work per packet, as a code regression would.

``--sut-cpu-steal`` takes CPU time away from the SUT; this adds per-packet work inside the
SUT's own forwarding path, so its cycles per packet (``cpp_at_load``) rise and, for a SUT
faster than the generator no more, its throughput drops:

* kernel SUTs (linux-xconnect, linux-bridge, linux-ip4): ``N`` u32 filters on the SUT
  ports' ingress that every frame is compared against and none matches (each compares
  ``KEYS`` 32-bit words, the last one never equal), placed before the cross-connect's own
  mirred filter (lower u32 node handles are walked first);
* testpmd-io: the ``noisy`` forwarding engine (io forwarding plus ``R`` random reads of
  a lookup table per packet, DPDK's own "noisy VNF" emulation); testpmd-mac has no noisy
  variant in DPDK 22.11 and is refused.

``N``/``R`` for a percentage come from :data:`CALIBRATION`: the SUT's ``cpp_at_load`` on the
reference machine class and the measured cost of one filter / one read, so that ``percent``
adds that share of the SUT's cycles per packet. ``benchmarks/cpp_at_load.py --inject-cost``
measures what a setting really adds on a machine (docs/embedded.md has the calibration).

    inject_cost(session.sut, 10)      # after the SUT started; returns what was done
"""

from __future__ import annotations

from typing import Dict

from dpgate.exec.runner import run
from dpgate.model.errors import ConfigError

#: u32 keys per filter (all compared: the first KEYS-1 match anything, the last never does)
KEYS = 4
#: Per SUT: (reference cpp_at_load in cycles, cycles one unit of injection adds per packet).
#: A unit is one ingress filter per port (kernel SUTs) or one lookup read (testpmd noisy).
#: Measured 2026-11-23 on the 2-core VM while it was shared (foreign share 0.8-0.9 of each
#: core), ``benchmarks/cpp_at_load.py --calibrate-units 50``, linux-xconnect at 100 kpps:
#: base 6202 / 4200 cycles, 50 filters per port +29.2 % / +32.3 % (36 / 27 cycles each).
#: The kernel SUTs walk the same u32 filters, so they share the per-filter cost; their
#: reference cpp is linux-xconnect's scaled by their NDR ratio in variables/embedded.yaml.
#: Measured again 2026-11-23 on the quiet VM (no other job), linux-xconnect at 192.5 kpps,
#: one bring-up, 3 x 2 s trials each: 16 filters per port took cpp_at_load from 4856/5181/5244
#: to 5326/5338/5351 (+3.0 % of the median, ~10 cycles a filter): the shared machine's
#: contention had tripled the per-filter cost, so the kernel SUTs now use 10 cycles a filter.
#: testpmd-io: not calibrated (its rate was the generator's, 20 reads/packet changed nothing
#: measurable); 300 cycles per read is one DRAM miss at 2.6 GHz, its base the CPP of its NDR.
CALIBRATION: Dict[str, tuple[float, float]] = {
    "linux-xconnect": (5200.0, 10.0),
    "linux-bridge": (5200.0, 10.0),
    "linux-ip4": (6000.0, 10.0),
    "testpmd-io": (7700.0, 300.0),
}


def units_for(sut_name: str, percent: float) -> int:
    """Injection units for ``percent`` more cycles per packet on ``sut_name``.

    >>> units_for("linux-xconnect", 10)
    52
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


def never_matching_filter(dev: str, node: int, keys: int = KEYS) -> list:
    """argv of one u32 ingress filter at node ``800::<node>`` that no frame matches.

    >>> " ".join(never_matching_filter("sut0", 1, keys=2)[11:])
    'handle 800::1 u32 match u32 0 0 at 0 match u32 0xffffffff 0xffffffff at 12 flowid ffff:1'
    """
    argv = [
        "tc",
        "filter",
        "add",
        "dev",
        dev,
        "parent",
        "ffff:",
        "protocol",
        "all",
        "prio",
        "1",
        "handle",
        f"800::{node}",
        "u32",
    ]
    for k in range(keys - 1):
        argv += ["match", "u32", "0", "0", "at", str(4 * k)]
    # EtherType/length word at offset 12 is never 0xffffffff in a frame we send.
    argv += ["match", "u32", "0xffffffff", "0xffffffff", "at", "12", "flowid", "ffff:1"]
    return argv


def inject_kernel(sut, n: int) -> Dict:
    for p in sut.ports():
        if "ingress" not in run(["tc", "qdisc", "show", "dev", p.name], ns=sut.ns, check=False).stdout:
            run(["tc", "qdisc", "add", "dev", p.name, "ingress"], ns=sut.ns)
        lines = [" ".join(never_matching_filter(p.name, i + 1)[1:]) for i in range(n)]
        run(["tc", "-batch", "-"], ns=sut.ns, input="\n".join(lines) + "\n", timeout=60)
    return {"method": "tc u32 ingress filters", "filters_per_port": n, "keys_per_filter": KEYS}


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
