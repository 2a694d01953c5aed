"""pcm-memory SKT/NODE labels, pcm-pcie inconsistent rows, toplev ranges (issue 15, part 3).

Fixture origins: tests/fixtures/telemetry/README.md.
"""

import pytest
from helpers import fixture_reader

from dpgate.telemetry import TelemetryError
from dpgate.telemetry.pcm import (
    WRAP_LIMIT,
    mem_bytes_per_packet,
    parse_memory,
    parse_pcie,
)
from dpgate.telemetry.tmam import parse_toplev_csv

fixture = fixture_reader("telemetry")


def test_pcm_memory_skt_labels_of_pcm_202502_and_later():
    m = parse_memory(fixture("pcm-memory-skt-table.txt"))
    assert m.read_mbps == {"0": 11186.61, "1": 11236.94} and m.write_mbps == {"0": 13250.08, "1": 13265.49}
    assert m.total_bytes_per_s == pytest.approx(48939.12e6)  # = the "System Memory Throughput" line
    assert mem_bytes_per_packet(m, 29.8e6) == pytest.approx(48939.12e6 / 29.8e6)


def test_pcm_memory_node_labels_of_old_pcm():
    m = parse_memory(fixture("pcm-memory-pcm74-node-table.txt"))  # intel/pcm#74: 'NODE0 Mem Write (MB/s) :'
    assert (m.read_mbps, m.write_mbps) == ({"0": 2.06}, {"0": 1.07})
    assert m.total_bytes_per_s == pytest.approx(3.13e6)
    skx = parse_memory(fixture("pcm-memory-skx-table.txt"))
    assert skx.read_mbps == {"0": 1200.50, "1": 300.00}


def test_pcm_memory_csv_and_a_negative_socket_bandwidth():
    m = parse_memory(fixture("pcm-memory-skx-csv.csv"))
    assert set(m.read_mbps) == {"0", "1"}
    bad = "|-- SKT  0 Mem Read (MB/s) :    -1.00 --|\n|-- SKT  0 Mem Write(MB/s) :    10.00 --|\n"
    with pytest.raises(TelemetryError, match="socket 0 read bandwidth -1 MB/s is negative"):
        parse_memory(bad)


def test_pcie_miss_a_hair_above_total_is_a_recorded_correction():
    # seed 000 Figure 24: WiL (Miss) 1892 K over (Total) 1891 K
    s = parse_pcie(fixture("pcm-pcie-seed000-fig24-l3fwd.txt"))
    assert s.miss("WiL") == s.total("WiL") == 1891e3
    assert len(s.corrections) == 1 and "socket 0 WiL Miss 1.892e+06 > Total 1.891e+06" in s.corrections[0]


def test_pcie_miss_above_total_beyond_rounding_is_an_error():
    text = "Skt,PCIRdCur,ItoM\n0,1000,400(Total)\n0,10,500(Miss)\n0,990,0(Hit)\n"
    with pytest.raises(TelemetryError, match="CSV line 3: socket 0 ItoM Miss 500 > Total 400"):
        parse_pcie(text)


@pytest.mark.parametrize(
    "text",
    [
        "Skt,PCIRdCur,ItoM\n0,18446744073709551000,400\n",  # CSV: 2^64 - 616
        " Skt | PCIeRdCur |  ItoM \n 0      18446744 T    33 M \n",  # table: unit_format of 2^64
    ],
)
def test_pcie_wrapped_counters_are_refused(text):
    with pytest.raises(TelemetryError, match="near 2\\^64: a wrapped counter"):
        parse_pcie(text)
    assert WRAP_LIMIT == 2**60


def test_toplev_public_csv_and_range_checks():
    t = parse_toplev_csv(fixture("toplev-pmt-public.csv"))
    assert (t.frontend_bound, t.bad_speculation, t.backend_bound, t.retiring) == pytest.approx(
        (0.284, 0, 0.217, 0.499)
    )
    head = "Area,Value,Unit,Description,Sample,Stddev,Multiplex,Bottleneck,Idle\n"
    rows = (
        "Frontend_Bound,{},% Slots,,,0,3,,\nBad_Speculation,0,% Slots,,,0,3,,\n"
        "Backend_Bound,{},% Slots,,,0,3,,\nRetiring,50,% Slots,,,0,3,,\n"
    )
    with pytest.raises(TelemetryError, match="Frontend_Bound 150 % of slots is outside 0..100 %"):
        parse_toplev_csv(head + rows.format(150, -100))  # adds up to 100 %, still refused
    assert parse_toplev_csv(head + rows.format(20, 30)).backend_bound == pytest.approx(0.3)
