"""The fixtures of the tests over a REAL private sshd (tests/real_sshd.py): ``sshd``, one server
per module, gone with its throwaway user afterwards; ``env``, the client's environment (a
temporary HOME whose known_hosts holds the server's key, the password in DPGATE_TEST_SSH_PW)."""

from __future__ import annotations

import pytest
from real_sshd import client_env, serving


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    yield from serving(tmp_path_factory)


@pytest.fixture
def env(sshd, monkeypatch):
    return client_env(sshd, monkeypatch)
