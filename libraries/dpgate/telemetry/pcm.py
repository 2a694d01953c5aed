"""pcm-pcie (PCIe traffic, DDIO hit/miss) and pcm-memory (memory bandwidth) output parsing.

``parse_pcie(text)`` accepts

* the table pcm-pcie prints (seed 000, Figures 23-24): a header ``Skt | PCIeRdCur | RFO |
  ...`` naming the events of this CPU generation, then per socket a ``(Total)``,
  ``(Miss)`` and ``(Hit)`` row of events/s with K/M/G suffixes (``45 M``, ``8587 K``),
  and an ``*`` ``(Aggregate)`` row;
* CSV (``pcm-pcie -csv``): a header row ``Skt,<event>,...`` and one row per socket and
  kind, the kind either in a trailing column (``Total``/``Miss``/``Hit``) or in the event
  names (``ItoM (Miss)``). Other event sets (Icelake: ``PCIRdCur``, ``ItoMCacheNear``,
  ``WCiLF`` ...) parse the same way; event names are case-insensitive and ``PCIRdCur`` is
  an alias of ``PCIeRdCur``.

DDIO: ``miss_rate(ItoM)`` (inbound full-line writes), ``miss_rate(RFO)`` (partial writes),
``miss_rate(PCIeRdCur)`` (inbound reads) = miss / total, aggregated over sockets.

>>> s = parse_pcie(open_fixture("pcm-pcie-seed000-fig24-l3fwd.txt"))  # doctest: +SKIP
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from . import NotSupported, TelemetryError

_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
_KINDS = ("total", "miss", "hit", "aggregate")
_ALIASES = {"pcirdcur": "pcierdcur"}
CACHE_LINE = 64


def _key(event: str) -> str:
    k = event.strip().lower()
    return _ALIASES.get(k, k)


@dataclass(frozen=True)
class PcieStats:
    """Per-socket rows: ``rows[(socket, kind)][event_key]`` in events (cache lines) per second."""

    events: Tuple[str, ...]
    rows: Dict[Tuple[str, str], Dict[str, float]] = field(default_factory=dict)

    @property
    def sockets(self) -> List[str]:
        return sorted({s for s, _ in self.rows if s != "*"})

    def _sum(self, kind: str, event: str) -> Optional[float]:
        k = _key(event)
        vals = [r[k] for (s, kd), r in self.rows.items() if kd == kind and s != "*" and k in r]
        if vals:
            return sum(vals)
        agg = self.rows.get(("*", "aggregate" if kind == "total" else kind))
        return agg.get(k) if agg else None

    def _require(self, event: str) -> None:
        if _key(event) not in {_key(e) for e in self.events}:
            raise TelemetryError(f"pcm-pcie output has no event {event!r}; it has {', '.join(self.events)}")

    def total(self, event: str) -> float:
        self._require(event)
        t = self._sum("total", event)
        if t is None:
            m, h = self._sum("miss", event), self._sum("hit", event)
            if m is None or h is None:
                raise TelemetryError(f"pcm-pcie output has no Total for {event!r}")
            t = m + h
        return t

    def miss(self, event: str) -> float:
        self._require(event)
        m = self._sum("miss", event)
        if m is None:
            h = self._sum("hit", event)
            if h is None:
                raise TelemetryError(f"pcm-pcie output has no Miss/Hit split for {event!r}")
            m = self.total(event) - h
        return m

    def hit(self, event: str) -> float:
        self._require(event)
        h = self._sum("hit", event)
        return h if h is not None else self.total(event) - self.miss(event)

    def miss_rate(self, event: str) -> float:
        """miss / total in 0..1 (0 when the event did not occur)."""
        t = self.total(event)
        return min(1.0, max(0.0, self.miss(event) / t)) if t else 0.0


def _number_tokens(tokens: List[str]) -> List[float]:
    out: List[float] = []
    i = 0
    while i < len(tokens):
        m = re.fullmatch(r"([0-9]*\.?[0-9]+)([KMG]?)", tokens[i])
        if not m:
            raise TelemetryError(f"pcm-pcie: {tokens[i]!r} is not a count")
        val = float(m.group(1)) * _SUFFIX[m.group(2)]
        if not m.group(2) and i + 1 < len(tokens) and tokens[i + 1] in ("K", "M", "G"):
            val *= _SUFFIX[tokens[i + 1]]
            i += 1
        out.append(val)
        i += 1
    return out


def _parse_table(text: str) -> PcieStats:
    lines = text.splitlines()
    header = next((ln for ln in lines if "|" in ln and re.search(r"\bSkt\b", ln)), None)
    if header is None:
        raise TelemetryError("pcm-pcie table has no 'Skt | <events>' header")
    events = tuple(c.strip() for c in header.split("|")[1:] if c.strip())
    rows: Dict[Tuple[str, str], Dict[str, float]] = {}
    for n, raw in enumerate(lines, 1):
        m = re.match(r"^\s*([0-9]+|\*)\s+(.*?)\s*\((Total|Miss|Hit|Aggregate)\)\s*$", raw)
        if not m:
            continue
        vals = _number_tokens(m.group(2).split())
        if len(vals) != len(events):
            raise TelemetryError(f"pcm-pcie line {n}: {len(vals)} values for {len(events)} events "
                                 f"({', '.join(events)}): {raw.strip()!r} (truncated?)")
        rows[(m.group(1), m.group(3).lower())] = {_key(e): v for e, v in zip(events, vals)}
    if not rows:
        raise TelemetryError("pcm-pcie table has a header but no (Total)/(Miss)/(Hit) rows (truncated?)")
    return PcieStats(events, rows)


def _parse_csv(text: str) -> PcieStats:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = [c.strip() for c in lines[0].split(",")]
    if not head or head[0].lower() not in ("skt", "socket"):
        raise TelemetryError("pcm-pcie CSV must start with a 'Skt' column")
    kind_col = next((i for i, c in enumerate(head) if c.lower() in ("type", "kind")), None)
    cols: List[Tuple[int, str, Optional[str]]] = []
    for i, c in enumerate(head[1:], 1):
        if i == kind_col or not c:
            continue
        m = re.fullmatch(r"(.+?)\s*\((Total|Miss|Hit)\)", c)
        cols.append((i, m.group(1), m.group(2).lower()) if m else (i, c, None))
    events = tuple(dict.fromkeys(e for _, e, _ in cols))
    rows: Dict[Tuple[str, str], Dict[str, float]] = {}
    for n, raw in enumerate(lines[1:], 2):
        cells = [c.strip() for c in raw.split(",")]
        if len(cells) < len(head):
            raise TelemetryError(f"pcm-pcie CSV line {n} has {len(cells)} cells, header {len(head)} (truncated?)")
        sock = cells[0]
        row_kind = cells[kind_col].lower() if kind_col is not None else None
        if kind_col is None and cells[-1].lower() in _KINDS:
            row_kind = cells[-1].lower()
        for i, event, col_kind in cols:
            if cells[i].lower() in _KINDS:
                continue
            try:
                v = _number_tokens(cells[i].split())[0]
            except (TelemetryError, IndexError):
                raise TelemetryError(f"pcm-pcie CSV line {n}: {event} value {cells[i]!r} is not a count") from None
            kind = col_kind or row_kind or "total"
            rows.setdefault((sock, kind), {})[_key(event)] = v
    if not rows:
        raise TelemetryError("pcm-pcie CSV has a header but no data rows (truncated?)")
    return PcieStats(events, rows)


def parse_pcie(text: str) -> PcieStats:
    """Parse pcm-pcie output (table or CSV). Errors name what is wrong."""
    if not text or not text.strip():
        raise TelemetryError("pcm-pcie output is empty")
    first = next(ln for ln in text.splitlines() if ln.strip())
    if "," in first and "|" not in first:
        return _parse_csv(text)
    return _parse_table(text)


@dataclass(frozen=True)
class PciePerPacket:
    ddio_miss_rate_itom: float
    ddio_miss_rate_rfo: float
    ddio_miss_rate_pcierdcur: float
    pcie_rd_bytes_per_packet: float
    pcie_wr_bytes_per_packet: float
    wil_per_packet: float

    def as_dict(self) -> Dict[str, float]:
        return dict(self.__dict__)


def pcie_per_packet(stats: PcieStats, pps: float) -> PciePerPacket:
    """DDIO miss rates and PCIe bytes per packet (cache lines x 64 / packets)."""
    if not pps > 0:
        raise TelemetryError(f"packets per second must be > 0, got {pps!r}")
    writes = stats.total("ItoM") + (stats.total("RFO") if _has(stats, "RFO") else 0.0)
    return PciePerPacket(
        ddio_miss_rate_itom=stats.miss_rate("ItoM"),
        ddio_miss_rate_rfo=stats.miss_rate("RFO") if _has(stats, "RFO") else 0.0,
        ddio_miss_rate_pcierdcur=stats.miss_rate("PCIeRdCur"),
        pcie_rd_bytes_per_packet=stats.total("PCIeRdCur") * CACHE_LINE / pps,
        pcie_wr_bytes_per_packet=writes * CACHE_LINE / pps,
        wil_per_packet=stats.total("WiL") / pps if _has(stats, "WiL") else 0.0,
    )


def _has(stats: PcieStats, event: str) -> bool:
    return _key(event) in {_key(e) for e in stats.events}


@dataclass(frozen=True)
class MemoryStats:
    read_mbps: Dict[str, float]
    write_mbps: Dict[str, float]

    @property
    def total_bytes_per_s(self) -> float:
        return (sum(self.read_mbps.values()) + sum(self.write_mbps.values())) * 1e6


def parse_memory(text: str) -> MemoryStats:
    """pcm-memory per-socket read/write MB/s (``NODE 0 Mem Read (MB/s) : 123.45`` rows)."""
    reads = {m.group(1): float(m.group(2)) for m in
             re.finditer(r"(?:NODE|Socket|SKT)\s*(\d+)\s+Mem\s*Read\s*\(MB/s\)\s*:\s*([0-9.]+)", text)}
    writes = {m.group(1): float(m.group(2)) for m in
              re.finditer(r"(?:NODE|Socket|SKT)\s*(\d+)\s+Mem\s*Write\s*\(MB/s\)\s*:\s*([0-9.]+)", text)}
    if not reads and not writes:
        raise TelemetryError("pcm-memory output has no 'NODE n Mem Read/Write (MB/s)' rows")
    return MemoryStats(reads, writes)


def mem_bytes_per_packet(mem: MemoryStats, pps: float) -> float:
    if not pps > 0:
        raise TelemetryError(f"packets per second must be > 0, got {pps!r}")
    return mem.total_bytes_per_s / pps


_UNSUPPORTED = (
    ("unsupported processor", "pcm: unsupported processor (Intel server CPU required)"),
    ("CPU is required for this tool", "pcm-pcie: an Intel server CPU is required"),
    ("no MSR or PCI CFG space access", "pcm: no MSR or PCI CFG space access (load msr module, run as root)"),
    ("Access to Intel(r) Performance Counter Monitor has denied", "pcm: access to performance counters denied"),
)


def probe_pcm(runner: Callable = subprocess.run, tool: str = "pcm-pcie") -> Optional[NotSupported]:
    """None when ``tool`` can count here, else the tool's own reason."""
    try:
        res = runner([tool, "-e", "-i=1", "0.1"], capture_output=True, text=True, timeout=20)
    except FileNotFoundError:
        return NotSupported(f"{tool} not installed: apt-get install pcm")
    except subprocess.TimeoutExpired:
        return NotSupported(f"{tool} did not finish within 20 s")
    return reason_from_output((res.stdout or "") + (res.stderr or ""), res.returncode)


def reason_from_output(text: str, code: int = 0) -> Optional[NotSupported]:
    for needle, reason in _UNSUPPORTED:
        if needle in text:
            return NotSupported(reason)
    if code != 0:
        last = text.strip().splitlines()[-1:] or ["no output"]
        return NotSupported(f"pcm exited with code {code}: {last[0]}")
    return None
