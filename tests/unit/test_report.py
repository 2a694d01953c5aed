"""Sign-off report from fixture results: the HTML references PNGs that exist, tables carry
the seed's efficiency metrics and speedups, and (where Debian's chromium is installed, as
.ci/install does) the page renders headless to a PNG that shows the plots."""

import os
import re
import shutil
import subprocess

import pytest

from dpgate.model.errors import ConfigError
from dpgate.outputs.report import build_report, case_of, speedup_data
from dpgate.outputs.results import ResultStore
from dpgate.regression.history import add_to_history

NOT_SUPPORTED = "not supported (perf: cycles <not supported> (no CPU PMU on this host, e.g. a VM))"


def embedded_run(tmp_path, name, scale=1.0):
    """Embedded-like results: one SUT core, no PMU (telemetry 'not supported')."""
    out = tmp_path / name
    t0 = 1000 * len(list(tmp_path.iterdir()))  # each run starts at its own time
    s = ResultStore(str(out))
    for i, (size, ndr) in enumerate((("64B", 5.6e5), ("IMIX", 5.5e5), ("1518B", 4.2e5))):
        s.update(
            f"E.L.{size}-1c-linux-ip4-ndrpdr",
            suite="E.L",
            name=f"{size}-1c-linux-ip4-ndrpdr",
            nf="linux-ip4",
            status="PASS" if i else "FAIL",
            message="" if i else "NDR 0.5 Mpps < floor",
            started=t0 + i,
            testbed="embedded",
            metrics={
                "ndr_pps": ndr * scale,
                "pdr_pps": ndr * scale * 1.02,
                "cpp": 2.6e9 / (ndr * scale),
                "ipc": NOT_SUPPORTED,
                "tmam_retiring": NOT_SUPPORTED,
                "limited_by": "sut",
            },
        )
    return str(out)


# Lab-like results of one NF at 1/2/4 physical cores, HT off (NtNc) and on (2NtNc), with perf
# telemetry and TMAM as a host with a PMU reports them.
LAB = {  # name tag -> NDR pps
    "1t1c": 11.0e6,
    "2t1c": 13.2e6,
    "2t2c": 21.0e6,
    "4t2c": 25.0e6,
    "4t4c": 40.0e6,
    "8t4c": 46.0e6,
}


def lab_run(tmp_path, name):
    out = tmp_path / name
    s = ResultStore(str(out))
    for i, (tag, ndr) in enumerate(LAB.items()):
        test = f"64B-{tag}-eth-l2patch-ndrpdr"
        lat = {
            "directions": {
                "0->1": {"min_us": 5, "avg_us": 6.5, "p50_us": 5, "p99_us": 8, "p99.9_us": 300, "max_us": 300}
            },
            "load_pps": 0.9 * ndr,
        }
        s.update(
            f"L.V.{test}",
            suite="L.V",
            name=test,
            nf="vpp-l2patch",
            status="PASS",
            started=i,
            testbed="lab",
            latency={"90% PDR": lat} if tag == "1t1c" else None,
            metrics={
                "ndr_pps": ndr,
                "pdr_pps": ndr * 1.01,
                "cpp": 180.0,
                "ipc": 2.61,
                "ipp": 470.0,
                "cpp_measured": 180.1,
                "tmam_retiring": 0.52,
                "tmam_bad_speculation": 0.01,
                "tmam_frontend_bound": 0.07,
                "tmam_backend_bound": 0.40,
            },
        )
    return str(out)


