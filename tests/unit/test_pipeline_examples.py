"""The example CI pipelines (docs/.gitlab-ci.yml, docs/Jenkinsfile) run dpgate command lines the
CLI accepts, and every ``--include`` of an embedded run selects at least one embedded case: a
user copies these files, so an option renamed or a tag pattern that matches nothing (Robot then
runs no test at all) must fail here, not in their pipeline."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import List

import pytest
import yaml
from robot.api import TestSuiteBuilder as SuiteBuilder
from robot.model import TagPatterns

from dpgate.cli.main import build_parser
from dpgate.robot.modifiers import tags_for

ROOT = Path(__file__).resolve().parents[2]
#: what the pipelines' variables stand for when their lines are parsed
ENV = {
    "DPGATE_HISTORY": "/srv/dpgate-history",
    "CI_COMMIT_SHA": "0123abc",
    "GIT_COMMIT": "0123abc",
    "DPDK_SRC": "dpdk",
}


def _expand(line: str) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: ENV.get(m.group(1), m.group(0)), line)


def gitlab_lines() -> List[str]:
    doc = yaml.safe_load((ROOT / "docs/.gitlab-ci.yml").read_text())
    return [
        str(step)
        for job in doc.values()
        if isinstance(job, dict)
        for step in job.get("script", [])
        if ".venv/bin/dpgate" in str(step)
    ]


def jenkins_lines() -> List[str]:
    text = (ROOT / "docs/Jenkinsfile").read_text()
    return [m.group(1) for m in re.finditer(r"sh '([^']*\.venv/bin/dpgate[^']*)'", text)]


def argv_of(line: str) -> List[str]:
    words = shlex.split(_expand(line))
    return words[words.index(".venv/bin/dpgate") + 1 :]


LINES = [("gitlab", x) for x in gitlab_lines()] + [("jenkins", x) for x in jenkins_lines()]


def test_the_pipelines_hold_the_jobs_the_readme_describes():
    gates = [argv_of(x) for _, x in LINES if argv_of(x)[0] == "gate"]
    assert len(LINES) >= 6 and len(gates) >= 5
    assert any("--paired" in a and "--baseline-binary" in a for a in gates)  # the per-patch job


@pytest.mark.parametrize("where,line", LINES, ids=[f"{w}-{i}" for i, (w, _) in enumerate(LINES)])
def test_every_pipeline_line_parses(where, line):
    try:
        build_parser().parse_args(argv_of(line))
    except SystemExit as e:  # argparse names the option on stderr
        pytest.fail(f"{where}: {line!r} is refused by the CLI (exit {e.code})")


def embedded_case_tags() -> List[List[str]]:
    suite = SuiteBuilder().build(str(ROOT / "suites/embedded"))
    return [list(t.tags) + tags_for(t.name) for t in suite.all_tests]


def test_every_include_of_an_embedded_run_selects_cases():
    cases = embedded_case_tags()
    assert len(cases) == 27
    seen = 0
    for _, line in LINES:
        args = build_parser().parse_args(argv_of(line))
        if getattr(args, "topology", None) and "lab" in str(args.topology):
            continue
        for pattern in getattr(args, "include", []):
            seen += 1
            hits = sum(TagPatterns([pattern]).match(tags) for tags in cases)
            assert hits, f"--include {pattern!r} selects none of the 27 embedded cases"
    assert seen >= 1


def test_a_pattern_without_its_wildcard_selects_nothing():
    """The check above can fail: the suites' tag is ``testpmd-io``, not ``testpmd``."""
    cases = embedded_case_tags()
    assert not any(TagPatterns(["testpmd"]).match(t) for t in cases)
    assert sum(TagPatterns(["testpmd-* AND 64B"]).match(t) for t in cases) == 2
