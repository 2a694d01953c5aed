"""TRex driver through the FAKE client of trex_fake.py (it refuses what TRex v3.08 refuses) and
a FAKE or the REAL trex.stl.api module. The real server runs in tests/integration/test_tx_trex.py."""

import pytest
from trex_fake import FakeTrexClient, fake_api  # noqa: F401  (re-exported for test_labrobot/test_trex_latency)

from dpgate.config.topology import load_topology
from dpgate.model.errors import EnvironmentProblem, TrialError
from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex.driver import TrexGenerator, explain_trex_error, import_trex_api, latency_summary

TOPO = "topologies/lab-2node.example.yaml"


def gen(client, kind="ip4", size=64, bidir=False, **kw):
    topo = load_topology(TOPO)
    return TrexGenerator(
        topo,
        make_profile(kind, size, bidirectional=bidir),
        client=client,
        api=fake_api(),
        settle_s=0.0,
        rx_delay_ms=0,
        **kw,
    )


def test_trial_discipline_order_and_counts():
    c = FakeTrexClient(forward=0.99)
    r = gen(c).measure(1e6, 2.0)
    names = [n for n, _ in c.calls]
    assert names[:4] == ["connect", "acquire", "reset", "add_streams"]  # acquire (no force) before reset
    assert names[4:] == ["clear_stats", "start", "wait_on_traffic", "get_stats"]  # clear before start
    start = dict(c.calls[5][1])
    assert start["mult"] == "1000000.000pps" and start["duration"] == 2.0 and start["ports"] == [0]
    assert start["force"] is False and dict(c.calls[1][1])["force"] is False
    assert r.intended_packets == 2_000_000 and r.tx_packets == 2_000_000 and r.rx_packets == 1_980_000
    assert r.loss_ratio == pytest.approx(0.01) and r.limited_by is None


def test_bidirectional_splits_the_load_over_both_ports():
    c = FakeTrexClient()
    r = gen(c, bidir=True).measure(2e6, 1.0)
    assert dict(c.calls[-3][1])["mult"] == "1000000.000pps" and dict(c.calls[-3][1])["ports"] == [0, 1]
    assert r.tx_packets == 2_000_000 and r.rx_packets == 2_000_000 and r.loss_packets == 0
    assert [n for n, _ in c.calls].count("add_streams") == 2


def test_rate_is_clamped_to_line_rate_and_marked():
    c = FakeTrexClient()
    r = gen(c, size=64).measure(20e6, 1.0)  # 10GE 64 B line rate 14.88 Mpps (pps_limit 14880952)
    clamped = r.details["clamped_per_port_pps"]
    assert clamped == pytest.approx(14_880_952, rel=1e-6)
    assert r.limited_by == "generator" and r.tg_shortfall == 20_000_000 - 14_880_952
    g = gen(FakeTrexClient(), size=1518)
    assert g.port_limit_pps(0) == pytest.approx(10e9 / ((1518 + 20) * 8))


def test_tg_port_errors_are_attributed_to_the_tg():
    r = gen(FakeTrexClient(ierrors=17)).measure(1e5, 1.0)
    assert r.tg_drops == 17


def test_stretching_is_retried_then_marked_generator_limited():
    c = FakeTrexClient(stretch_s=0.35)
    c.stretches_left = 1
    r = gen(c, max_retries=3).measure(1e3, 0.1)
    assert r.details["attempt"] == 2 and [n for n, _ in c.calls].count("start") == 2 and r.limited_by is None
    c2 = FakeTrexClient(stretch_s=0.35)
    r2 = gen(c2, max_retries=2).measure(1e3, 0.1)  # the search goes on: the load is the TG's limit
    assert r2.limited_by == "generator" and r2.details["stretched"] and r2.details["stretched_attempts"] == 2


def test_l2_streams_write_one_flow_variable_pairwise_into_both_macs():
    c = FakeTrexClient()
    gen(c, kind="l2", size=64).connect()
    streams = dict(next(k for n, k in c.calls if n == "add_streams"))["streams"]
    assert len(streams) == 1
    pkt = streams[0][2]["packet"]
    vm = pkt[2]["vm"][1]
    assert vm[0][2] == {"name": "flow", "min_value": 0, "max_value": 3124, "size": 4, "op": "inc"}
    assert sorted(cmd[2]["pkt_offset"] for cmd in vm[1:]) == [2, 8]
    assert all(cmd[2]["fv_name"] == "flow" for cmd in vm[1:])
    assert len(pkt[2]["pkt_buffer"]) == 60


