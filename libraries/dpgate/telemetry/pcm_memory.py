"""pcm-memory output (DRAM bandwidth per socket) to MB/s.

Formats follow intel/pcm ``src/pcm-memory.cpp``: the table footer per socket
(``printSocketBWFooter``) labels sockets ``|-- NODE 0 Mem Read (MB/s) :  1234.56 --|`` up
to pcm 202409 and ``|-- SKT  0 Mem Read (MB/s) :  1234.56 --|`` from pcm 202502 on
(intel/pcm commit 4f1eaf7f, 2024-09-10, "replace NODE with SKT to avoid confusion with
NUMA NODEs"; ``setw(2)`` socket, value ``setw(8)``, later ``setw(9)``); HBM parts print
``DRAM Mem Read (MB/s):`` under ``Processor socket N``. ``-csv`` (``display_bandwidth_csv``)
prints two header rows, ``,,SKT0,SKT0,...`` over ``Date,Time,...,Mem Read (MB/s),Mem
Write (MB/s),...``, then one row per sample.

>>> m = parse_memory("|-- SKT  0 Mem Read (MB/s) :  1000.00 --||-- SKT  1 Mem Read (MB/s) :   500.00 --|\\n"
...                  "|-- SKT  0 Mem Write(MB/s) :   250.00 --||-- SKT  1 Mem Write(MB/s) :   250.00 --|\\n")
>>> m.read_mbps, m.total_bytes_per_s
({'0': 1000.0, '1': 500.0}, 2000000000.0)
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from typing import Dict, List, Tuple

from . import TelemetryError


@dataclass(frozen=True)
class MemoryStats:
    """Per-socket DRAM read/write bandwidth in MB/s (pcm's MB = 1e6 bytes)."""

    read_mbps: Dict[str, float]
    write_mbps: Dict[str, float]
    samples: int = 1

    @property
    def total_bytes_per_s(self) -> float:
        return (sum(self.read_mbps.values()) + sum(self.write_mbps.values())) * 1e6


def _avg(d: Dict[str, List[float]]) -> Dict[str, float]:
    return {k: sum(v) / len(v) for k, v in sorted(d.items())}


def _parse_memory_csv(lines: List[str], at: int) -> MemoryStats:
    head2 = next(csv.reader([lines[at]]))
    head1 = next(csv.reader([lines[at - 1]])) if at > 0 else []
    if len(head1) < len(head2) - 1:
        raise TelemetryError(
            "pcm-memory CSV lacks its first header row (',,SKT0,SKT0,...') above 'Date,Time,...' (truncated?)"
        )
    cols: Dict[Tuple[str, str], int] = {}
    for i, name in enumerate(head2):
        skt = re.fullmatch(r"SKT(\d+)", head1[i].strip()) if i < len(head1) else None
        kind = {"Mem Read (MB/s)": "read", "Mem Write (MB/s)": "write"}.get(name.strip())
        if skt and kind:
            cols[(skt.group(1), kind)] = i
    if not cols:
        raise TelemetryError("pcm-memory CSV header has no 'SKTn' / 'Mem Read (MB/s)' columns")
    reads: Dict[str, List[float]] = {}
    writes: Dict[str, List[float]] = {}
    rows = 0
    for n, raw in enumerate(lines[at + 1 :], at + 2):
        if not raw.strip():
            continue
        cells = next(csv.reader([raw]))
        if cells and cells[0] in ("Date", "") and len(cells) > 2 and not re.match(r"\d", cells[0] or "x"):
            continue  # a repeated header
        need = max(cols.values()) + 1
        if len(cells) < need:
            raise TelemetryError(
                f"pcm-memory CSV line {n}: {len(cells)} cells, the header needs {need} (truncated?)"
            )
        for (sock, kind), i in cols.items():
            try:
                v = float(cells[i])
            except ValueError:
                raise TelemetryError(
                    f"pcm-memory CSV line {n}: socket {sock} {kind} {cells[i]!r} is not a number"
                ) from None
            (reads if kind == "read" else writes).setdefault(sock, []).append(v)
        rows += 1
    if not rows:
        raise TelemetryError("pcm-memory CSV has headers but no data rows (truncated?)")
    _check(reads, writes, "pcm-memory CSV")
    return MemoryStats(_avg(reads), _avg(writes), rows)


def parse_memory(text: str) -> MemoryStats:
    """pcm-memory per-socket read/write MB/s, from its table or its ``-csv`` output.

    Table rows: ``|-- NODE 0 Mem Read (MB/s) :  1234.56 --|`` (``SKT  0`` from pcm 202502) and ``Mem Write(MB/s)``
    (``|-- DRAM Mem Read  (MB/s):`` under ``Processor socket N`` on HBM parts). CSV: two
    header rows (``,,SKT0,SKT0,...`` over ``Date,Time,...,Mem Read (MB/s),Mem Write
    (MB/s),...``) then one data row per sample. Several samples are averaged.
    """
    if not text or not text.strip():
        raise TelemetryError("pcm-memory output is empty")
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith(("Date,Time,", "Date;Time;")):
            return _parse_memory_csv(lines, i)
    reads: Dict[str, List[float]] = {}
    writes: Dict[str, List[float]] = {}
    num = r"(-?[0-9]+(?:\.[0-9]+)?)"
    for m in re.finditer(r"(?:NODE|SKT)\s*(\d+)\s+Mem\s*(Read|Write)\s*\(MB/s\)\s*:\s*" + num, text):
        (reads if m.group(2) == "Read" else writes).setdefault(m.group(1), []).append(float(m.group(3)))
    sock = None
    for ln in lines:
        s = re.search(r"Processor socket\s+(\d+)", ln)
        if s:
            sock = s.group(1)
        dram = re.search(r"DRAM Mem (Read|Write)\s*\(MB/s\)\s*:\s*" + num, ln)
        if dram and sock is not None:
            (reads if dram.group(1) == "Read" else writes).setdefault(sock, []).append(float(dram.group(2)))
    if not reads and not writes:
        raise TelemetryError(
            "pcm-memory output has no 'NODE n Mem Read/Write (MB/s)' nor 'SKT n Mem ...' rows nor a "
            "'Date,Time,...Mem Read (MB/s)' CSV header"
        )
    missing = sorted(set(reads) ^ set(writes))
    if missing:
        raise TelemetryError(
            f"pcm-memory output has Read without Write (or the reverse) for socket(s) {', '.join(missing)} (truncated?)"
        )
    _check(reads, writes, "pcm-memory table")
    return MemoryStats(_avg(reads), _avg(writes), max(len(v) for v in reads.values()))


def _check(reads: Dict[str, List[float]], writes: Dict[str, List[float]], where: str) -> None:
    """A socket's bandwidth is >= 0 (pcm prints negative values only for dead channels)."""
    for kind, d in (("read", reads), ("write", writes)):
        for sock, vals in d.items():
            if any(v < 0 for v in vals):
                raise TelemetryError(
                    f"{where}: socket {sock} {kind} bandwidth {min(vals):g} MB/s is negative "
                    "(a channel pcm could not read): not a measurement"
                )


def mem_bytes_per_packet(mem: MemoryStats, pps: float) -> float:
    if not pps > 0:
        raise TelemetryError(f"packets per second must be > 0, got {pps!r}")
    return mem.total_bytes_per_s / pps
