"""The lab case matrix (suites/lab/) checked by a real Robot dry run: 6 NFs x 3 frame sizes
x 3 core counts x HT off/on = 108 cases, CSIT-style names, tags from the CaseTags
pre-run modifier, template arguments that agree with the names, and a threshold for
every case in variables/lab-2n-skx.yaml. (A dry run resolves every keyword and checks
argument counts; it runs nothing: no TRex, no DUT.)"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys

import pytest
import robot.api

from dpgate.config.thresholds import load_thresholds
from dpgate.testbeds.lab.nfs import LAB_NFS

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
SUITES = os.path.join(ROOT, "suites", "lab")
SIZES = ("64B", "IMIX", "1518B")


def dry_run(tmp_path, *options, suites=SUITES):
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "robot",
            "--dryrun",
            "--prerunmodifier",
            "dpgate.robotmods.CaseTags",
            "--outputdir",
            str(out),
            "--log",
            "NONE",
            "--report",
            "NONE",
            *options,
            suites,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "[ ERROR ]" not in proc.stderr and "[ WARN ]" not in proc.stderr, proc.stderr[-3000:]
    result = robot.api.ExecutionResult(str(out / "output.xml"))
    return [(t.parent.name, t) for t in result.suite.all_tests]


def test_dry_run_has_108_cases_with_names_and_tags(tmp_path):
    tests = dry_run(tmp_path)
    assert len(tests) == 108
    assert all(t.status == "PASS" for _, t in tests), [
        (t.name, t.message) for _, t in tests if t.status != "PASS"
    ]
    names = [t.name for _, t in tests]
    assert len(set(names)) == 108
    by_nf = {}
    for _, t in tests:
        nf = next(n for n in LAB_NFS if n in t.tags)
        by_nf.setdefault(nf, []).append(t)
    assert sorted(by_nf) == sorted(LAB_NFS) and all(len(v) == 18 for v in by_nf.values())
    for nf, cases in by_nf.items():
        seen = set()
        for t in cases:
            m = re.fullmatch(r"(64B|IMIX|1518B)-(\d+)t(\d+)c-(.+)-ndrpdr", t.name)
            assert m and m.group(4) == LAB_NFS[nf].case, t.name
            size, threads, cores = m.group(1), int(m.group(2)), int(m.group(3))
            assert threads in (cores, 2 * cores)
            seen.add((size, cores, threads == 2 * cores))
            expected = {"LAB", "NDRPDR", nf, size, f"{cores}C", f"{threads}T{cores}C"}
            assert expected <= set(t.tags), (t.name, list(t.tags))
        assert seen == set(itertools.product(SIZES, (1, 2, 4), (False, True))), nf
    assert "64B-2t1c-ethip4-ip4base-ndrpdr" in names and "IMIX-1t1c-eth-l2patch-ndrpdr" in names


def test_core_and_ht_selection_by_tags(tmp_path):
    ht_on = dry_run(tmp_path, "--include", "2T1C OR 4T2C OR 8T4C")
    assert len(ht_on) == 54 and all(re.search(r"-(2t1c|4t2c|8t4c)-", t.name) for _, t in ht_on)
    one = dry_run(tmp_path, "--include", "2T1C AND vpp-l2patch")
    assert sorted(t.name for _, t in one) == [
        "1518B-2t1c-eth-l2patch-ndrpdr",
        "64B-2t1c-eth-l2patch-ndrpdr",
        "IMIX-2t1c-eth-l2patch-ndrpdr",
    ]


def _cases():
    suite = robot.api.TestSuiteBuilder().build(SUITES)
    return [(t.parent, t) for t in suite.all_tests]


def test_template_arguments_agree_with_the_test_names():
    cases = _cases()
    assert len(cases) == 108
    for suite, t in cases:
        size, cores, ht = t.body[0].args
        m = re.fullmatch(r"(64B|IMIX|1518B)-(\d+)t(\d+)c-.+-ndrpdr", t.name)
        assert (m.group(1), int(m.group(3))) == (size, int(cores)), t.name
        assert (int(m.group(2)) == 2 * int(m.group(3))) == (ht == "on") and ht in ("on", "off"), t.name
        setup = suite.setup
        assert setup.name == "Lab Suite Setup" and setup.args[0] in LAB_NFS, suite.name


@pytest.mark.parametrize("nf", sorted(LAB_NFS))
def test_every_case_has_a_floor_in_the_example_thresholds(nf):
    th = load_thresholds(os.path.join(ROOT, "variables", "lab-2n-skx.yaml"))
    for size, cores, ht in itertools.product(SIZES, (1, 2, 4), (False, True)):
        tag = f"{cores * (2 if ht else 1)}T{cores}C"
        t = th.lookup(nf, size, tag)
        assert t.rate("ndr_min") and t.rate("pdr_min") >= t.rate("ndr_min"), (nf, size, tag)
        # the floors never ask for more than both 10GE ports carry
        line = {"64B": 14_880_952, "IMIX": 3_343_736, "1518B": 812_743}[size] * 2
        assert t.rate("pdr_min") < line


def test_embedded_suites_dry_run_cleanly_without_loading_pabot(tmp_path):
    """The embedded gate's 27 cases (9 SUTs x 3 frame sizes) resolve every keyword; the pool keywords import PabotLib
    only at run time, so a dry run prints no listener errors."""
    tests = dry_run(tmp_path, suites=os.path.join(ROOT, "suites", "embedded"))
    assert len(tests) == 27 and all(t.status == "PASS" for _, t in tests)
    assert {"EMBEDDED", "NDRPDR", "1C", "64B"} <= set(tests[0][1].tags)


def test_embedded_per_commit_overrides_are_settings_the_profile_accepts():
    """The embedded resource's per-commit defaults (duration sum, goal width) are what
    ``Search Overrides`` hands the search: valid values of the per-commit profile."""
    from dpgate.search.api import search_settings

    model = robot.api.get_resource_model(os.path.join(ROOT, "resources", "embedded.resource"))
    values = {
        v.name: v.value[0]
        for section in model.sections
        if type(section).__name__ == "VariableSection"
        for v in section.body
        if type(v).__name__ == "Variable"
    }
    s = search_settings(
        "per-commit",
        duration_sum=float(values["${PER_COMMIT_DURATION_SUM}"]),
        width=float(values["${PER_COMMIT_WIDTH}"]),
    )
    assert (s.duration_sum, s.width) == (10.0, 0.02)
