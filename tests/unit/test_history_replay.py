"""``dpgate history replay``: the stored runs judged again in order with other history spans
(dpgate.regression.replay), on gk99's recorded runs (tests/unit/test_history_span.py)."""

import json

import pytest
from helpers import write_run
from test_history_span import GK99, T0, metrics

from dpgate.cli.main import main
from dpgate.outputs.results import load_records
from dpgate.regression.history import add_to_history, read_history
from dpgate.regression.replay import entry_record, replay

TEST = ("embedded", "S.64B-1c-x-ndrpdr")
# gk99's healthy run that FAILED against twelve runs of 52 minutes judged by their own scatter
HEALTHY = (3200, 4965.2, 5966.4, 43.32)


def store_of(tmp_path, rows, **extra):
    store = str(tmp_path / "store")
    for i, (t, raw, scaled, speed) in enumerate(rows):
        run = write_run(tmp_path, f"r{i}", metrics(raw, scaled, speed, **extra), started=T0 + t, nf="x")
        assert add_to_history(run, store) == 1
    return store


def test_a_stored_run_keeps_what_a_replay_needs(tmp_path):
    store = store_of(tmp_path, GK99[:1])
    (entry,) = read_history(store, *TEST)
    assert entry["nf"] == "x" and entry["regression_cpp_scaled_noise"] == 0.23
    rec = entry_record(entry, TEST[1], TEST[0], noises=lambda nf, frame: pytest.fail("has its own"))
    assert rec["metrics"]["regression_cpp_noise"] == 0.14 and rec["started"] == T0


def test_the_day_span_passes_what_the_gate_passed_and_half_an_hour_fails_it(tmp_path):
    store = store_of(tmp_path, GK99 + [HEALTHY])
    day, half = (own for own, _ in replay(store, [24, 0.5]))
    assert day.judged == half.judged == len(GK99)  # the first run has nothing before it
    assert day.fails == [] and day.failed_runs == 0, [v.line() for v in day.fails]
    assert day.allowances["cpp_at_load"][-1] == pytest.approx(14.0)  # the declared floor
    assert half.failed_runs >= 1
    last = [v for v in half.fails if v.current == pytest.approx(HEALTHY[1])]
    assert last and "history noise" in last[0].noise_source, [v.line() for v in half.fails]
    assert "FAIL" in half.line() and "--history-span 0.5" in half.line()


def test_a_run_the_span_fails_is_left_out_of_its_history_after_it(tmp_path):
    # the gate stores passed runs only: a second such run meets the history without the first
    again = (HEALTHY[0] + 100,) + HEALTHY[1:]
    store = store_of(tmp_path, GK99 + [HEALTHY, again])
    day, half = (own for own, _ in replay(store, [24, 0.5]))
    assert day.failed_runs == 0 and "left out" not in day.line()
    assert half.failed_runs == 2, half.line()
    assert "2 left out of the history after them" in half.line()
    late = load_records(write_run(tmp_path, "late", metrics(*HEALTHY[1:]), started=T0 + 3400))
    ((_, d_other), (_, h_other)) = replay(store, [24, 0.5], against=late)
    assert d_other.failed_runs == 0 and h_other.failed_runs == 1  # judged against GK99 alone


def test_older_entries_take_their_case_allowances_from_the_thresholds(tmp_path):
    store = store_of(tmp_path, GK99 + [HEALTHY])
    path = tmp_path / "store" / "embedded" / "S.64B-1c-x-ndrpdr.jsonl"
    old = [json.loads(line) for line in path.read_text().splitlines()]
    for e in old:  # as stored before runs kept them
        for k in ("nf", "frame_size", "regression_cpp_noise", "regression_cpp_scaled_noise"):
            e.pop(k, None)
    path.write_text("".join(json.dumps(e) + "\n" for e in old))
    asked = []

    def noises(nf, frame):
        asked.append((nf, frame))
        return {"regression_cpp_noise": 0.14, "regression_cpp_scaled_noise": 0.23}

    ((day, _),) = replay(store, [24], noises=noises)
    assert set(asked) == {("x", "64B")}  # read from the test's name
    assert day.failed_runs == 0 and day.allowances["cpp_at_load"][-1] == pytest.approx(14.0)
    ((bare, _),) = replay(store, [24])  # no allowance: its own scatter alone
    assert bare.failed_runs >= 1


def test_other_runs_are_judged_against_the_stored_runs_before_them(tmp_path):
    store = store_of(tmp_path, GK99)
    slow = write_run(tmp_path, "inj", metrics(5500.0, 6500.0, 43.3, injected_cost=10.0), started=T0 + 4000)
    early = write_run(tmp_path, "early", metrics(5500.0, 6500.0, 43.3), started=T0 - 60)
    against = load_records(slow) + load_records(early)
    ((own, other),) = replay(store, [24], against=against)
    assert other.judged == 1  # the early run has no stored run before it
    assert other.failed_runs == 1 and other.fails[0].change_pct > 14, other.line("--against runs")
    d = metrics(5500.0, 6500.0, 43.3, cpp_at_load_disturbance=0.3)
    disturbed = load_records(write_run(tmp_path, "d", d, started=T0 + 4000))
    ((_, held),) = replay(store, [24], against=disturbed)
    assert held.failed_runs == 0 and len(held.held) == 1


def test_the_command_line(tmp_path, capsys):
    store = store_of(tmp_path, GK99 + [HEALTHY])
    inj = write_run(tmp_path, "inj", metrics(5500.0, 6500.0, 43.3), started=T0 + 4000)
    assert main(["history", "replay", store, "--span", "24", "--span", "30min", "--against", inj]) == 0
    out = capsys.readouterr().out
    assert "--history-span 24: 0 of 12 stored (passed) runs FAIL" in out
    assert "--history-span 0.5: " in out and "would FAIL: 64B-1c-x-ndrpdr cpp_at_load" in out
    assert "1 of 1 --against runs FAIL" in out
    assert not [ln for ln in out.splitlines() if "--against runs" in ln and "left out" in ln]
    assert main(["history", "replay", store, "--against", str(tmp_path / "nope")]) == 2
    assert "--against" in capsys.readouterr().err
    assert main(["history", "replay", str(tmp_path / "none")]) == 2
    assert main(["history", "add", inj]) == 2
    assert "--store" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["history", "replay", str(empty)]) == 0
    assert "nothing to replay" in capsys.readouterr().out
