"""The host's CPU as the kernel names it: which host measured a figure.

Two VMs of one speed class can differ in what the same work costs: on the Zen 3 and the Xeon
hosts of 2026-11-28 and 11-30 (both 2 vCPUs probing 13-37 M it/s) a packet load cost l3fwd
1.9 % and 0.6-1.2 % of its cycles, and testpmd-mac forwarded at ~11,000 and ~4,500 cycles a
packet. So the cost injection's calibration (``testbeds.embedded.suts.cost``) and the
regression history (``dpgate.regression``) keep figures per CPU model.

>>> cpu_model("processor\\t: 0\\nvendor_id\\t: GenuineIntel\\nmodel name\\t: Intel(R) Xeon(R) Processor\\n")
'Intel(R) Xeon(R) Processor'
>>> cpu_model("processor : 0\\nmodel name : \\n") is None, cpu_model("") is None
(True, True)

A record names the CPU two ways (:func:`cpu_facts`): ``host_cpu_model``, the model name, and
``host_cpu_id``, ``<vendor_id> family F model M`` as machine classes name it. A hypervisor may
cut the model name to the vendor's line (the Zen 4 VM of 2026-12-02 reads ``AMD EPYC``, as
AMD hosts of other generations may), so the history tells hosts apart by both.

>>> cpu_facts("vendor_id\\t: AuthenticAMD\\ncpu family\\t: 25\\nmodel\\t\\t: 17\\nmodel name\\t: AMD EPYC\\n")
{'host_cpu_model': 'AMD EPYC', 'host_cpu_id': 'AuthenticAMD family 25 model 17'}

A lab DUT's CPU is read on its node (:func:`node_cpu_facts`): a lab testbed's history is then kept
per DUT CPU too, so a testbed name moved to other hardware starts a new history.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from dpgate.model.errors import DpgateError

CPUINFO = "/proc/cpuinfo"


def _cpuinfo(text: Optional[str]) -> Optional[str]:
    """``text``, or /proc/cpuinfo read when it is None (None where it cannot be read)."""
    if text is not None:
        return text
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _first(text: Optional[str], name: str) -> Optional[str]:
    """The first value of field ``name`` in ``text`` (None: absent, empty or unreadable)."""
    text = _cpuinfo(text)
    if text is None:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip() or None
    return None


def cpu_model(text: Optional[str] = None) -> Optional[str]:
    """The first ``model name`` of /proc/cpuinfo (or of ``text``); None where it names none
    (e.g. some ARM kernels) or cannot be read."""
    return _first(text, "model name")


def cpu_id(text: Optional[str] = None) -> Optional[str]:
    """``<vendor_id> family F model M`` of the first CPU: how thresholds' machine classes name
    a CPU (``dpgate.config.machineclass``); None where any part is missing.

    >>> cpu_id("processor\\t: 0\\nvendor_id\\t: AuthenticAMD\\ncpu family\\t: 25\\nmodel\\t\\t: 17\\n")
    'AuthenticAMD family 25 model 17'
    >>> cpu_id("processor\\t: 0\\ncpu family\\t: 25\\nmodel\\t\\t: 17\\n") is None
    True
    """
    text = _cpuinfo(text)
    if text is None:  # unreadable: read once, not again by each field
        return None
    vendor, fm = _first(text, "vendor_id"), cpu_family_model(text)
    return f"{vendor} {fm}" if vendor and fm and " " not in vendor else None


def cpu_family_model(text: Optional[str] = None) -> Optional[str]:
    """``family F model M`` of the first CPU in /proc/cpuinfo (or ``text``): what tells hosts
    apart whose ``model name`` a hypervisor cut to the vendor's line (the Zen 4 VM of 2026-12-02
    reads ``AMD EPYC``, family 25 model 17, as AMD hosts of other generations may); None where
    either is missing.

    >>> cpu_family_model("processor\\t: 0\\ncpu family\\t: 25\\nmodel\\t\\t: 17\\nmodel name\\t: AMD EPYC\\n")
    'family 25 model 17'
    >>> cpu_family_model("model name : AMD EPYC\\n") is None
    True
    """
    text = _cpuinfo(text)
    if text is None:
        return None
    got: dict = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key in ("cpu family", "model") and key not in got:
            got[key] = value.strip()
        if not line.strip() and got:  # the first CPU's block ends
            break
    if got.get("cpu family") and got.get("model"):
        return f"family {got['cpu family']} model {got['model']}"
    return None


def cpu_facts(text: Optional[str] = None) -> Dict[str, str]:
    """``host_cpu_model`` and ``host_cpu_id`` of this host (or of cpuinfo ``text``), each where
    it can be read: what a record says of the CPU that measured it."""
    text = _cpuinfo(text)
    if text is None:
        return {}
    facts = {"host_cpu_model": cpu_model(text), "host_cpu_id": cpu_id(text)}
    return {k: v for k, v in facts.items() if v}


def node_cpu_facts(node: Any) -> Dict[str, str]:
    """:func:`cpu_facts` of a lab node (``dpgate.exec`` Node: local or over SSH) from its
    /proc/cpuinfo; empty where the read fails (the record then names no CPU and its history is
    compared as before, per testbed)."""
    try:
        res = node.run(["cat", CPUINFO], check=False, timeout=15)
    except DpgateError:  # a node that stopped answering fails the next real step with its own error
        return {}
    return cpu_facts(res.stdout) if res.returncode == 0 else {}
