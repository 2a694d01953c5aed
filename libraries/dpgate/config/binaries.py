"""Which build of a SUT's program to run: ``dpdk-testpmd=/build/app/dpdk-testpmd``.

A per-patch job measures the patched build against its parent, both on this machine: the
SUT under test runs ``--sut-binary`` and the paired check's baseline twin ``--baseline-binary``
(docs/embedded.md "Paired check"). An entry names the program it replaces, so one setting
serves every suite of a gate run: SUTs that run that program take the path, the others (the
kernel's, OVS's) are unaffected. Without an entry a SUT runs the installed program.

>>> import sys
>>> parse_binaries(f"dpdk-testpmd={sys.executable}", "sut_binary") == {"dpdk-testpmd": sys.executable}
True
>>> parse_binaries("", "sut_binary")
{}
>>> parse_binaries("testpmd=/x", "sut_binary")
Traceback (most recent call last):
...
dpgate.model.errors.ConfigError: sut_binary: 'testpmd' is not a program an embedded SUT runs (one of dpdk-l3fwd, dpdk-testpmd: NAME=PATH)
"""

from __future__ import annotations

import os
from typing import Dict

from dpgate.model.errors import ConfigError

#: The programs whose build can be chosen, and the embedded SUTs that run them.
PROGRAMS: Dict[str, tuple] = {
    "dpdk-testpmd": ("testpmd-io", "testpmd-mac"),
    "dpdk-l3fwd": ("l3fwd-ip4",),
}


def parse_binaries(text: str, field: str) -> Dict[str, str]:
    """``NAME=PATH[,NAME=PATH]`` to {program: absolute path}; each path an executable file."""
    out: Dict[str, str] = {}
    for entry in [e.strip() for e in str(text or "").split(",") if e.strip()]:
        name, sep, path = entry.partition("=")
        name, path = name.strip(), path.strip()
        if not sep or not path:
            raise ConfigError(
                f"{entry!r} must be NAME=PATH, e.g. dpdk-testpmd=/build/app/dpdk-testpmd", path=field
            )
        if name not in PROGRAMS:
            raise ConfigError(
                f"{name!r} is not a program an embedded SUT runs (one of {', '.join(sorted(PROGRAMS))}: NAME=PATH)",
                path=field,
            )
        if name in out:
            raise ConfigError(f"{name} is given twice", path=field)
        full = os.path.abspath(path)
        if not os.path.isfile(full) or not os.access(full, os.X_OK):
            raise ConfigError(
                f"{name}={path}: no executable file there; give the path of a built {name}", path=field
            )
        out[name] = full
    return out


def joined(binaries: Dict[str, str]) -> str:
    """The inverse of :func:`parse_binaries` (a Robot variable's value).

    >>> joined({"dpdk-testpmd": "/a", "dpdk-l3fwd": "/b"})
    'dpdk-testpmd=/a,dpdk-l3fwd=/b'
    """
    return ",".join(f"{k}={v}" for k, v in binaries.items())
