"""Every docstring example in libraries/dpgate runs: one test per module that has any.

Modules whose optional heavy dependency is missing are skipped with the reason, never
silently: the list of modules is built from the files, not from what imports.
"""

from __future__ import annotations

import doctest
import importlib
import pathlib

import pytest

import dpgate

PKG = pathlib.Path(dpgate.__file__).parent


def _modules_with_examples():
    for path in sorted(PKG.rglob("*.py")):
        if ">>> " not in path.read_text(encoding="utf-8"):
            continue
        rel = path.relative_to(PKG.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts)


MODULES = list(_modules_with_examples())


def test_the_package_has_examples():
    assert len(MODULES) >= 26, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name):
    module = importlib.import_module(name)
    res = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.attempted > 0, f"{name}: examples found in the file but none collected"
    assert res.failed == 0, f"{name}: {res.failed} of {res.attempted} examples failed"
