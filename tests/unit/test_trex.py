"""TRex driver through a FAKE client and a FAKE trex.stl.api module (no TRex server here;
real validation needs a lab, see docs/lab.md)."""

import types

import pytest

from dpgate.config.topology import load_topology
from dpgate.model.errors import EnvironmentProblem, TrialError
from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex.driver import TrexGenerator, explain_trex_error, import_trex_api, latency_summary

TOPO = "topologies/lab-2node.example.yaml"


def fake_api():
    """A stand-in for trex.stl.api: every constructor records its keyword arguments."""
    api = types.SimpleNamespace()
    for name in ("STLStream", "STLPktBuilder", "STLTXCont", "STLVmFlowVar", "STLVmWrFlowVar", "STLVmFixIpv4",
                 "STLFlowLatencyStats"):
        setattr(api, name, (lambda n: lambda *a, **k: (n, a, k))(name))
    api.STLScVmRaw = lambda cmds: ("STLScVmRaw", cmds)
    return api


class FakeTrexClient:
    """Records calls; returns TRex-shaped stats (per-port opackets/ipackets/oerrors/ierrors)."""

    def __init__(self, forward=1.0, send=1.0, stretch_s=0.0, fail=None, ierrors=0):
        self.calls = []
        self.forward, self.send, self.stretch_s, self.fail, self.ierrors = forward, send, stretch_s, fail, ierrors
        self.stretches_left = 99 if stretch_s else 0

    def _rec(self, name, **k):
        self.calls.append((name, k))
        if self.fail and self.fail[0] == name:
            raise RuntimeError(self.fail[1])

    def connect(self):
        self._rec("connect")

    def reset(self, ports):
        self._rec("reset", ports=ports)

    def add_streams(self, streams, ports):
        self._rec("add_streams", streams=streams, ports=ports)

    def clear_stats(self):
        self._rec("clear_stats")

    def start(self, ports, mult, duration, force=False):
        self._rec("start", ports=ports, mult=mult, duration=duration)
        self.pps, self.duration, self.tx_ports = float(mult[:-3]), duration, ports

    def wait_on_traffic(self, ports, rx_delay_ms):
        self._rec("wait_on_traffic", ports=ports, rx_delay_ms=rx_delay_ms)
        if self.stretches_left:
            import time

            time.sleep(self.stretch_s)
            self.stretches_left -= 1

    def get_stats(self):
        self._rec("get_stats")
        sent = int(self.pps * self.duration * self.send)
        out = {}
        for p in (0, 1):
            tx = sent if p in self.tx_ports else 0
            rx = int(sent * self.forward) if (1 - p) in self.tx_ports else 0
            out[p] = {"opackets": tx, "ipackets": rx, "oerrors": 0, "ierrors": self.ierrors if rx else 0}
        return out

    def disconnect(self):
        self._rec("disconnect")


def gen(client, kind="ip4", size=64, bidir=False, **kw):
    topo = load_topology(TOPO)
    return TrexGenerator(topo, make_profile(kind, size, bidirectional=bidir), client=client, api=fake_api(),
                         settle_s=0.0, rx_delay_ms=0, **kw)


def test_trial_discipline_order_and_counts():
    c = FakeTrexClient(forward=0.99)
    r = gen(c).measure(1e6, 2.0)
    names = [n for n, _ in c.calls]
    assert names[:3] == ["connect", "reset", "add_streams"]
    assert names[3:] == ["clear_stats", "start", "wait_on_traffic", "get_stats"]  # clear before start
    start = dict(c.calls[4][1])
    assert start["mult"] == "1000000.000pps" and start["duration"] == 2.0 and start["ports"] == [0]
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


def test_stretching_is_retried_then_fails():
    c = FakeTrexClient(stretch_s=0.35)
    c.stretches_left = 1
    r = gen(c, max_retries=3).measure(1e3, 0.1)
    assert r.details["attempt"] == 2 and [n for n, _ in c.calls].count("start") == 2
    c2 = FakeTrexClient(stretch_s=0.35)
    with pytest.raises(TrialError, match="stretched the trial duration 2 times"):
        gen(c2, max_retries=2).measure(1e3, 0.1)


def test_l2_streams_write_one_flow_variable_pairwise_into_both_macs():
    c = FakeTrexClient()
    gen(c, kind="l2", size=64).connect()
    streams = dict(c.calls[2][1])["streams"]
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
    streams = dict(c.calls[2][1])["streams"]
    sizes = [len(s[2]["packet"][2]["pkt_buffer"]) + 4 for s in streams]
    weights = [s[2]["mode"][2]["pps"] for s in streams]
    assert sizes == [64, 570, 1518] and weights == pytest.approx([28 / 48, 16 / 48, 4 / 48])
    vm = streams[0][2]["packet"][2]["vm"][1]
    assert vm[0][2]["max_value"] == 62499
    assert [cmd[0] for cmd in vm] == ["STLVmFlowVar", "STLVmWrFlowVar", "STLVmWrFlowVar", "STLVmFixIpv4"]
    assert {cmd[2]["pkt_offset"] for cmd in vm[1:3]} == {26, 30}


@pytest.mark.parametrize("text, cls, words", [
    ("Connection refused", EnvironmentProblem, "unreachable"),
    ("Port 0 is not owned by you", EnvironmentProblem, "port busy"),
    ("link is DOWN on port 1", EnvironmentProblem, "link down"),
    ("RPC API version mismatch: server 5.1 client 4.1", EnvironmentProblem, "API mismatch"),
    ("something else", TrialError, "TRex error"),
])
def test_trex_errors_are_one_clear_message(text, cls, words):
    e = explain_trex_error(RuntimeError(text), "10.0.0.9")
    assert isinstance(e, cls) and words in str(e) and "10.0.0.9" in str(e)


def test_connect_failure_surfaces_as_clear_error():
    c = FakeTrexClient(fail=("connect", "Connection refused"))
    with pytest.raises(EnvironmentProblem, match="unreachable"):
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


class _TruncatingClient(FakeTrexClient):
    """FAKE client that sends ``short`` packets fewer per port than rate x duration."""

    def __init__(self, short, **kw):
        super().__init__(**kw)
        self.short = short

    def get_stats(self):
        out = super().get_stats()
        for p in out:
            if out[p]["opackets"]:
                out[p]["opackets"] -= self.short
            if out[p]["ipackets"]:
                out[p]["ipackets"] -= self.short
        return out


def test_a_packet_or_two_short_per_port_is_trex_granularity_not_loss():
    r = gen(_TruncatingClient(1), bidir=True).measure(2e6, 1.0)
    assert r.loss_packets == 0 and r.details["rounding_packets"] == 2 and r.intended_packets == 1_999_998
    r3 = gen(_TruncatingClient(3), bidir=True).measure(2e6, 1.0)  # 6 short: more than 2 per port
    assert r3.loss_packets == 6 and "rounding_packets" not in r3.details and r3.intended_packets == 2_000_000
