"""TRex latency streams (pg_id per direction) through FAKE client/API objects; real
validation needs a lab (docs/lab.md)."""

from __future__ import annotations

import pytest
from hdrh.histogram import HdrHistogram
from test_trex import FakeTrexClient, fake_api

from dpgate.config.topology import load_topology
from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex.driver import TrexGenerator

TOPO = "topologies/lab-2node.example.yaml"


def _hdrh():
    h = HdrHistogram(1, 10_000_000, 3)
    for v in [5] * 50 + [8] * 49 + [300]:
        h.record_value(v)
    return h.encode()


def latency_stats(**errors):
    """TRex-shaped ``stats["latency"]`` for pg_ids 1 and 2 (min 5, avg 6.5, max 300 us, hdrh)."""
    lat = {
        "latency": {"total_min": 5, "average": 6.5, "total_max": 300, "hdrh": _hdrh()},
        "err_cntrs": {"dropped": 0, **errors},
    }
    return {1: lat, 2: lat}


class FakeTrexClientWithLatency(FakeTrexClient):
    """Fake client that also returns TRex-shaped ``stats["latency"][pg_id]``."""

    def get_stats(self):
        out = super().get_stats()
        out["latency"] = latency_stats(out_of_order=2)
        return out


def _gen(client, bidir=True, kind="ip4", size=64, latency_pps=10_000):
    return TrexGenerator(
        load_topology(TOPO),
        make_profile(kind, size, bidirectional=bidir),
        client=client,
        api=fake_api(),
        settle_s=0.0,
        rx_delay_ms=0,
        latency_pps=latency_pps,
    )


def _streams(client):
    return [(k["ports"], k["streams"]) for n, k in client.calls if n == "add_streams"]


def test_latency_streams_per_direction_with_pg_ids_and_absolute_rates():
    c = FakeTrexClientWithLatency()
    r = _gen(c).measure(2e6, 1.0)
    added = _streams(c)
    assert [p for p, _ in added] == [[0], [1]]
    for i, (_, streams) in enumerate(added):
        data, lat = streams[:-1], streams[-1]
        assert lat[2]["flow_stats"] == ("STLFlowLatencyStats", (), {"pg_id": i + 1})
        assert lat[2]["mode"][2]["pps"] == 10_000
        # data + latency = the per-port rate, so mult="<R>pps" scales by exactly 1
        assert sum(s[2]["mode"][2]["pps"] for s in data) + 10_000 == pytest.approx(1e6)
    start = next(k for n, k in c.calls if n == "start")
    assert start["mult"] == "1000000.000pps"
    names = [n for n, _ in c.calls]
    assert names.index("remove_all_streams") < names.index("add_streams") < names.index("clear_stats")
    lat = r.details["latency"]["0->1"]
    assert (lat["min_us"], lat["avg_us"], lat["max_us"]) == (5, 6.5, 300)
    assert lat["p50_us"] == 5 and lat["p99.9_us"] == pytest.approx(300, rel=0.01)
    assert lat["errors"] == {"out_of_order": 2} and "1->0" in r.details["latency"]


def test_latency_rate_is_capped_at_a_tenth_of_a_low_port_rate():
    c = FakeTrexClientWithLatency()
    r = _gen(c, bidir=False).measure(20_000, 1.0)
    ((_, streams),) = _streams(c)
    assert streams[-1][2]["mode"][2]["pps"] == pytest.approx(2_000) and r.details["latency_pps"] == 2_000


def test_imix_latency_stream_uses_the_smallest_frame_and_data_keeps_weights():
    c = FakeTrexClientWithLatency()
    _gen(c, bidir=False, size="IMIX").measure(480_000, 1.0)
    ((_, streams),) = _streams(c)
    pps = [s[2]["mode"][2]["pps"] for s in streams[:-1]]
    assert pps == pytest.approx([x * (480_000 - 10_000) / 48 for x in (28, 16, 4)])
    lat_pkt = streams[-1][2]["packet"][2]["pkt_buffer"]
    assert len(lat_pkt) in (60, 64)  # 64 B frame (with or without FCS)


def test_missing_latency_stats_are_reported_not_crashed():
    c = FakeTrexClient()
    c.remove_all_streams = lambda ports: None
    r = _gen(c, bidir=False).measure(1e6, 1.0)
    assert "no latency stats" in r.details["latency"]["0->1"]["error"]


def test_lbr_trex_client_is_imported_to_set_up_the_trex_path():
    from dpgate.traffic.trex.driver import import_trex_api

    seen, state = [], {"lbr": False}

    def importer(name):
        seen.append(name)
        if name == "lbr_trex_client":
            state["lbr"] = True
            return object()
        if name == "trex.stl.api" and state["lbr"]:
            return "API"
        raise ImportError(name)

    assert import_trex_api(None, importer) == "API"
    assert seen == ["trex.stl.api", "lbr_trex_client", "trex.stl.api"]


def test_link_down_before_trials_is_one_clear_error():
    from dpgate.model.errors import EnvironmentProblem

    c = FakeTrexClient()
    c.get_port_attr = lambda p: {"link": "DOWN" if p == 1 else "UP"}
    with pytest.raises(EnvironmentProblem, match=r"link down.*\[1\]"):
        TrexGenerator(
            load_topology(TOPO),
            make_profile("ip4", 64, bidirectional=True),
            client=c,
            api=fake_api(),
            settle_s=0.0,
            rx_delay_ms=0,
            link_wait_s=0.6,
        ).measure(1e6, 1.0)
    assert "start" not in [n for n, _ in c.calls]
