"""pcm-pcie output (PCIe traffic, DDIO hit/miss) to events per second.

Formats follow intel/pcm ``src/pcm-pcie.h`` (``LegacyPlatform::printHeader``,
``printSocketScopeEvents``, ``printAggregatedEvents``) and ``src/pcm-memory.cpp``
(``printSocketBWFooter``, ``display_bandwidth_csv``); tests/fixtures/telemetry/README.md
lists the fixtures built from them.

``parse_pcie(text, interval_s=1.0)`` accepts both outputs of pcm-pcie:

* the table (seed 000 Figure 24, and current pcm): a header ``Skt |  <event>  |  ...``
  (``|  PCIe Rd (B)  |  PCIe Wr (B)`` appended with ``-B``), per socket a row of counts
  printed ``%4d`` with a `` K``/`` M``/`` G``/`` T`` suffix, and with ``-e`` three rows per
  socket suffixed ``(Total)``, ``(Miss)``, ``(Hit)``; then a dashed line and an ``*`` row
  (``(Aggregate)`` with ``-e``);
* CSV (``-csv``): a header ``Skt,<event>,...[,PCIe Rd (B),PCIe Wr (B)]`` and per socket
  ``<skt>,<count>,...``; with ``-e`` pcm appends ``(Total)``/``(Miss)``/``(Hit)`` straight
  after the last number, without a separator (``0,123,45(Miss)``). No aggregate row.

With ``-i=N`` the header and rows repeat N times; samples are averaged. Counts are per
sampling interval (pcm's ``<delay>``, 1 s by default): pass ``interval_s`` to get
events/s. Event sets differ per CPU generation (``PCIeRdCur RFO CRd DRd ItoM PRd WiL`` on
Haswell/Broadwell/Skylake/Cascade Lake; ``PCIRdCur ItoM ItoMCacheNear UCRdF WiL`` on
Icelake; plus ``WCiL WCiLF`` on Sapphire Rapids and later); ``PCIRdCur`` and ``PCIeRdCur``
are the same event. Events pcm counts only as misses (UCRdF, WiL, WCiL) have Hit = 0.

Inconsistent rows are errors, never numbers: a Miss larger than its Total by more than
``MISS_TOLERANCE`` (0.1 %; up to that, Miss is taken as Total and the correction is listed
in ``PcieStats.corrections``: old pcm releases read Total and Miss at different times) and counts at
or above ``WRAP_LIMIT`` (2^60: a counter difference that went negative and wrapped around
2^64; no PCIe event reaches 10^18 in any interval) raise TelemetryError naming the socket,
the event and the line, so a run with a broken sample is repeated, not gated.

>>> s = parse_pcie("Skt,PCIRdCur,ItoM\\n0,1000,400(Total)\\n0,10,100(Miss)\\n0,990,300(Hit)\\n")
>>> s.total("PCIeRdCur"), s.miss_rate("ItoM")
(1000.0, 0.25)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from . import NotSupported, TelemetryError

_SUFFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
#: Counts at or above this are wrapped counters (2^64 - small), not traffic.
WRAP_LIMIT = float(2**60)
#: Miss above Total by at most this share of Total is taken as Total (and recorded in
#: ``PcieStats.corrections``): seed 000 Figure 24 shows WiL Miss 1892 K over Total 1891 K,
#: counters read microseconds apart. More than this is an error.
MISS_TOLERANCE = 0.001
_KINDS = ("total", "miss", "hit")
_KIND_AT_END = re.compile(r"^(.*?)\s*\((Total|Miss|Hit|Aggregate)\)\s*$")
_ALIASES = {"pcirdcur": "pcierdcur"}
BANDWIDTH_COLUMNS = ("PCIe Rd (B)", "PCIe Wr (B)")
CACHE_LINE = 64
#: Inbound PCIe events whose LLC hit/miss split is the DDIO hit/miss (seed 000 Table 17).
DDIO_EVENTS = ("PCIeRdCur", "RFO", "CRd", "DRd", "ItoM", "ItoMCacheNear")


def event_key(event: str) -> str:
    """Canonical lower-case key: ``PCIRdCur`` and ``PCIeRdCur`` are one event.

    >>> event_key("PCIRdCur"), event_key(" ItoM ")
    ('pcierdcur', 'itom')
    """
    k = event.strip().lower()
    return _ALIASES.get(k, k)


@dataclass(frozen=True)
class PcieStats:
    """pcm-pcie counts in events (cache-line transfers) per second.

    ``rows[(socket, kind)][event_key]``: kind is total/miss/hit; socket ``"*"`` is the
    table's aggregate row. ``bandwidth[(socket, kind)]`` holds the ``-B`` byte columns.
    """

    events: Tuple[str, ...]
    rows: Dict[Tuple[str, str], Dict[str, float]] = field(default_factory=dict)
    bandwidth: Dict[Tuple[str, str], Dict[str, float]] = field(default_factory=dict)
    samples: int = 1
    #: documented corrections applied (Miss a hair above Total taken as Total), as text
    corrections: Tuple[str, ...] = ()

    @property
    def sockets(self) -> List[str]:
        return sorted({s for s, _ in self.rows if s != "*"}, key=lambda s: int(s) if s.isdigit() else 0)

    def has(self, event: str) -> bool:
        return event_key(event) in {event_key(e) for e in self.events}

    def _sum(self, kind: str, event: str) -> Optional[float]:
        k = event_key(event)
        vals = [r[k] for (s, kd), r in self.rows.items() if kd == kind and s != "*" and k in r]
        if vals:
            return sum(vals)
        agg = self.rows.get(("*", kind))
        return agg.get(k) if agg else None

    def _require(self, event: str) -> None:
        if not self.has(event):
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
                raise TelemetryError(
                    f"pcm-pcie output has no Miss/Hit split for {event!r}: run pcm-pcie with -e"
                )
            m = self.total(event) - h
            if m < 0:
                raise TelemetryError(
                    f"pcm-pcie {event}: Hit {h:g} > Total {self.total(event):g} (inconsistent sample)"
                )
        return m

    def hit(self, event: str) -> float:
        self._require(event)
        h = self._sum("hit", event)
        return h if h is not None else self.total(event) - self.miss(event)

    def miss_rate(self, event: str) -> float:
        """miss / total in 0..1 (0 when the event did not occur)."""
        t, m = self.total(event), self.miss(event)
        if m > t:
            raise TelemetryError(f"pcm-pcie {event}: Miss {m:g} > Total {t:g} (inconsistent sample)")
        return m / t if t else 0.0

    @property
    def has_split(self) -> bool:
        return any(kind in ("miss", "hit") for _, kind in self.rows)


def _count(token: str, where: str) -> float:
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)\s*([KMGT]?)", token.strip())
    if not m:
        raise TelemetryError(f"{where}: {token.strip()!r} is not a count")
    value = float(m.group(1)) * _SUFFIX[m.group(2)]
    if value >= WRAP_LIMIT:
        raise TelemetryError(
            f"{where}: {token.strip()} is near 2^64: a wrapped counter (a difference that "
            "went negative), not a count; repeat the measurement"
        )
    return value


def _table_values(text: str, where: str) -> List[float]:
    """Counts of one table row: ``45 M  8587 K   0  1891 K`` (unit_format: %4d + suffix)."""
    toks = re.findall(r"[0-9]*\.?[0-9]+(?:\s+[KMGT](?![A-Za-z]))?", text)
    rest = re.sub(r"[0-9]*\.?[0-9]+(?:\s+[KMGT](?![A-Za-z]))?", " ", text).strip()
    if rest:
        raise TelemetryError(f"{where}: {rest.split()[0]!r} is not a count")
    return [_count(t, where) for t in toks]


def _split_columns(names: Sequence[str]) -> Tuple[Tuple[str, ...], Tuple[str, ...]]:
    events = tuple(n for n in names if n not in BANDWIDTH_COLUMNS)
    bw = tuple(n for n in names if n in BANDWIDTH_COLUMNS)
    if list(names) != list(events) + list(bw):
        raise TelemetryError(f"pcm-pcie header puts bandwidth columns before events: {', '.join(names)}")
    return events, bw


class _Acc:
    """Sums rows over repeated samples (-i=N) so they can be averaged."""

    def __init__(self) -> None:
        self.rows: Dict[Tuple[str, str], Dict[str, float]] = {}
        self.bw: Dict[Tuple[str, str], Dict[str, float]] = {}
        self.samples = 0
        self.last_total: Dict[str, Dict[str, float]] = {}
        self.corrections: List[str] = []

    def add(
        self,
        sock: str,
        kind: str,
        events: Sequence[str],
        bw: Sequence[str],
        vals: Sequence[float],
        where: str = "pcm-pcie",
    ) -> None:
        vals = list(vals)
        if kind == "total":
            self.last_total[sock] = dict(zip(events, vals))
        elif kind == "miss" and sock in self.last_total:
            tot = self.last_total[sock]
            for i, e in enumerate(events):
                t, m = tot.get(e), vals[i]
                if t is None or m <= t:
                    continue
                if m - t <= MISS_TOLERANCE * t:
                    self.corrections.append(
                        f"{where}: socket {sock} {e} Miss {m:g} > Total {t:g} by {100 * (m - t) / t:.2f} %: Miss taken as Total"
                    )
                    vals[i] = t
                    continue
                raise TelemetryError(
                    f"{where}: socket {sock} {e} Miss {m:g} > Total {t:g}: inconsistent "
                    "pcm-pcie sample (old pcm releases read Total and Miss at different "
                    "times); upgrade pcm or repeat the measurement"
                )
        row = self.rows.setdefault((sock, kind), {})
        for e, v in zip(events, vals):
            row[event_key(e)] = row.get(event_key(e), 0.0) + v
        if bw:
            brow = self.bw.setdefault((sock, kind), {})
            for b, v in zip(bw, vals[len(events) :]):
                brow[b] = brow.get(b, 0.0) + v

    def stats(self, events: Tuple[str, ...], interval_s: float) -> PcieStats:
        n = max(1, self.samples)
        scale = 1.0 / (n * interval_s)
        rows = {k: {e: v * scale for e, v in r.items()} for k, r in self.rows.items()}
        bw = {k: {e: v * scale for e, v in r.items()} for k, r in self.bw.items()}
        return PcieStats(events, rows, bw, n, tuple(self.corrections))


def _parse_table(text: str, interval_s: float) -> PcieStats:
    lines = text.splitlines()
    acc = _Acc()
    events: Tuple[str, ...] = ()
    bw: Tuple[str, ...] = ()
    for n, raw in enumerate(lines, 1):
        if re.match(r"^\s*Skt\s*\|", raw):
            names = [c.strip() for c in raw.split("|")[1:] if c.strip()]
            if not names:
                raise TelemetryError(f"pcm-pcie table line {n}: header 'Skt |' names no events")
            ev, b = _split_columns(names)
            if events and ev != events:
                raise TelemetryError(f"pcm-pcie table line {n}: event set changed from {', '.join(events)}")
            events, bw = ev, b
            acc.samples += 1
            continue
        m = re.match(r"^\s*([0-9]+|\*)\s+(.*?)\s*$", raw)
        if not m or not events:
            continue
        body, kind = m.group(2), "total"
        k = _KIND_AT_END.match(body)
        if k:
            body, kind = k.group(1), k.group(2).lower()
        if kind == "aggregate":
            kind = "total"
        vals = _table_values(body, f"pcm-pcie table line {n}")
        want = len(events) + len(bw)
        if len(vals) != want:
            raise TelemetryError(
                f"pcm-pcie table line {n}: {len(vals)} values for {want} columns "
                f"({', '.join(events + bw)}): {raw.strip()!r} (truncated?)"
            )
        acc.add(m.group(1), kind, events, bw, vals, f"pcm-pcie table line {n}")
    if not events:
        raise TelemetryError("pcm-pcie table has no 'Skt | <events>' header (not pcm-pcie output?)")
    if not acc.rows:
        raise TelemetryError("pcm-pcie table has a header but no socket rows (truncated?)")
    return acc.stats(events, interval_s)


def _parse_csv(text: str, interval_s: float) -> PcieStats:
    acc = _Acc()
    events: Tuple[str, ...] = ()
    bw: Tuple[str, ...] = ()
    seen_header = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        cells = [c.strip() for c in line.split(",")]
        if cells[0] == "Skt":
            ev, b = _split_columns([c for c in cells[1:]])
            if any(not c for c in ev):
                raise TelemetryError(f"pcm-pcie CSV line {n}: empty event name in header {line!r}")
            if events and ev != events:
                raise TelemetryError(f"pcm-pcie CSV line {n}: event set changed from {', '.join(events)}")
            events, bw, seen_header = ev, b, True
            acc.samples += 1
            continue
        if not seen_header:
            continue  # banner or diagnostics before the first header
        if not cells[0].isdigit():
            raise TelemetryError(f"pcm-pcie CSV line {n}: socket {cells[0]!r} is not a number: {line!r}")
        kind = "total"
        k = _KIND_AT_END.match(cells[-1])
        if k:
            cells[-1], kind = k.group(1), k.group(2).lower()
        want = len(events) + len(bw)
        if len(cells) - 1 != want:
            raise TelemetryError(
                f"pcm-pcie CSV line {n}: {len(cells) - 1} values for {want} columns ({', '.join(events + bw)}) (truncated?)"
            )
        vals = [_count(c, f"pcm-pcie CSV line {n}") for c in cells[1:]]
        acc.add(cells[0], kind, events, bw, vals, f"pcm-pcie CSV line {n}")
    if not seen_header:
        raise TelemetryError("pcm-pcie CSV has no 'Skt,<events>' header (not pcm-pcie -csv output?)")
    if not acc.rows:
        raise TelemetryError("pcm-pcie CSV has a header but no socket rows (truncated?)")
    return acc.stats(events, interval_s)


def parse_pcie(text: str, interval_s: float = 1.0) -> PcieStats:
    """Parse pcm-pcie output (table or CSV) into events/s. Errors name what is missing."""
    if not text or not text.strip():
        raise TelemetryError("pcm-pcie output is empty")
    if not interval_s > 0:
        raise TelemetryError(f"pcm-pcie interval must be > 0 s, got {interval_s!r}")
    if re.search(r"^\s*Skt\s*\|", text, re.MULTILINE):
        return _parse_table(text, interval_s)
    if re.search(r"^Skt,", text, re.MULTILINE):
        return _parse_csv(text, interval_s)
    if re.search(r"\bSkt\b", text):
        return _parse_table(text, interval_s)
    raise TelemetryError("pcm-pcie output has no 'Skt' header row (table 'Skt | ...' or CSV 'Skt,...')")


def ddio_miss_rates(stats: PcieStats) -> Dict[str, float]:
    """``ddio_miss_rate_<event>`` for each inbound event with a hit/miss split."""
    if not stats.has_split:
        return {}
    return {f"ddio_miss_rate_{event_key(e)}": stats.miss_rate(e) for e in DDIO_EVENTS if stats.has(e)}


def pcie_per_packet(stats: PcieStats, pps: float, reason_prefix: str = "pcm-pcie") -> Dict[str, object]:
    """DDIO miss rates, PCIe bytes and MMIO writes per packet; NotSupported where absent.

    Read bytes = PCIe reads of whole lines (PCIeRdCur) x 64; write bytes = inbound writes
    (ItoM, ItoMCacheNear, RFO: whichever this generation has) x 64; WiL per packet = CPU
    MMIO writes (tail-pointer updates) per packet. Seed 000 section 7.2 reads Figure 24
    this way.
    """
    if not pps > 0:
        raise TelemetryError(f"packets per second must be > 0, got {pps!r}")
    have = ", ".join(stats.events)
    out: Dict[str, object] = {}
    for e in ("ItoM", "RFO", "PCIeRdCur", "ItoMCacheNear"):
        key = f"ddio_miss_rate_{event_key(e)}"
        if not stats.has(e):
            out[key] = NotSupported(f"{reason_prefix}: this CPU generation has no {e} event (it has {have})")
        elif not stats.has_split:
            out[key] = NotSupported(f"{reason_prefix}: no Miss/Hit rows (run pcm-pcie with -e)")
    out.update(ddio_miss_rates(stats))
    if stats.has("PCIeRdCur"):
        out["pcie_rd_bytes_per_packet"] = stats.total("PCIeRdCur") * CACHE_LINE / pps
    else:
        out["pcie_rd_bytes_per_packet"] = NotSupported(
            f"{reason_prefix}: no PCIeRdCur/PCIRdCur event (it has {have})"
        )
    writes = [e for e in ("ItoM", "ItoMCacheNear", "RFO") if stats.has(e)]
    out["pcie_wr_bytes_per_packet"] = (
        sum(stats.total(e) for e in writes) * CACHE_LINE / pps
        if writes
        else NotSupported(f"{reason_prefix}: no ItoM/RFO write event (it has {have})")
    )
    out["wil_per_packet"] = (
        stats.total("WiL") / pps
        if stats.has("WiL")
        else NotSupported(f"{reason_prefix}: no WiL (MMIO write) event (it has {have})")
    )
    return out
