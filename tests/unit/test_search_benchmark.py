"""benchmarks/search.py runs and prints one row per search and kind."""

from __future__ import annotations

import pytest
from helpers import load_benchmark


def _load():
    return load_benchmark("search")


def test_benchmark_prints_table(capsys):
    bench = _load()
    assert bench.main(["--reps", "3", "--kinds", "hard,stalls"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith(("hard ", "stalls "))]
    names = {(r[0], r[1]) for r in rows}
    for kind in ("hard", "stalls"):
        for name in ("per-commit", "mlr-rfc2544", "rfc2544-binary", "sign-off", "per-commit@1s"):
            assert (kind, name) in names
    per_commit_stalls = next(r for r in rows if r[:2] == ["stalls", "per-commit"])
    assert float(per_commit_stalls[2]) > 20.0  # 1 s trials overstate the 60 s NDR on stalls
    assert "sign-off vs issue 8/16 targets" in out


def test_benchmark_stall_family_row(capsys):
    bench = _load()
    assert bench.main(["--reps", "3", "--kinds", "stall-family"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("stall-family  ")]
    assert {r[1] for r in rows} == {
        "per-commit",
        "mlr-rfc2544",
        "rfc2544-binary",
        "sign-off",
        "per-commit@1s",
    }
    assert "P(60 s pass at its NDR)" in out and "oracle" in out


def test_benchmark_rejects_unknown_kind():
    bench = _load()
    with pytest.raises(SystemExit):
        bench.main(["--kinds", "nope"])
