"""Streams built with the REAL TRex v3.08 client library (trex.stl.api from the TRex install),
checked in the JSON the client sends to the server. Skips in one line without TRex."""

from __future__ import annotations

import struct
import sys

import pytest
from trex_fake import FakeTrexClient

from dpgate.config.topology import load_topology
from dpgate.traffic.profiles import directions_for, make_profile
from dpgate.traffic.trex.driver import TrexGenerator
from dpgate.traffic.trex.install import import_trex_api, trex_missing
from dpgate.traffic.trex.streams import StreamBuilder

if trex_missing():
    pytest.skip(trex_missing(), allow_module_level=True)
TOPO = "topologies/lab-2node.example.yaml"


@pytest.fixture(scope="module")
def api():
    return import_trex_api()


def _json(api, kind, size=64, pg_ids=None):
    topo = load_topology(TOPO)
    p = make_profile(kind, size)
    return [s.to_json() for s in StreamBuilder(api).streams(p, directions_for(topo, p)[0], pg_ids=pg_ids)]


def test_ip4_field_engine_values_are_signed_32_bit_as_the_server_parses_them(api):
    (j,) = _json(api, "ip4")
    adds = [i["add_value"] for i in j["vm"]["instructions"] if i["type"] == "write_flow_var"]
    assert adds == [3323068417 - 2**32, 3323133953 - 2**32] and all(-2**31 <= a < 2**31 for a in adds)
    assert j["vm"]["instructions"][-1] == {"type": "fix_checksum_ipv4", "pkt_offset": 14}


def test_streams_keep_the_packets_own_macs(api):
    for kind in ("ip4", "l2"):
        (j,) = _json(api, kind)
        assert j["flags"] & 1 == 1 and (j["flags"] >> 1) & 3 == api.STLStreamDstMAC_PKT  # src by pkt, dst PKT


def test_ip4_template_carries_udp_checksum_zero_l2_a_valid_one(api):
    import base64

    (ip4,) = _json(api, "ip4")
    raw = base64.b64decode(ip4["packet"]["binary"])
    assert struct.unpack("!H", raw[40:42])[0] == 0
    (l2,) = _json(api, "l2")
    assert struct.unpack("!H", base64.b64decode(l2["packet"]["binary"])[40:42])[0] != 0


def test_flow_stats_per_data_stream_and_latency_streams(api):
    js = _json(api, "ip4", "IMIX", pg_ids=[100, 101, 102])
    assert [(j["flow_stats"]["stream_id"], j["flow_stats"]["rule_type"]) for j in js] == \
        [(100, "stats"), (101, "stats"), (102, "stats")]
    topo = load_topology(TOPO)
    p = make_profile("ip4", 64)
    lat = StreamBuilder(api).latency_stream(p, directions_for(topo, p)[0], 1, 1000).to_json()
    assert lat["flow_stats"]["rule_type"] == "latency" and lat["mode"]["rate"] == {"type": "pps", "value": 1000}


def test_the_driver_builds_real_streams_that_the_fake_server_accepts(api):
    c = FakeTrexClient()
    g = TrexGenerator(load_topology(TOPO), make_profile("ip4", "IMIX", bidirectional=True), client=c, api=api,
                      settle_s=0.0, rx_delay_ms=0, latency_pps=1000)
    r = g.measure(1e6, 1.0)
    assert r.tx_packets == 1_000_000 and r.rx_packets == 1_000_000 and r.details["tg"] == "TRex v3.08"


def test_importing_trex_leaves_dpgate_its_pyyaml(api, tmp_path):
    import yaml

    from dpgate.config import schema

    assert yaml.__version__.startswith(("5.", "6.")) and sys.modules["yaml"] is yaml
    f = tmp_path / "x.yaml"
    f.write_text("a: [1, 2]\n")
    assert schema.read_yaml(str(f), "fix") == {"a": [1, 2]}


@pytest.mark.parametrize("kind, bidir, lat", [("l2", True, 0), ("ip4", False, 1000), ("ip4", True, 0)])
def test_every_client_call_of_the_driver_binds_to_the_real_stlclient(api, kind, bidir, lat):
    """The calls the driver makes on the fake (names and keywords) bind to the REAL
    STLClient methods' signatures: the fake cannot accept a call the real client refuses."""
    import inspect

    calls = []

    class Spy(FakeTrexClient):
        def __getattribute__(self, name):
            attr = object.__getattribute__(self, name)
            if callable(attr) and not name.startswith("_") and hasattr(api.STLClient, name):
                def wrapped(*a, **k):
                    calls.append((name, a, k))
                    return attr(*a, **k)
                return wrapped
            return attr

    g = TrexGenerator(load_topology(TOPO), make_profile(kind, 64, bidirectional=bidir), client=Spy(), api=api,
                      settle_s=0.0, rx_delay_ms=0, latency_pps=lat)
    g.measure(1e5, 1.0)
    g.disconnect()
    names = {n for n, _, _ in calls}
    assert {"connect", "acquire", "reset", "start", "is_traffic_active", "wait_on_traffic", "get_stats"} <= names
    assert ("set_port_attr" in names) == (kind == "l2")
    for name, a, k in calls:
        inspect.signature(getattr(api.STLClient, name)).bind(None, *a, **k)  # raises TypeError on a mismatch
    start = next(k for n, _, k in calls if n == "start")
    assert "force" not in start and next(k for n, _, k in calls if n == "acquire")["force"] is False
