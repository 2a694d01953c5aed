"""Unit tests for the `dpgate` command line: bad input exits 2 with a message naming the
option, before any testbed is touched (no root needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import EMBEDDED_SUTS

from dpgate import cli
from dpgate.testbeds.embedded.suts.base import sut_names

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPO = os.path.join(ROOT, "topologies", "embedded.yaml")


def run_main(argv, capsys):
    """(exit code, stderr) of cli.main; argparse errors raise SystemExit(2)."""
    try:
        code = cli.main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr()


def trial(*extra):
    args = {"--topology": TOPO, "--sut": "linux-ip4", "--rate": "50kpps", "--duration": "2"}
    out = ["trial"]
    ex = list(extra)
    for i in range(0, len(ex), 2):
        args[ex[i]] = ex[i + 1]
    for k, v in args.items():
        if v is not None:
            out.append(f"{k}={v}")  # '=' form: values like -2 are not taken for options
    return out


@pytest.mark.parametrize(
    "option, value, needle",
    [
        ("--rate", "fast", "not a rate"),
        ("--rate", "10Mbps", "unknown unit"),
        ("--rate", "0", "greater than 0"),
        ("--rate", "150%", "(0, 100]"),
        ("--rate", "-1kpps", "not a rate"),
        ("--frame-size", "63", "64..9216"),
        ("--frame-size", "9217", "64..9216"),
        ("--frame-size", "jumbo", "not a frame size"),
        ("--duration", "0", "--duration must be > 0"),
        ("--duration", "-2", "--duration must be > 0"),
        ("--duration", "two", "--duration must be a number"),
        ("--flows", "many", "invalid int value"),
        ("--wait-testbed", "soon", "expected a duration like 10m, 90s or 0"),
        ("--wait-testbed", "-5m", "expected a duration like 10m, 90s or 0"),
    ],
)
def test_bad_option_exits_2_naming_option(option, value, needle, capsys):
    code, cap = run_main(trial(option, value), capsys)
    assert code == 2
    assert f"argument {option}" in cap.err
    assert needle in cap.err
    assert cap.out == ""


def test_missing_required_sut(capsys):
    code, cap = run_main(["trial", "--rate", "1kpps"], capsys)
    assert code == 2 and "--sut" in cap.err


def test_missing_required_rate(capsys):
    code, cap = run_main(["trial", "--sut", "linux-ip4"], capsys)
    assert code == 2 and "--rate" in cap.err


def test_unknown_sut_exits_2(capsys):
    code, cap = run_main(trial("--sut", "vpp-magic"), capsys)
    assert code == 2
    assert "unknown NF/SUT 'vpp-magic'" in cap.err
    for name in sut_names():
        assert name in cap.err  # says what is accepted


def test_bad_topology_file_exits_2(tmp_path, capsys):
    bad = tmp_path / "t.yaml"
    bad.write_text("name: x\nkind: embedded\nnodes: {}\n")
    code, cap = run_main(trial("--topology", str(bad)), capsys)
    assert code == 2
    assert str(bad) in cap.err and "nodes" in cap.err


def test_missing_topology_file_exits_2(tmp_path, capsys):
    code, cap = run_main(trial("--topology", str(tmp_path / "none.yaml")), capsys)
    assert code == 2 and "file not found" in cap.err


def test_bad_flows_value_exits_2(capsys):
    code, cap = run_main(trial("--flows", "0"), capsys)
    assert code == 2 and "flows" in cap.err


def test_bad_prefix_exits_2(capsys):
    code, cap = run_main(trial("--prefix", "BAD PREFIX"), capsys)
    assert code == 2 and "prefix" in cap.err


def test_suts_lists_every_sut(capsys):
    code, cap = run_main(["suts"], capsys)
    assert code == 0
    listed = [ln.split()[0] for ln in cap.out.splitlines() if ln.strip()]
    assert listed == sut_names()
    assert EMBEDDED_SUTS <= set(listed)


def test_parser_accepts_good_values():
    args = cli.build_parser().parse_args(trial("--frame-size", "IMIX", "--rate", "75%", "--duration", "0.5"))
    assert args.frame_size == "IMIX"
    assert args.rate.percent == 75.0
    assert args.duration == 0.5
    args = cli.build_parser().parse_args(trial("--rate", "0.2Mpps", "--frame-size", "1518B"))
    assert args.rate.pps == pytest.approx(200_000) and args.frame_size == 1518


def test_exit_code_2_as_a_process():
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "libraries"))
    res = subprocess.run(
        [sys.executable, "-m", "dpgate.cli", *trial("--rate", "lots")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=ROOT,
    )
    assert res.returncode == 2
    assert "argument --rate" in res.stderr and "'lots'" in res.stderr
    assert res.stdout == ""


def test_wait_testbed_defaults_to_10_minutes_for_trial_and_gate():
    from dpgate.cli.main import build_parser

    p = build_parser()
    assert p.parse_args(trial()).wait_testbed == 600.0
    assert p.parse_args(trial("--wait-testbed", "90s")).wait_testbed == 90.0
    assert p.parse_args(["gate"]).wait_testbed == 600.0
    assert p.parse_args(["gate", "--wait-testbed", "0"]).wait_testbed == 0.0
    assert p.parse_args(["cleanup", "--force"]).force is True
