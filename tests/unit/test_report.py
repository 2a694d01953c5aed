"""Sign-off report from fixture results: the HTML references PNGs that exist, and (where
Debian's chromium is installed, as .ci/install does) it renders headless to a PNG."""

import os
import re
import shutil
import subprocess

import pytest

from dpgate.errors import ConfigError
from dpgate.report import build_report
from dpgate.results import ResultStore


def run(tmp_path, name, scale=1.0):
    out = tmp_path / name
    s = ResultStore(str(out))
    for i, (size, ndr) in enumerate((("64B", 5.6e5), ("IMIX", 5.5e5), ("1518B", 4.2e5))):
        s.update(f"E.L.{size}-1c-linux-ip4-ndrpdr", suite="E.L", name=f"{size}-1c-linux-ip4-ndrpdr",
                 status="PASS" if i else "FAIL", message="" if i else "NDR 0.5 Mpps < floor", started=i,
                 metrics={"ndr_pps": ndr * scale, "pdr_pps": ndr * scale, "cpp": 2.6e9 / (ndr * scale),
                          "ipc": "not supported (no PMU)", "limited_by": "sut"})
    s.update("E.L.64B-2c-linux-ip4-ndrpdr", suite="E.L", name="64B-2c-linux-ip4-ndrpdr", status="PASS", started=9,
             metrics={"ndr_pps": 1.0e6 * scale, "pdr_pps": 1.0e6 * scale, "cpp": 5200.0})
    return str(out)


def test_report_html_references_existing_pngs(tmp_path):
    path = build_report(run(tmp_path, "cur"), str(tmp_path / "rep"), baseline=run(tmp_path, "base", scale=1.1))
    text = open(path).read()
    pngs = re.findall(r"src='([^']+\.png)'", text)
    assert pngs == ["linux-ip4.png"]
    for p in pngs:
        with open(os.path.join(os.path.dirname(path), p), "rb") as fh:
            assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    assert "0.560" in text and "-9.1 %" in text          # NDR and the change vs baseline
    assert "FAIL NDR 0.5 Mpps &lt; floor" in text         # gate verdicts, escaped
    assert "2C speedup 1.79x vs perfect 2x (-10.7 %)" in text


def test_report_without_results_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="no finished dpgate results"):
        build_report(str(tmp_path / "empty"), str(tmp_path / "rep"))


@pytest.mark.skipif(not shutil.which("chromium"), reason="Debian chromium not installed (.ci/install installs it)")
def test_report_renders_headless(tmp_path):
    path = build_report(run(tmp_path, "cur"), str(tmp_path / "rep"))
    shot = tmp_path / "report.png"
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1000,900",
                    f"file://{path}"], capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 20_000  # a page with a plot, not a blank one
