"""Where TRex is, and importing its Python client without breaking dpgate.

* The TRex install is the directory holding ``trex-sw-server`` (the vendor build of
  ../shared/vendor, unpacked by ``.ci/install`` into ``<repo>/.vendor/trex-v3.08``) or the
  directory named by ``DPGATE_TREX``. Missing: one error saying how to provide it.
* The client is ``<trex>/automation/trex_control_plane/interactive`` (``trex.stl.api``).
  Importing ``trex`` swaps its bundled ``yaml`` (PyYAML 3.11), ``scapy`` and ``zmq`` into
  ``sys.modules`` and puts their folders first on ``sys.path`` (trex/__init__.py).
  ``import_trex_api`` imports PyYAML first and puts dpgate's own copies back afterwards, so a
  later ``import yaml`` anywhere in dpgate still gets PyYAML 6 (TRex's modules keep the
  references they bound at import).

Example::

    >>> trex_dir({"DPGATE_TREX": "/nonexistent"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dpgate.model.errors.EnvironmentProblem: TRex not found at /nonexistent: set DPGATE_TREX=<dir> ...
"""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from pathlib import Path
from typing import Callable, Dict, Mapping, Optional

import yaml  # noqa: F401  (PyYAML must be loaded before TRex swaps in its bundled 3.11)

from dpgate.model.errors import EnvironmentProblem

ENV = "DPGATE_TREX"
SERVER_SCRIPT = "trex-sw-server"
CLIENT_SUBDIR = "automation/trex_control_plane/interactive"
#: the modules TRex replaces with its bundled copies (trex/__init__.py ext_libs)
SWAPPED = ("yaml", "scapy", "zmq")

OLD_CLIENT_MSG = (
    "the TRex client found is PyPI trex-stl-lib 0.3 (package trex_stl_lib), which speaks RPC API 4.1; "
    "TRex v3.x servers require API 5.x. Fix: set trex.client_path in the topology to "
    "<trex>/automation/trex_control_plane/interactive of your TRex install, "
    "or 'pip install lbr-trex-client' (TRex v3.04 client)"
)


def repo_root() -> Path:
    """The source checkout: the nearest parent of this file holding ``pyproject.toml``."""
    here = Path(__file__).resolve()
    return next((p for p in here.parents if (p / "pyproject.toml").is_file()), here.parents[3])


def default_trex_dir() -> Path:
    return repo_root() / ".vendor" / "trex-v3.08"


def trex_dir(env: Optional[Mapping[str, str]] = None) -> Path:
    """The TRex install (dir of ``trex-sw-server``): ``$DPGATE_TREX`` or ``<repo>/.vendor/trex-v3.08``."""
    env = os.environ if env is None else env
    path = Path(env.get(ENV) or default_trex_dir())
    if not (path / SERVER_SCRIPT).is_file():
        raise EnvironmentProblem(
            f"TRex not found at {path}: set {ENV}=<dir> or run .ci/install with ../shared/vendor present"
        )
    return path


def trex_missing(env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """None when TRex is installed, else the one-line reason (for test skips)."""
    try:
        trex_dir(env)
    except EnvironmentProblem as err:
        return str(err)
    return None


def client_path_for(trex: Path) -> str:
    return str(trex / CLIENT_SUBDIR)


def _swapped(modules: Dict[str, object]) -> Dict[str, object]:
    return {k: v for k, v in modules.items() if any(k == n or k.startswith(n + ".") for n in SWAPPED)}


def import_trex_api(client_path: Optional[str] = None, importer: Callable = importlib.import_module):
    """The ``trex.stl.api`` module of a TRex v3.x client, or one clear error.

    Without ``client_path``: the TRex install's client (``trex_dir()``) if present, else an
    installed ``trex`` / PyPI ``lbr-trex-client`` package.
    """
    if not client_path and importer is importlib.import_module and "trex.stl.api" not in sys.modules:
        if trex_missing() is None:
            client_path = client_path_for(trex_dir())
    if client_path:
        if not os.path.isdir(client_path):
            raise EnvironmentProblem(
                f"trex.client_path {client_path!r} does not exist: point it at <trex>/{CLIENT_SUBDIR}"
            )
        if client_path not in sys.path:
            sys.path.insert(0, client_path)
    before = _swapped(dict(sys.modules))
    try:
        with warnings.catch_warnings():  # the bundled scapy 2.4.3 / zmq warn on Python 3.11
            warnings.simplefilter("ignore")
            return importer("trex.stl.api")
    except ImportError as first:
        err: ImportError = first
    finally:
        _restore(before)
    if not client_path:
        # PyPI lbr-trex-client ships the client as lbr_trex_client/interactive/trex/...; importing
        # lbr_trex_client puts that directory on sys.path, after which trex.stl.api imports.
        try:
            importer("lbr_trex_client")
            return importer("trex.stl.api")
        except ImportError:
            pass
        finally:
            _restore(before)
    try:
        importer("trex_stl_lib")
    except ImportError:
        pass
    else:
        raise EnvironmentProblem(OLD_CLIENT_MSG) from None
    raise EnvironmentProblem(
        f"no TRex v3.x Python client ({err}): set {ENV}=<TRex dir> or trex.client_path in the topology to "
        f"<trex>/{CLIENT_SUBDIR}, or 'pip install lbr-trex-client'"
    ) from None


def _restore(before: Dict[str, object]) -> None:
    """Put dpgate's own yaml/scapy/zmq packages back where TRex replaced them (whole packages:
    a bundled submodule must not shadow one of dpgate's copy)."""
    for top in SWAPPED:
        if top not in before:
            continue  # dpgate never had it: TRex keeps its bundled copy
        for name in [k for k in sys.modules if k == top or k.startswith(top + ".")]:
            del sys.modules[name]
        sys.modules.update({k: v for k, v in before.items() if k == top or k.startswith(top + ".")})  # type: ignore[misc]
