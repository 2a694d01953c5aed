"""``perf stat -x,`` output: per-event counts, unsupported events marked; IPC/IPP/CPP.

Format (linux tools/perf, ``-x,`` CSV mode), one event per line::

    [<interval>,][CPU<n>,]<value>,<unit>,<event>,<run time>,<percent>[,<metric>,<metric unit>]

``<value>`` is a number, ``<not supported>`` or ``<not counted>``. Lines starting with
``#`` and blank lines are ignored. With ``-A`` (per CPU) or ``-I`` (interval) the counts of
one event are summed.

>>> s = parse_perf_stat("1200,,cycles,1000,100.00,,\\n<not supported>,,instructions,0,100.00,,\\n")
>>> s.count("cycles"), str(s.unsupported["instructions"])
(1200.0, 'not supported: instructions <not supported> (no hardware counter on this host)')
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

from . import NotSupported, TelemetryError

_NUM = re.compile(r"^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$")


@dataclass(frozen=True)
class PerfStat:
    counts: Dict[str, float] = field(default_factory=dict)
    unsupported: Dict[str, NotSupported] = field(default_factory=dict)

    def count(self, event: str) -> Optional[float]:
        return self.counts.get(event)

    def get(self, event: str):
        """The count, or the NotSupported marker, or NotSupported('not measured')."""
        if event in self.counts:
            return self.counts[event]
        return self.unsupported.get(event, NotSupported(f"{event} not measured"))


def parse_perf_stat(text: str) -> PerfStat:
    counts: Dict[str, float] = {}
    unsupported: Dict[str, NotSupported] = {}
    seen = 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = line.split(",")
        # interval mode (-I) puts a timestamp first: then column 2 is a value, not a unit
        if len(fields) > 3 and _NUM.match(fields[0]) and (
                _NUM.match(fields[1]) or fields[1].startswith(("<", "CPU"))):
            fields = fields[1:]
        if fields and fields[0].startswith("CPU") and fields[0][3:].isdigit():  # per-CPU (-A)
            fields = fields[1:]
        if len(fields) < 3 or not fields[2]:
            raise TelemetryError(f"perf stat output line {n} is not '<value>,<unit>,<event>,...': {raw!r}")
        value, event = fields[0], fields[2]
        if value in ("<not supported>", "<not counted>"):
            why = "no hardware counter on this host" if value == "<not supported>" else "counter was not scheduled"
            unsupported.setdefault(event, NotSupported(f"{event} {value} ({why})"))
        elif _NUM.match(value):
            counts[event] = counts.get(event, 0.0) + float(value)
        else:
            raise TelemetryError(f"perf stat output line {n}: value {value!r} of {event!r} is not a number")
        seen += 1
    if not seen:
        raise TelemetryError("perf stat output has no event lines (empty or truncated)")
    for event in counts:
        unsupported.pop(event, None)
    return PerfStat(counts, unsupported)


def perf_stat_argv(cpus: Sequence[int], events: Sequence[str], duration_s: float, perf: str = "perf") -> List[str]:
    """argv of a system-wide perf stat on ``cpus`` for ``duration_s`` (CSV on stderr)."""
    return [perf, "stat", "-x,", "-a", "-C", ",".join(str(c) for c in cpus), "-e", ",".join(events),
            "--", "sleep", f"{duration_s:g}"]


def probe_perf(runner: Callable = subprocess.run) -> Optional[NotSupported]:
    """None when cycles and instructions can be counted here, else why not."""
    try:
        res = runner(["perf", "stat", "-x,", "-e", "cycles,instructions", "true"],
                     capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        return NotSupported("perf not installed: apt-get install linux-perf")
    except subprocess.TimeoutExpired:
        return NotSupported("perf stat did not finish within 20 s")
    if res.returncode != 0:
        tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
        return NotSupported(f"perf stat failed (exit {res.returncode}): {tail[0]}")
    try:
        stat = parse_perf_stat(res.stderr)
    except TelemetryError as err:
        return NotSupported(f"perf stat output not understood: {err}")
    for event in ("cycles", "instructions"):
        if event in stat.unsupported:
            return NotSupported(f"perf: {event} <not supported> (no CPU PMU on this host, e.g. a VM)")
    return None


def derive(stat: PerfStat, packets: float) -> Dict[str, object]:
    """IPC, IPP and measured CPP (cycles/packets) from a perf stat, or NotSupported each."""
    from ..metrics import cycles_per_packet  # noqa: F401  (CPP = cycles / packets here)

    cyc, ins = stat.get("cycles"), stat.get("instructions")
    out: Dict[str, object] = {}
    if isinstance(cyc, NotSupported) or isinstance(ins, NotSupported):
        reason = cyc if isinstance(cyc, NotSupported) else ins
        return {"ipc": reason, "ipp": reason, "cpp_measured": reason}
    out["ipc"] = ins / cyc if cyc else NotSupported("zero cycles counted")
    out["ipp"] = ins / packets if packets else NotSupported("no packets forwarded")
    out["cpp_measured"] = cyc / packets if packets else NotSupported("no packets forwarded")
    return out
