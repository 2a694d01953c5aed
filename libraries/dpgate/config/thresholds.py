"""Gate thresholds (variables/<testbed>.yaml): floors and ceilings per NF and frame size.

Format::

    margin_note: "floors = 0.7 x median of 5 runs on a 2-core VM"   # free text
    defaults:                    # apply to every case unless overridden
      pdr_loss: 0.005
    nfs:
      linux-ip4:
        64B:  {ndr_min: 0.150 Mpps, pdr_min: 0.150 Mpps, cpp_max: 40000}
        IMIX: {ndr_min: 0.120 Mpps}

Keys of a case: ndr_min, pdr_min (rates: "0.15 Mpps", "150kpps", 150000), cpp_max (cycles
per packet at NDR), ipc_min, ipp_max, ddio_miss_max (ratio or "5%"), mem_bytes_per_packet_max,
tmam_retiring_min, noise and mrr_noise (run-to-run noise of the case's NDR/PDR and of its MRR
on a healthy testbed, ratio or "15%": the regression check's allowance until the history has
5 runs). Frame-size keys: 64B, 1518B,
IMIX ... (any case), or "all".

Lab cases also differ in cores: a key may end with a core tag (threads T physical cores C,
as in the test names), e.g. ``64B-2T1C`` or ``all-4T2C``. ``lookup(nf, size, cores="2T1C")``
merges, later winning: defaults < all < <size> < all-<tag> < <size>-<tag>. Without
``cores`` only the keys without a tag apply, so embedded files work unchanged::

    nfs:
      vpp-l2patch:
        64B-1T1C: {ndr_min: 13.0 Mpps, cpp_max: 190}
        64B-2T1C: {ndr_min: 15.8 Mpps}

A file may name thresholds of other machine classes (``dpgate.config.machineclass``), by
core speed, by CPU, or both::

    machine_classes:
      - {thresholds: embedded-fast.yaml, core_speed_min: 40, note: "EPYC VMs at 48-63 M it/s"}
      - {thresholds: embedded-zen4.yaml, cpu: "AuthenticAMD family 25 model 17"}

Every bad value is one ConfigError naming file, path and what is accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Dict, List, Optional, Tuple, Union

from dpgate.config import schema
from dpgate.config.units import UnitError, frame_size_tag, parse_frame_size, parse_rate, parse_ratio
from dpgate.model.errors import ConfigError

Number = Union[float, str]
_CORE_TAG = re.compile(r"^(\d+)T(\d+)C$", re.I)


def core_tag(value: str, path: str = "cores") -> str:
    """Normalised core tag: ``2t1c`` -> ``2T1C``; anything else is a ConfigError."""
    m = _CORE_TAG.match(str(value).strip())
    if not m or int(m.group(2)) < 1 or int(m.group(1)) < int(m.group(2)):
        raise ConfigError(
            f"core tag {value!r} is not like 1T1C or 2T1C (threads T physical cores C)", path=path
        )
    return f"{int(m.group(1))}T{int(m.group(2))}C"


def split_case_key(key: str) -> Tuple[str, Optional[str]]:
    """``'64B-2T1C'`` -> ``('64B', '2T1C')``; ``'IMIX'`` -> ``('IMIX', None)``."""
    if "-" in key:
        size, tag = key.rsplit("-", 1)
        return size, tag
    return key, None


def _rate_check(v) -> Optional[str]:
    try:
        r = parse_rate(v)
    except UnitError as err:
        return str(err)
    return "expected an absolute rate (not %)" if r.pps is None else None


def _ratio_check(v) -> Optional[str]:
    try:
        parse_ratio(v, upper_inclusive=True)
    except UnitError as err:
        return str(err)
    return None


def _pos(v) -> Optional[str]:
    return None if float(v) > 0 else "expected a number > 0"


@dataclass(frozen=True)
class CaseThresholds:
    ndr_min: Optional[str] = field(default=None, metadata={"check": _rate_check})
    pdr_min: Optional[str] = field(default=None, metadata={"check": _rate_check})
    cpp_max: Optional[float] = field(default=None, metadata={"check": _pos})
    ipc_min: Optional[float] = field(default=None, metadata={"check": _pos})
    ipp_max: Optional[float] = field(default=None, metadata={"check": _pos})
    ddio_miss_max: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    mem_bytes_per_packet_max: Optional[float] = field(default=None, metadata={"check": _pos})
    tmam_retiring_min: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: run-to-run noise of this case on a healthy testbed (largest change seen between
    #: baseline runs, e.g. "15%"): the regression check's allowance while the history is short (< 5 runs)
    noise: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: the same for MRR (several trials at the ceiling per run: usually far steadier than NDR)
    mrr_noise: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: the fixed offered load of ``cpp_at_load`` (e.g. "100 kpps"), the same in every run so that
    #: runs compare (kernel SUTs batch more per interrupt at higher loads: CPP depends on load);
    #: unset, or above this run's NDR or generator ceiling: 50 % of the smaller of those two
    cpp_load: Optional[str] = field(default=None, metadata={"check": _rate_check})
    #: ceiling of the SUT's own cycles per packet at a fixed load (``cpp_at_load``)
    cpp_at_load_max: Optional[float] = field(default=None, metadata={"check": _pos})
    #: run-to-run noise of cpp_at_load (the regression check's allowance while history is short)
    cpp_noise: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: the same for ``cpp_at_load_scaled`` (kernel SUTs: every trial scaled to a reference
    #: speed, far steadier than the unscaled figure); unset: ``cpp_noise``
    cpp_scaled_noise: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: the same for a polling SUT's ``cpp_at_load_per_kernel`` (its busy cycles per kernel cycle on
    #: the same frames: steadier than either); unset: ``cpp_noise``
    cpp_kernel_noise: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: largest rise of cpp_at_load against a baseline twin measured beside the SUT (the
    #: paired check, ``dpgate gate --paired``, :mod:`dpgate.telemetry.paired`); unset: 5 %
    cpp_paired_max_rise: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: full speed of this machine class's SUT core for cpp_at_load (the awake loop's millions of
    #: iterations per CPU second, ``dpgate.exec.awake``): trials below 90 % of it ran in a slow
    #: phase of the host; they are measured past and a verdict resting on them is inconclusive
    core_speed: Optional[float] = field(default=None, metadata={"check": _pos})
    #: largest foreign share of a TG/SUT core a failing verdict may rest on before it is
    #: inconclusive instead (default 10 %, ``dpgate.telemetry.disturbance``)
    disturbance_max: Optional[str] = field(default=None, metadata={"check": _ratio_check})
    #: wall-clock bound of this case's search, seconds (0 = none): for a SUT whose zero-loss
    #: goal settles slowly; the suite variable ``SEARCH_TIME_LIMIT`` overrides it
    search_time_limit: Optional[float] = field(default=None, metadata={"check": schema.non_negative})

    def merged(self, other: CaseThresholds) -> CaseThresholds:
        vals = {
            f.name: getattr(other, f.name) if getattr(other, f.name) is not None else getattr(self, f.name)
            for f in fields(self)
        }
        return CaseThresholds(**vals)

    @property
    def fixed_cpp_load(self) -> Optional[str]:
        """The load of ``cpp_at_load`` for this case: ``cpp_load``, else half the NDR floor (a
        load every passing run sustains without loss), else None (50 % of this run's NDR or
        ceiling, whichever is smaller).

        >>> CaseThresholds(ndr_min="0.300 Mpps").fixed_cpp_load, CaseThresholds(cpp_load="80kpps").fixed_cpp_load
        ('150000pps', '80kpps')
        """
        if self.cpp_load is not None:
            return self.cpp_load
        floor = self.rate("ndr_min")
        return f"{floor / 2:.0f}pps" if floor else None

    def search_bound(self, given: Union[None, str, float], default: float) -> float:
        """The wall-clock bound of this case's search, seconds (0 = none): ``given`` (the suite
        variable ``SEARCH_TIME_LIMIT``) when set, else ``search_time_limit``, else ``default``.

        >>> t = CaseThresholds(search_time_limit=150)
        >>> t.search_bound(None, 90), t.search_bound("0", 90), CaseThresholds().search_bound(None, 90)
        (150.0, 0.0, 90.0)
        """
        if given is not None:
            try:
                bound = float(given)
            except ValueError:
                bound = -1.0
            if not bound >= 0:
                raise ConfigError(
                    f"expected seconds >= 0 (0 = no bound), got {given!r}", path="SEARCH_TIME_LIMIT"
                )
            return bound
        return float(self.search_time_limit if self.search_time_limit is not None else default)

    def rate(self, key: str) -> Optional[float]:
        v = getattr(self, key)
        return parse_rate(v).pps if v is not None else None

    def ratio(self, key: str) -> Optional[float]:
        v = getattr(self, key)
        return parse_ratio(v, upper_inclusive=True) if v is not None else None


_CPU = re.compile(r"^\S+( family \d+( model \d+)?)?$")


@dataclass(frozen=True)
class MachineClass:
    """Thresholds of another machine class: ``thresholds`` (a file beside this one, its rows
    laid over this file's) applies where the host's cores run ``core_speed_min`` M it/s of
    dpgate's probe loop or faster and, when ``cpu`` is given, where the host's CPU is that one
    (``AuthenticAMD family 25 model 17``, or a prefix of it such as ``AuthenticAMD family 25``:
    ``dpgate.config.machineclass.host_cpu``)."""

    thresholds: str
    core_speed_min: float = field(default=0.0, metadata={"check": schema.non_negative})
    cpu: str = ""
    note: str = ""

    def validate(self):
        if self.cpu and not _CPU.match(self.cpu):
            return (
                "cpu",
                f"expected '<vendor_id> family <n> model <n>' as /proc/cpuinfo says, got {self.cpu!r}",
            )
        if not self.cpu and self.core_speed_min <= 0:
            return (
                "core_speed_min",
                "a class names its cores' speed (core_speed_min > 0) or its cpu, or both",
            )
        return None


def _row_key(key: str) -> str:
    return str(key).upper()


@dataclass(frozen=True)
class ThresholdFile:
    nfs: Dict[str, Dict[str, CaseThresholds]]
    defaults: CaseThresholds = field(default_factory=CaseThresholds)
    margin_note: str = ""
    source: str = ""
    machine_classes: List[MachineClass] = field(default_factory=list)

    def overlaid(self, other: ThresholdFile) -> ThresholdFile:
        """This file with ``other``'s rows laid over it, key by key (a machine class's file
        holds what was measured there; the rest, e.g. ``cpp_paired_max_rise``, stays).

        >>> base = ThresholdFile(nfs={"a": {"64B": CaseThresholds(ndr_min="1 Mpps", noise="5%")}})
        >>> top = ThresholdFile(nfs={"a": {"64b": CaseThresholds(ndr_min="2 Mpps")}, "b": {}})
        >>> row = base.overlaid(top).nfs["a"]["64B"]
        >>> row.ndr_min, row.noise
        ('2 Mpps', '5%')
        """
        nfs = {nf: dict(rows) for nf, rows in self.nfs.items()}
        for nf, rows in other.nfs.items():
            mine = nfs.setdefault(nf, {})
            names = {_row_key(k): k for k in mine}
            for key, row in rows.items():
                have = names.get(_row_key(key))
                if have is None:
                    mine[key] = row
                else:
                    mine[have] = mine[have].merged(row)
        return ThresholdFile(
            nfs=nfs,
            defaults=self.defaults.merged(other.defaults),
            margin_note=other.margin_note or self.margin_note,
            source=other.source or self.source,
        )

    def validate(self):
        for nf, cases in self.nfs.items():
            for key in cases:
                size, tag = split_case_key(str(key))
                if tag is not None:
                    try:
                        core_tag(tag)
                    except ConfigError as err:
                        return (f"nfs.{nf}.{key}", err.reason)
                if size.lower() == "all":
                    continue
                try:
                    parse_frame_size(size)
                except UnitError as err:
                    return (f"nfs.{nf}.{key}", str(err))
        return None

    def lookup(self, nf: str, frame_size, cores: Optional[str] = None) -> CaseThresholds:
        """Thresholds for one case: defaults < nf 'all' < nf <frame size>; with ``cores``
        (a core tag like ``2T1C``) then < 'all-<tag>' < '<frame size>-<tag>'."""
        if nf not in self.nfs:
            raise ConfigError(
                f"no thresholds for NF {nf!r}; known: {', '.join(sorted(self.nfs))}. Add it under nfs:",
                self.source,
                f"nfs.{nf}",
            )
        tag = frame_size_tag(parse_frame_size(frame_size))
        cases = {}
        for k, v in self.nfs[nf].items():
            size, ctag = split_case_key(str(k))
            size = "ALL" if size.lower() == "all" else frame_size_tag(parse_frame_size(size)).upper()
            cases[f"{size}-{core_tag(ctag)}" if ctag else size] = v
        keys = ["ALL", tag.upper()]
        if cores:
            ct = core_tag(cores)
            keys += [f"ALL-{ct}", f"{tag.upper()}-{ct}"]
        out = self.defaults
        for key in keys:
            if key in cases:
                out = out.merged(cases[key])
        return out


def load_thresholds(path: str) -> ThresholdFile:
    data = schema.read_yaml(path, "pass --thresholds with an existing file, e.g. variables/embedded.yaml")
    if isinstance(data, dict):
        data = {k: v for k, v in data.items() if k != "THRESHOLDS_FILE"}
        data.setdefault("source", path)
    return schema.load(ThresholdFile, data, source=path)
