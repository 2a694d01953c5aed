"""Which embedded generator runs the trials: ``dpgen`` when it is built, else ``tcpreplay``.

``dpgen`` (persistent, one request per trial) is the default when ``build/dpgen/dpgen``
exists in this checkout (``bash .ci/install`` builds it), ``$DPGATE_DPGEN`` names it, or
``dpgen`` is on ``PATH``; ``--generator tcpreplay|dpgen`` (``dpgate trial``/``gate``, the
Robot variable ``${GENERATOR}``) chooses explicitly.

>>> generator_kind("tcpreplay")
'tcpreplay'
>>> generator_kind("pktgen")
Traceback (most recent call last):
...
dpgate.model.errors.ConfigError: generator: expected 'dpgen' or 'tcpreplay' (or 'auto'), got 'pktgen'
"""

from __future__ import annotations

import subprocess
from typing import Dict, Optional

from dpgate.model.errors import ConfigError

from .dpgen import dpgen_binary, require_dpgen

GENERATORS = ("dpgen", "tcpreplay")


def generator_kind(choice: Optional[str] = None) -> str:
    """'dpgen' or 'tcpreplay' for a user's choice (None, '' or 'auto': the default)."""
    c = (choice or "auto").strip().lower()
    if c == "auto":
        return "dpgen" if dpgen_binary() else "tcpreplay"
    if c not in GENERATORS:
        raise ConfigError(f"expected 'dpgen' or 'tcpreplay' (or 'auto'), got {choice!r}", path="generator")
    if c == "dpgen":
        require_dpgen()
    return c


def make_generator(kind: str, testbed, profile, **kw):
    """A generator of ``kind`` (see :func:`generator_kind`) for ``testbed`` and ``profile``."""
    if kind == "dpgen":
        from .dpgen import DpgenGenerator

        return DpgenGenerator(testbed, profile, **kw)
    from .tcpreplay import TcpreplayGenerator

    return TcpreplayGenerator(testbed, profile, **kw)


_NAMES: Dict[str, str] = {}


def generator_name(kind: str) -> str:
    """``dpgen 1.0`` / ``tcpreplay 4.4.3`` for results and JUnit (``tg``), read once."""
    if kind not in _NAMES:
        if kind == "dpgen":
            name = "dpgen"
            try:
                out = subprocess.run(
                    [require_dpgen(), "--version"], capture_output=True, text=True, timeout=10
                )
                if out.stdout.startswith("dpgen "):
                    name = out.stdout.strip()
            except Exception:  # the tg name is a label: never fail a test over it
                pass
        else:
            from .tcpreplay import tcpreplay_name

            name = tcpreplay_name()
        _NAMES[kind] = name
    return _NAMES[kind]
