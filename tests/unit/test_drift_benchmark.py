"""benchmarks/cpp_drift.py's analysis: it must tell a host drift common to two data planes
(a reference would cancel it) from drifts of their own, and a slow drift from trial scatter."""

import doctest
import json
import random

import pytest
from helpers import load_benchmark


def load_bench():
    return load_benchmark("cpp_drift")


def rows(host, own_sd, rounds=16, trials=8, seed=1):
    """Two kinds per round; each round's host factor multiplies both, plus each kind's own noise."""
    rng = random.Random(seed)
    out = []
    for r in range(rounds):
        h = host[r]
        for kind, base in (("ref", 8000.0), ("sut", 10000.0)):
            own = rng.gauss(1.0, own_sd)
            for i in range(trials):
                out.append(
                    {"round": r, "kind": kind, "trial": i, "value": base * h * own * rng.gauss(1.0, 0.01)}
                )
    return out


def test_docstring_examples():
    bench = load_bench()
    assert doctest.testmod(bench).failed == 0


def test_a_common_host_drift_correlates_and_cancels_in_the_ratio():
    bench = load_bench()
    rng = random.Random(3)
    host = [rng.uniform(0.85, 1.15) for _ in range(16)]
    seqs = bench.sequences(rows(host, own_sd=0.005))
    corr, ratio_sd = bench.paired(seqs["ref"], seqs["sut"])
    assert corr > 0.95 and ratio_sd < 0.02


def test_drifts_of_their_own_do_not_cancel():
    bench = load_bench()
    seqs = bench.sequences(rows([1.0] * 16, own_sd=0.05))
    corr, ratio_sd = bench.paired(seqs["ref"], seqs["sut"])
    assert abs(corr) < 0.6 and ratio_sd > 0.04


def test_window_means_fall_like_white_noise_only_without_a_drift():
    bench = load_bench()
    rng = random.Random(7)
    white = [[rng.gauss(100.0, 5.0) for _ in range(64)] for _ in range(4)]
    seen, expected = bench.window_sd(white, 16)
    assert seen < 2 * expected
    walk = []
    for _ in range(4):
        v, seq = 100.0, []
        for _ in range(64):
            v += rng.gauss(0.0, 2.0)
            seq.append(v)
        walk.append(seq)
    seen, expected = bench.window_sd(walk, 16)
    assert seen > 2 * expected
    assert bench.autocorrelation(walk, 1) > 0.5 > abs(bench.autocorrelation(white, 1))


def test_analyse_prints_the_tables_of_a_recorded_file(tmp_path, capsys):
    bench = load_bench()
    path = tmp_path / "drift.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows([1.0] * 4, 0.02, rounds=4)))
    assert bench.main(["--analyse", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sut against ref: correlation of round medians" in out
    assert "ref: autocorrelation of trials: lag 1" in out


def test_a_block_without_its_load_is_refused_naming_the_field():
    bench = load_bench()
    with pytest.raises(Exception, match="blocks: 'linux-ip4' is not SUT:load"):
        bench.parse_block("linux-ip4")
    with pytest.raises(Exception, match="blocks 'fast' is not a rate"):
        bench.parse_block("linux-ip4:fast")
