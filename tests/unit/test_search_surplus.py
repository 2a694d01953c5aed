"""A generator that sends a few packets more than intended (TRex rounds each stream's packet count
up: 150,002 sent for 150,000 intended, seen on the real TRex v3.08 in the lab on one machine) has
lost nothing: NDR is found. One packet really lost still fails the zero-loss goal."""

from dpgate.model.trial import TrialResult
from dpgate.search import find_ndr_pdr


def trial(load: float, duration: float, surplus: int, lost: int) -> TrialResult:
    n = int(round(load * duration))
    tx = n + surplus
    return TrialResult(
        intended_load_pps=load,
        intended_duration_s=duration,
        intended_packets=n,
        tx_packets=tx,
        rx_packets=tx - lost,
        loss_packets=lost,
        loss_ratio=lost / tx,
        tg_shortfall=0,
        actual_duration_s=duration,
    )


def test_surplus_packets_are_not_loss():
    res = find_ndr_pdr(lambda load, d: trial(load, d, surplus=2, lost=0), 9001, 150000, profile="per-commit")
    assert res.ndr == 150000 and res.pdr == 150000


def test_a_lost_packet_is_still_loss_with_a_surplus():
    res = find_ndr_pdr(lambda load, d: trial(load, d, surplus=2, lost=1), 9001, 150000, profile="per-commit")
    assert res.ndr is None and res.pdr == 150000
