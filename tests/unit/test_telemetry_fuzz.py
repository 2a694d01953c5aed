"""Cut, doubled, shuffled or corrupted tool outputs give TelemetryError or a result, never a crash.

Deterministic (fixed seed) mutations of every recorded fixture; a ValueError, IndexError or
KeyError escaping a parser would reach the user as a traceback instead of one error naming
the line.
"""

import glob
import os
import random

import pytest

from dpgate.telemetry import TelemetryError
from dpgate.telemetry.pcm import parse_memory, parse_pcie
from dpgate.telemetry.perf import parse_perf_stat
from dpgate.telemetry.tmam import parse_toplev_csv

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "telemetry")
INSERTS = [
    ",",
    ";",
    "#",
    " ",
    "nan",
    "%",
    "<not counted>",
    "\n",
    "(",
    "1e5",
    "-",
    "{",
    "}",
    '"',
    " K",
    "|",
    "(Miss)",
]


def mutations(base, count, seed):
    rnd = random.Random(seed)
    for _ in range(count):
        t = list(base)
        op = rnd.choice(["del", "ins", "trunc", "swap", "dup"])
        if op == "del" and t:
            i = rnd.randrange(len(t))
            del t[i : i + rnd.randint(1, 5)]
        elif op == "ins":
            i = rnd.randrange(len(t) + 1)
            t[i:i] = rnd.choice(INSERTS)
        elif op == "trunc":
            t = t[: rnd.randrange(len(t) + 1)]
        lines = "".join(t).splitlines(True)
        if op == "swap" and len(lines) > 1:
            i, j = rnd.randrange(len(lines)), rnd.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        if op == "dup" and lines:
            i = rnd.randrange(len(lines))
            lines.insert(i, lines[i])
        yield "".join(lines)


def _perf(text):
    s = parse_perf_stat(text)
    return s.ipc, s.intervals, s.tmam


def _pcie(text):
    s = parse_pcie(text)
    return [s.miss_rate(e) for e in s.events] if s.has_split else s.events


PARSERS = [
    ("perf-stat-*", _perf),
    ("pcm-pcie-*", _pcie),
    ("pcm-memory-*", parse_memory),
    ("toplev-*", parse_toplev_csv),
]


@pytest.mark.parametrize("pattern, parse", PARSERS, ids=[p for p, _ in PARSERS])
def test_mutated_outputs_fail_only_with_telemetry_error(pattern, parse):
    files = sorted(glob.glob(os.path.join(HERE, pattern)))
    assert files
    outcomes = {"parsed": 0, "refused": 0}
    for n, path in enumerate(files):
        with open(path) as fh:
            base = fh.read()
        for text in mutations(base, 40, seed=n):
            try:
                parse(text)
                outcomes["parsed"] += 1
            except TelemetryError:
                outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and outcomes["parsed"] > 0  # the mutations do reach both outcomes
