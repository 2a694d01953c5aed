"""The one table of the tools dpgate calls and the package that provides each, for the
"how to fix it" part of a missing-tool error (Debian package names, else where to get it).

>>> package_for("tcpreplay"), package_for("toplev"), package_for("unknown-tool")
('tcpreplay', 'pmu-tools (git clone)', 'unknown-tool')
"""

from __future__ import annotations

from typing import Dict

PACKAGES: Dict[str, str] = {
    "ip": "iproute2",
    "ethtool": "ethtool",
    "taskset": "util-linux",
    "tcpreplay": "tcpreplay",
    "tc": "iproute2",
    "ss": "iproute2",
    "ovs-vswitchd": "openvswitch-switch",
    "ovsdb-server": "openvswitch-switch",
    "ovs-vsctl": "openvswitch-switch",
    "ovs-ofctl": "openvswitch-common",
    "ovs-appctl": "openvswitch-common",
    "ovsdb-tool": "openvswitch-common",
    "dpdk-testpmd": "dpdk-dev",
    "perf": "linux-perf",
    "pcm-pcie": "pcm",
    "pcm-memory": "pcm",
    "toplev": "pmu-tools (git clone)",
    "toplev.py": "pmu-tools (git clone)",
}


def package_for(tool: str) -> str:
    """What to install for ``tool`` (its own name when the table does not know it)."""
    return PACKAGES.get(tool, tool)
