"""pcm-pcie (PCIe traffic, DDIO hit/miss) and pcm-memory (memory bandwidth): how to run
them, why they cannot count, and their parsers (:mod:`.pcm_pcie`, :mod:`.pcm_memory`,
re-exported here: ``dpgate.telemetry.pcm.parse_pcie`` / ``parse_memory`` are public names).

>>> pcie_argv(2), memory_argv(2)
(['pcm-pcie', '-csv', '-e', '-B', '-i=1', '2'], ['pcm-memory', '-csv', '-nc', '-i=1', '2'])
"""

from __future__ import annotations

from typing import List, Optional

from . import NotSupported
from .pcm_memory import MemoryStats, mem_bytes_per_packet, parse_memory
from .pcm_pcie import (
    BANDWIDTH_COLUMNS,
    CACHE_LINE,
    DDIO_EVENTS,
    WRAP_LIMIT,
    PcieStats,
    ddio_miss_rates,
    event_key,
    parse_pcie,
    pcie_per_packet,
)

__all__ = [
    "BANDWIDTH_COLUMNS",
    "CACHE_LINE",
    "DDIO_EVENTS",
    "WRAP_LIMIT",
    "MemoryStats",
    "PcieStats",
    "ddio_miss_rates",
    "event_key",
    "mem_bytes_per_packet",
    "memory_argv",
    "parse_memory",
    "parse_pcie",
    "pcie_argv",
    "pcie_per_packet",
    "probe_pcm",
    "reason_from_output",
]


# -- unsupported hosts -------------------------------------------------------------------
_UNSUPPORTED = (
    ("unsupported processor", "pcm: unsupported processor (Intel server CPU required)"),
    ("CPU is required for this tool", "pcm-pcie: an Intel server CPU is required"),
    ("no MSR or PCI CFG space access", "pcm: no MSR or PCI CFG space access (load msr module, run as root)"),
    (
        "Access to Intel(r) Performance Counter Monitor has denied",
        "pcm: access to performance counters denied",
    ),
    ("Access to Processor Counter Monitor has denied", "pcm: access to performance counters denied"),
    ("Core offlining is not supported", "pcm-pcie: offlined cores are not supported on this processor"),
)


def reason_from_output(text: str, code: int = 0, tool: str = "pcm") -> Optional[NotSupported]:
    """The tool's own reason it cannot count, or None when it ran."""
    for needle, reason in _UNSUPPORTED:
        if needle in text:
            return NotSupported(reason)
    if code in (126, 127) and ("not found" in text or "No such file" in text):
        return NotSupported(f"{tool} not installed: apt-get install pcm")
    if code != 0:
        last = text.strip().splitlines()[-1:] or ["no output"]
        return NotSupported(f"{tool} exited with code {code}: {last[0]}")
    return None


def pcie_argv(duration_s: float, tool: str = "pcm-pcie") -> List[str]:
    """pcm-pcie for one sample of ``duration_s``: CSV, Miss/Hit rows (-e), byte columns (-B).

    >>> pcie_argv(2)
    ['pcm-pcie', '-csv', '-e', '-B', '-i=1', '2']
    """
    return [tool, "-csv", "-e", "-B", "-i=1", f"{duration_s:g}"]


def memory_argv(duration_s: float, tool: str = "pcm-memory") -> List[str]:
    """pcm-memory for one sample of ``duration_s``: CSV, no per-channel columns.

    >>> memory_argv(2)
    ['pcm-memory', '-csv', '-nc', '-i=1', '2']
    """
    return [tool, "-csv", "-nc", "-i=1", f"{duration_s:g}"]


def probe_pcm(node=None, tool: str = "pcm-pcie") -> Optional[NotSupported]:
    """None when ``tool`` can count on ``node`` (a dpgate.exec.remote node), else the tool's reason."""
    from ._run import run_tool

    argv = [tool, "-csv", "-i=1", "0.1"]
    res = run_tool(node, argv, timeout=20)
    if isinstance(res, NotSupported):
        return res
    return reason_from_output((res.stdout or "") + (res.stderr or ""), res.returncode, tool)