def test_ip4_imix_streams_weights_and_checksum_fix():
    c = FakeTrexClient()
    gen(c, kind="ip4", size="IMIX").connect()
    streams = dict(next(k for n, k in c.calls if n == "add_streams"))["streams"]
    sizes = [len(s[2]["packet"][2]["pkt_buffer"]) + 4 for s in streams]
    weights = [s[2]["mode"][2]["pps"] for s in streams]
    assert sizes == [64, 570, 1518] and weights == pytest.approx([28 / 48, 16 / 48, 4 / 48])
    vm = streams[0][2]["packet"][2]["vm"][1]
    assert vm[0][2]["max_value"] == 62499
    assert [cmd[0] for cmd in vm] == ["STLVmFlowVar", "STLVmWrFlowVar", "STLVmWrFlowVar", "STLVmFixIpv4"]
    assert {cmd[2]["pkt_offset"] for cmd in vm[1:3]} == {26, 30}


@pytest.mark.parametrize(
    "text, cls, words",
    [
        (
            "*** [RPC] - Failed to get server response from tcp://10.0.0.9:4501",
            EnvironmentProblem,
            "unreachable",
        ),
        ("Port 0 : *** port is already taken by 'alice'", EnvironmentProblem, "port 0 is held by 'alice'"),
        ("port(s) [0]: must be acquired", EnvironmentProblem, "port busy"),
        (
            "port(s) [1]: link is DOWN - check the connection or specify 'force'",
            EnvironmentProblem,
            "link down",
        ),
        ("Mismatch between client and server versions", EnvironmentProblem, "API mismatch"),
        ("something else", TrialError, "TRex error"),
    ],
)
def test_trex_errors_are_one_clear_message(text, cls, words):
    e = explain_trex_error(RuntimeError(text), "10.0.0.9")
    assert isinstance(e, cls) and words in str(e) and "10.0.0.9" in str(e)


def test_connect_failure_surfaces_as_clear_error():
    c = FakeTrexClient(unreachable=True)
    with pytest.raises(EnvironmentProblem, match="unreachable.*Failed to get server response"):
        gen(c).measure(1e5, 1.0)


def test_old_pypi_client_is_refused_with_a_fix():
    def importer(name):
        if name == "trex_stl_lib":
            return object()
        raise ImportError(name)

    with pytest.raises(EnvironmentProblem, match="RPC API 4.1.*lbr-trex-client"):
        import_trex_api(None, importer)

    def nothing(name):
        raise ImportError(name)

    with pytest.raises(EnvironmentProblem, match="no TRex v3.x Python client"):
        import_trex_api(None, nothing)
    with pytest.raises(EnvironmentProblem, match="does not exist"):
        import_trex_api("/nonexistent/trex", nothing)


def test_latency_summary_decodes_hdrh():
    from hdrh.histogram import HdrHistogram

    h = HdrHistogram(1, 10_000_000, 3)
    for v in [10] * 90 + [100] * 9 + [1000]:
        h.record_value(v)
    s = latency_summary({"total_min": 10, "average": 20.0, "total_max": 1000, "hdrh": h.encode()})
    assert s["min_us"] == 10 and s["p50_us"] == 10 and s["p99_us"] == pytest.approx(100, rel=0.01)
    assert s["p99.9_us"] == pytest.approx(1000, rel=0.01)


def _TruncatingClient(short):
    """FAKE client that sends ``short`` packets fewer per port than rate x duration."""
    return FakeTrexClient(short=short)


def test_a_packet_or_two_short_per_port_is_trex_granularity_not_loss():
    r = gen(_TruncatingClient(1), bidir=True).measure(2e6, 1.0)
    assert r.loss_packets == 0 and r.details["rounding_packets"] == 2 and r.intended_packets == 1_999_998
    r3 = gen(_TruncatingClient(3), bidir=True).measure(2e6, 1.0)  # 6 short: more than 2 per port
    assert r3.loss_packets == 6 and "rounding_packets" not in r3.details and r3.intended_packets == 2_000_000


# -- what the real TRex refuses, through the fake --------------------------------------


def test_port_held_by_another_client_is_busy_naming_the_holder_and_never_stolen():
    c = FakeTrexClient(held_by={1: "alice"})
    with pytest.raises(EnvironmentProblem, match="port 1 is held by 'alice'"):
        gen(c, bidir=True).measure(1e5, 1.0)
    assert c.stolen == [] and "reset" not in [n for n, _ in c.calls]


def test_start_is_never_forced_so_a_down_link_is_refused_by_trex():
    c = FakeTrexClient(link_down={1})
    c.get_port_attr = lambda p: {"link": "UP"}  # a link that drops after the check
    with pytest.raises(EnvironmentProblem, match=r"link down.*port\(s\) \[1\]"):
        gen(c, bidir=True).measure(1e5, 1.0)
    assert all(k["force"] is False for n, k in c.calls if n == "start")


def test_l2_profile_turns_the_ports_promiscuous_after_reset():
    c = FakeTrexClient()
    g = gen(c, kind="l2", bidir=True)
    g.connect()
    names = [n for n, _ in c.calls]
    assert names.index("reset") < names.index("set_port_attr") and c.prom == {0: True, 1: True}
    assert g.promiscuous is True
    c2 = FakeTrexClient()
    gen(c2, kind="ip4").connect()
    assert "set_port_attr" not in [n for n, _ in c2.calls]


