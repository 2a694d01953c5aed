"""The paired check of a polling SUT without a busy-cycle report (l3fwd, OVS on af_packet
ports): what its pairs compare at saturation, at which load, in how many pairs, and how much
of their scatter's tails is left out (``dpgate.telemetry.paired`` judges them)."""

from __future__ import annotations

from typing import Any, Optional

#: What a pair compares for a polling SUT without a busy-cycle report (l3fwd, OVS on af_packet
#: ports), measured at an overload: its threads' CPU time x Hz per forwarded frame. A busy poll
#: loop's CPU time is the whole trial at any load; saturated, every cycle of it goes to frames,
#: so the figure is its cycles per packet at saturation (the seed papers' CPP at the maximum
#: rate), and more work per frame raises it in full. On the Zen 3 host (2026-11-29, l3fwd-ip4
#: 64B at 350 kpps offered, 1 s trials): 20 A B B A pairs per step, the pairs' log ratios
#: scattered 0.10-0.11 (sd; 0.098-0.101 scaled at the polling exponent), as testpmd's own
#: cycles do (0.100).
SATURATED_FIELD = "sut_cpu_cycles_per_packet"
#: Saturation pairs per pair asked for: their figure scatters more than the polling SUTs' own
#: cycles do in the gate (the pairs' log ratios 0.10-0.15 in gk24's l3fwd runs, not scaled).
#: A SUT driver may ask for more (its ``saturation_pairs``: :func:`saturation_pairs`).
SATURATION_PAIRS = 2


def saturation_pairs(sut: Any) -> int:
    """Saturation pairs per pair asked for, for this SUT driver: its ``saturation_pairs``,
    else :data:`SATURATION_PAIRS`.

    >>> class Ovs: saturation_pairs = 4
    >>> saturation_pairs(Ovs()), saturation_pairs(object())
    (4, 2)
    """
    return _factor(sut, "saturation_pairs", SATURATION_PAIRS)


def paired_pairs(sut: Any) -> int:
    """Pairs per pair asked for at the ``cpp_at_load`` load (not at saturation) for this SUT
    driver: its ``paired_pairs``, else 1 (OVS on AF_XDP ports: 3, its pairs scatter more).

    >>> class Afxdp: paired_pairs = 3
    >>> paired_pairs(Afxdp()), paired_pairs(object())
    (3, 1)
    """
    return _factor(sut, "paired_pairs", 1)


def _factor(sut: Any, name: str, default: int) -> int:
    n = getattr(sut, name, None)
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else default


#: A saturation pair's offered load: this share of the generator ceiling, and at least
#: :data:`SATURATION_OVER` x what the SUT forwarded at most in the search (else it may not be saturated).
SATURATION_SHARE = 0.9
SATURATION_OVER = 1.5
#: Share of the saturation pairs' log ratios left out at each end (``paired.trimmed``): the pairs
#: of OVS on af_packet ports scatter with heavy tails, a host phase that changed within a
#: pair. gk27 (Xeon VM, 2026-11-30, 19-40 pairs per run): sd 0.13-0.22 over all pairs, 0.07-0.11
#: over the middle 80 %; re-judged trimmed, the 99 % intervals of two healthy runs went from
#: -5.9..+12.3 % and -8.7..+16.6 % to -3.6..+5.6 % and -8.7..+14.4 %, of two "+10 %" runs
#: from +4.6..+26.6 % and +0.8..+23.6 % to +7.7..+21.6 % and +5.3..+19.2 %.
SATURATION_TRIM = 0.2


def saturation_load(
    generator_max_pps: Optional[float], forwarded_max_pps: Optional[float]
) -> Optional[float]:
    """The offered load of saturation pairs, or None when the generator cannot overload the
    SUT by :data:`SATURATION_OVER` (the SUT would not be the bottleneck).

    >>> saturation_load(431488.0, 121198.0), saturation_load(150000.0, 121198.0), saturation_load(None, 1.0)
    (388339.2, None, None)
    """
    if not generator_max_pps or not forwarded_max_pps:
        return None
    load = round(SATURATION_SHARE * generator_max_pps, 1)
    return load if load >= SATURATION_OVER * forwarded_max_pps else None
