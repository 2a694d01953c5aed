"""A rise the paired check sees but lets pass: the pairs agree the SUT's cycles per packet rose
(the 99 % interval above 0, with every confirmation a FAIL needs) while the rise stays within
the allowance. The gate still PASSes; the record says so (``cpp_paired_rise_seen``) and the
verdict line carries the figure, as CSIT's trending marks a progression or regression it does
not fail on.

Why: on the model 207 Xeon VM the "+5 %" step injected into l3fwd-ip4 and testpmd-io read
+3.0 to +4.9 % (gk115, gk122, gk123), under their 5 % allowance, so the gate passed all six;
in gk123 both read a 99 % interval above 0 (+1.0 to +6.8 %, +2.7 to +7.1 %) where their four
healthy runs' intervals all reached below 0. Tightening the allowance would turn the host's
A/A scatter into FAILs (l3fwd-ip4 read +4.0 % A/A on the half-speed host, gk25); the notice
fails nothing, and a CI stage that sees it on two commits in a row sees a trend.

>>> from dpgate.telemetry.paired_estimate import PairedCpp
>>> seen = PairedCpp(0.039, 0.010, 0.068, 16)  # l3fwd-ip4 "+5 %", gk123
>>> rise_seen(seen, 0.05)
'a rise the pairs agree on (99 % CI above 0), within the allowed +5.0 %'
>>> rise_seen(PairedCpp(0.003, -0.035, 0.042, 16), 0.05)  # a healthy run: nothing seen
''
>>> rise_seen(PairedCpp(0.08, 0.05, 0.11, 16), 0.05)  # beyond the allowance: the FAIL says it
''
>>> rise_seen(PairedCpp(0.039, 0.010, 0.068, 16, disturbance=0.6), 0.05, dmax=0.1)  # beside a neighbour
''
"""

from __future__ import annotations

from typing import Optional

from dpgate.telemetry.paired import verdict
from dpgate.telemetry.paired_estimate import PairedCpp

#: The record's property: True when a PASS of the paired check saw a rise (:func:`rise_seen`).
RISE_SEEN = "cpp_paired_rise_seen"


def rise_seen(est: Optional[PairedCpp], max_rise: float, dmax: Optional[float] = None) -> str:
    """Why ``est`` passes at ``max_rise`` although the pairs agree it rose ("" when it does not
    pass there, or no rise is sure): :func:`~dpgate.telemetry.paired.verdict` would FAIL it at
    an allowance of 0 (its interval above 0, as measured above 0, at one core speed above 0 at
    saturation, no neighbour beyond ``dmax``, the kernel reference or the busy cycles as for a
    FAIL) and PASSes it at ``max_rise``."""
    if est is None or verdict(est, max_rise, dmax)[0] != "PASS":
        return ""
    if verdict(est, 0.0, dmax)[0] != "FAIL":
        return ""
    allowed = f"within the allowed {max_rise * 100:+.1f} %"
    busy = est.also
    if busy is not None and est.low <= 0 < busy.low:  # the busy cycles saw it, not the verdict's figure
        return f"a rise the busy cycles' pairs agree on ({busy.describe()}), {allowed}"
    return f"a rise the pairs agree on (99 % CI above 0), {allowed}"