def pngs_of(path):
    text = open(path).read()
    names = re.findall(r"src='([^']+\.png)'", text)
    for p in names:
        with open(os.path.join(os.path.dirname(path), p), "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n", p
    return text, names


def test_case_names_parse_like_csit():
    c = case_of({"name": "IMIX-4t2c-ethip4-ip4base-ndrpdr", "nf": "vpp-ip4", "metrics": {}})
    assert (c.nf, c.size, c.threads, c.cores, c.tag, c.ht) == ("vpp-ip4", "IMIX", 4, 2, "4T2C", True)
    e = case_of({"name": "64B-1c-linux-ip4-ndrpdr", "metrics": {}})
    assert (e.nf, e.tag, e.ht) == ("linux-ip4", "1C", False)


def test_embedded_report_has_plots_baseline_and_reasons(tmp_path):
    path = build_report(
        embedded_run(tmp_path, "cur"),
        str(tmp_path / "rep"),
        baseline=embedded_run(tmp_path, "base", scale=1.1),
    )
    text, pngs = pngs_of(path)
    assert pngs == ["efficiency.png", "nf-linux-ip4.png"]
    assert "0.560" in text and text.count("-9.1 %") >= 2  # NDR and PDR vs baseline
    assert "FAIL NDR 0.5 Mpps &lt; floor" in text  # gate verdicts, escaped
    assert "no CPU PMU on this host" in text  # IPC/TMAM reason, not a number
    assert "<td>n/s [1]</td>" in text and "n/s [1]: not supported (perf:" in text  # once, as a note
    assert "Speedups" in text and "Not applicable" in text  # one SUT core: no speedup plots
    assert "Latency" not in text  # tcpreplay measures none
    assert "2 of 3 tests passed" in text


def test_lab_report_has_speedups_tmam_and_efficiency(tmp_path):
    path = build_report(lab_run(tmp_path, "lab"), str(tmp_path / "rep"))
    text, pngs = pngs_of(path)
    assert set(pngs) == {
        "efficiency.png",
        "nf-vpp-l2patch.png",
        "ht-speedup.png",
        "multicore-vpp-l2patch-64B.png",
        "tmam.png",
    }
    assert "1.20x" in text  # HT speedup at 1 core: 13.2 / 11.0
    cells = re.sub(r"<td[^>]*>", "<td>", text)
    assert "no HT 4C</td><td>3.64x</td><td>4x</td><td>-9.1 %" in cells  # 40 / 11 vs perfect 4
    assert ">vpp-l2patch 64B HT 2C</td><td>1.89x</td><td>2x</td><td>-5.3 %" in cells  # 25 / 13.2 vs 2
    assert "52.0 %" in text and "40.0 %" in text  # TMAM table
    assert "64B-1t1c-eth-l2patch-ndrpdr 90% PDR</td><td>9.900</td><td>0-&gt;1</td><td>5</td><td>6.5" in cells
    assert "<td>470</td><td>2.61</td>" in cells  # IPP, IPC in the efficiency table


def test_speedup_data_pairs_ht_with_same_core_count(tmp_path):
    from dpgate.outputs.report import _cases

    ht, series = speedup_data(_cases(lab_run(tmp_path, "lab")))
    assert [k for k, _ in ht] == ["vpp-l2patch 64B 1C", "vpp-l2patch 64B 2C", "vpp-l2patch 64B 4C"]
    assert ht[2][1] == pytest.approx(46.0 / 40.0)
    assert sorted(series[("vpp-l2patch", "64B")]["HT"]) == [(1, 13.2e6), (2, 25.0e6), (4, 46.0e6)]


def test_report_with_history_shows_regression_verdicts(tmp_path):
    store = str(tmp_path / "hist")
    for i in range(5):
        add_to_history(embedded_run(tmp_path, f"h{i}", scale=1.0 + 0.002 * i), store, commit=f"c{i}")
    path = build_report(embedded_run(tmp_path, "slow", scale=0.85), str(tmp_path / "rep"), history=store)
    text = open(path).read()
    assert "NDR regression -15." in text


def test_report_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no finished dpgate results"):
        build_report(str(tmp_path / "empty"), str(tmp_path / "rep"))


def _artifacts() -> str:
    d = os.environ.get("DPGATE_TEST_ARTIFACTS") or os.path.join(
        os.path.dirname(__file__), "..", "..", "test-artifacts"
    )
    os.makedirs(d, exist_ok=True)
    return os.path.abspath(d)


def _screenshot(page: str, shot: str, profile: str) -> None:
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            f"--screenshot={shot}",
            "--window-size=1400,2400",
            f"file://{page}",
        ],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert os.path.exists(shot), "chromium wrote no screenshot"


def _plot_blue_pixels(png: str) -> int:
    """Pixels of matplotlib's first colour (#1f77b4): bars of the plots, absent from the HTML itself."""
    import matplotlib.image as mpimg
    import numpy as np

    img = (mpimg.imread(png)[:, :, :3] * 255).astype(int)
    return int((np.abs(img - np.array([31, 119, 180])).sum(axis=2) < 30).sum())


@pytest.mark.skipif(
    not shutil.which("chromium"), reason="Debian chromium not installed (.ci/install installs it)"
)
def test_report_renders_headless_with_its_plots(tmp_path):
    path = build_report(lab_run(tmp_path, "lab"), str(tmp_path / "rep"))
    shot = os.path.join(_artifacts(), "signoff-report.png")
    _screenshot(path, shot, str(tmp_path / "profile"))
    rendered = _plot_blue_pixels(shot)
    # Control: the same page with its PNGs removed renders without plot pixels, so the
    # count above comes from the plots, not from the page's own styling.
    for f in os.listdir(os.path.dirname(path)):
        if f.endswith(".png"):
            os.remove(os.path.join(os.path.dirname(path), f))
    blank = str(tmp_path / "no-plots.png")
    _screenshot(path, blank, str(tmp_path / "profile2"))
    assert _plot_blue_pixels(blank) < 50
    assert rendered > 5000, f"only {rendered} plot pixels in {shot}"
