"""Generator calibration: the embedded testbed's "line rate" (the generator's own ceiling).

``calibrate(generator)`` is :meth:`EmbeddedGenerator.calibrate` (dpgen and tcpreplay); ``ceiling_from_probes`` is
the rule that turns probe rates into one ceiling.
"""

from __future__ import annotations

from dpgate.model.errors import TrialError


def calibrate(gen, duration_s: float = 1.0, probe_pps: float = 5e6, repeats: int = 3) -> float:
    """Measure the generator's own ceiling and keep it as the testbed max rate.

    Paced trials far above any reachable rate are sent while the SUT namespace only
    receives and discards (no SUT started, so nothing forwards or pushes back). The
    ceiling is the *lowest* of ``repeats`` rates the TG ports really sent: what the
    generator sustains reliably, so that rates up to 90 % of it are sent accurately
    (the best probe overstated it by 10-15 % on a shared VM). A probe far below the
    others (a hiccup: it once made a 0.28 Mpps ceiling of a 0.68 Mpps generator) is
    measured again, see :func:`ceiling_from_probes`. Like line rate on a
    physical testbed, searches never go above it and results at it are marked.
    """
    if gen.sut is not None and gen.sut.started:
        raise TrialError("calibrate the generator before starting the SUT (the SUT must not push back)")
    saved, gen.max_pps = gen.max_pps, None
    hook, gen.on_trial = gen.on_trial, None
    results = {}

    def probe() -> float:
        res = gen.measure(probe_pps, duration_s)
        rate = res.tx_packets / duration_s
        results[rate] = res
        return rate

    try:
        best, probes = ceiling_from_probes(probe, repeats)
    finally:
        gen.max_pps, gen.on_trial = saved, hook
    res = results[best]
    samples = [(r, results[r]) for r in probes]
    gen.max_pps = best
    if not gen.max_pps:
        raise TrialError(
            f"generator calibration sent nothing: is {getattr(gen, 'name', 'the generator')} working? "
            "see the logs in " + gen.tb.workdir
        )
    gen.calibration = {
        "max_pps": gen.max_pps,
        "tx_packets": res.tx_packets,
        "seconds": duration_s,
        "sink_rx_packets": res.rx_packets,
        "samples_pps": [round(x, 1) for x, _ in samples],
    }
    return gen.max_pps


#: A probe below this share of the probes' median is a hiccup (a stalled vCPU, a burst of
#: other work), not the generator's rate: it is measured again.
OUTLIER_SHARE = 0.85
EXTRA_PROBES = 2


def ceiling_from_probes(probe, repeats: int = 3) -> tuple[float, list]:
    """(ceiling, every probe's rate): the lowest of ``repeats`` consistent probes.

    The lowest, not the best, so that rates up to 90 % of the ceiling are sent accurately;
    but a probe below ``OUTLIER_SHARE`` of the others' median is replaced by a new one (at
    most ``EXTRA_PROBES`` times), so one hiccup does not become the ceiling of a whole suite.

    >>> rates = iter([700e3, 280e3, 690e3, 705e3])
    >>> ceiling_from_probes(lambda: next(rates))
    (690000.0, [700000.0, 280000.0, 690000.0, 705000.0])
    """
    import statistics

    probes = [probe() for _ in range(max(1, repeats))]
    kept = list(probes)
    for _ in range(EXTRA_PROBES):
        if len(kept) < 3 or min(kept) >= OUTLIER_SHARE * statistics.median(kept):
            break
        kept.remove(min(kept))
        new = probe()
        probes.append(new)
        kept.append(new)
    return min(kept), probes