def test_the_fake_refuses_an_unsigned_add_val_like_the_server():
    c = FakeTrexClient()
    c.acquired.add(0)
    bad = (
        "STLStream",
        (),
        {
            "mode": ("STLTXCont", (), {"pps": 1}),
            "packet": (
                "STLPktBuilder",
                (),
                {"vm": ("STLScVmRaw", [("STLVmWrFlowVar", (), {"add_val": 3323068417})])},
            ),
        },
    )
    with pytest.raises(RuntimeError, match="'add_value' is 'uint', expecting 'int'"):
        c.add_streams([bad], ports=[0])
    gen(c).measure(1e5, 1.0)  # ours pass: 198.18.0.1 is sent as 198.18.0.1 - 2**32


def test_frames_coming_back_on_the_sending_port_are_lost_not_delivered():
    c = FakeTrexClient(forward=0.5, bounce=0.5)  # an NF that sends half back where it came from
    r = gen(c, bidir=True).measure(2e5, 1.0)
    assert r.tx_packets == 200_000 and r.rx_packets == 100_000 and r.loss_ratio == pytest.approx(0.5)
    assert r.details["misdelivered"] == 100_000
    assert r.details["rx_per_direction"] == {"0->1": 50_000, "1->0": 50_000}


def test_rx_delay_is_asked_only_with_flow_stat_streams():
    g = TrexGenerator(
        load_topology(TOPO),
        make_profile("ip4", 64),
        client=FakeTrexClient(),
        api=fake_api(),
        settle_s=0.0,
        rx_delay_ms=100,
    )
    g.measure(1e5, 1.0)
    assert dict(next(k for n, k in g.client.calls if n == "wait_on_traffic"))["rx_delay_ms"] is None
    g2 = TrexGenerator(
        load_topology(TOPO),
        make_profile("ip4", 64, bidirectional=True),
        client=FakeTrexClient(),
        api=fake_api(),
        settle_s=0.0,
        rx_delay_ms=100,
    )
    g2.measure(1e5, 1.0)
    assert dict(next(k for n, k in g2.client.calls if n == "wait_on_traffic"))["rx_delay_ms"] == 100


def test_a_tx_shortfall_of_trex_itself_marks_the_trial_generator_limited():
    r = gen(FakeTrexClient(send=0.7)).measure(1e5, 1.0)
    assert r.limited_by == "generator" and r.details["tg_tx_shortfall"] == 30_000
    assert gen(FakeTrexClient()).measure(1e5, 1.0).limited_by is None


def test_the_generator_names_itself_from_the_server_version():
    g = gen(FakeTrexClient())
    assert g.tg_name == "TRex"
    r = g.measure(1e5, 1.0)
    assert g.tg_name == "TRex v3.08" and r.details["tg"] == "TRex v3.08"


def test_late_frames_are_waited_for_until_the_rx_counters_stop_moving():
    class Late(FakeTrexClient):
        reads = 0

        def get_stats(self):
            out = super().get_stats()
            self.reads += 1
            late = max(0, 3 - self.reads) * 1000  # 2000, 1000, then 0 frames still in flight
            out[1]["ipackets"] -= late
            return out

    c = Late()
    r = TrexGenerator(
        load_topology(TOPO), make_profile("ip4", 64), client=c, api=fake_api(), settle_s=2.0, rx_delay_ms=0
    ).measure(1e5, 1.0)
    assert r.rx_packets == 100_000 and r.loss_packets == 0 and c.reads == 4  # 3rd and 4th read agree


def test_a_second_session_on_the_same_ports_waits_for_the_first_to_disconnect():
    server: dict = {}
    first = gen(FakeTrexClient(shared=server))
    first.measure(1e5, 1.0)
    second = gen(FakeTrexClient(shared=server))
    with pytest.raises(EnvironmentProblem, match="port 0 is held by 'root'"):
        second.measure(1e5, 1.0)
    first.disconnect()
    assert second.measure(1e5, 1.0).loss_packets == 0


def test_a_dead_server_ends_the_trial_and_the_session_without_talking_to_it():
    class Dead:
        def alive(self):
            return False

        def describe_exit(self):
            return "pid 7 killed by signal 9; log /x/server.log"

    c = FakeTrexClient(stretch_s=5.0)  # traffic "active" until the death is noticed
    g = TrexGenerator(
        load_topology(TOPO),
        make_profile("ip4", 64),
        client=c,
        api=fake_api(),
        settle_s=0.0,
        rx_delay_ms=0,
        trex_server=Dead(),
    )
    with pytest.raises(
        TrialError, match=r"TRex server 10.30.51.20 died during the trial at 100000 pps \(pid 7 killed"
    ):
        g.measure(1e5, 1.0)
    assert ("disconnect", {"stop_traffic": False, "release_ports": False}) in c.calls and not g.connected
