"""Where the lab-on-one-machine tools are: VPP, TRex (vendor builds) and the l3fwd build.

Order: the environment (``DPGATE_VPP``, ``DPGATE_TREX``: install directories), then what
``bash .ci/install`` unpacked from ``$DPGATE_VENDOR`` (default ``../shared/vendor``) into
``<repo>/.vendor/``. l3fwd: ``DPGATE_L3FWD`` (the binary), else ``<repo>/build/l3fwd/``.
Missing tools give one line naming what is missing and how to provide it.

Example::

    vpp_dir()        # '/work/wt/dut/.vendor/vpp-26.10-rc0'
    missing()        # [] or ['VPP: set DPGATE_VPP=<vpp install dir> or ...']
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional

from dpgate.model.errors import EnvironmentProblem

REPO = Path(__file__).resolve().parents[4]
VENDOR_DIR = REPO / ".vendor"
VPP_TREE = "vpp-26.10-rc0"
TREX_TREE = "trex-v3.08"


def _pick(env: str, default: Path, probe: str) -> Optional[str]:
    path = os.environ.get(env) or str(default)
    return path if os.path.exists(os.path.join(path, probe)) else None


def vpp_dir() -> Optional[str]:
    """VPP install directory (``bin/vpp`` inside), or None."""
    return _pick("DPGATE_VPP", VENDOR_DIR / VPP_TREE, "bin/vpp")


def trex_dir() -> Optional[str]:
    """TRex install directory (``trex-sw-server`` or ``_t-rex-64`` inside), or None."""
    return _pick("DPGATE_TREX", VENDOR_DIR / TREX_TREE, "automation")


def l3fwd_bin() -> Optional[str]:
    path = os.environ.get("DPGATE_L3FWD") or str(REPO / "build" / "l3fwd" / "dpdk-l3fwd")
    return path if os.access(path, os.X_OK) else None


HOWTO = {
    "VPP": "set DPGATE_VPP=<VPP install dir with bin/vpp>, or put vpp-26.10-rc0-debian12-x86_64.tar.xz in "
    "$DPGATE_VENDOR (default ../shared/vendor) and run bash .ci/install",
    "TRex": "set DPGATE_TREX=<TRex v3.08 install dir>, or put trex-v3.08-debian12-x86_64.tar.xz in "
    "$DPGATE_VENDOR (default ../shared/vendor) and run bash .ci/install",
    "l3fwd": "run bash .ci/install (builds build/l3fwd/dpdk-l3fwd from /usr/share/dpdk/examples, needs dpdk-dev "
    "and dpdk-doc) or set DPGATE_L3FWD=<dpdk-l3fwd binary>",
}


def missing(*what: str) -> List[str]:
    """One line per missing tool among ``what`` (default all): 'VPP: set DPGATE_VPP=...'."""
    probes = {"VPP": vpp_dir, "TRex": trex_dir, "l3fwd": l3fwd_bin}
    return [f"{w}: {HOWTO[w]}" for w in (what or tuple(probes)) if probes[w]() is None]


def require(what: str) -> str:
    """The tool's path, or EnvironmentProblem with how to provide it."""
    path = {"VPP": vpp_dir, "TRex": trex_dir, "l3fwd": l3fwd_bin}[what]()
    if path is None:
        raise EnvironmentProblem(f"{what} not found: {HOWTO[what]}")
    return path
