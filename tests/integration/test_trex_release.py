"""When the REAL TRex v3.08 server dies, closing the driver leaves no ZeroMQ channel of its
client open (prefix ``txr-``): a socket left reconnecting to the dead server made libzmq 4.3.1
abort the Robot process at exit (``session_base.cpp:628``, CI twice). Skips in one line
without root or without TRex (DPGATE_TREX / .ci/install)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from dpgate.traffic.profiles import make_profile
from dpgate.traffic.trex.install import trex_missing

if trex_missing():
    pytest.skip(trex_missing(), allow_module_level=True)

from dpgate.traffic.trex.loop import TrexLoop  # noqa: E402


def _channels(client):
    conn = client.conn
    return conn.async_.context.closed, conn.rpc.context.closed, conn.async_.t.is_alive()


def test_closing_after_the_server_died_closes_both_channels_and_the_subscriber_thread():
    with TrexLoop("txr-", "veth", mgmt_net="198.19.255.24") as loop:
        g = loop.generator(make_profile("ip4", 64))
        r = g.measure(20_000, 0.5)
        assert r.tx_packets > 0
        client = g.client
        assert _channels(client) == (False, False, True)  # connected: both open, subscriber up
        os.kill(loop.server.proc.pid, signal.SIGKILL)
        loop.server.proc.wait(10)
        g.close()
        assert _channels(client) == (True, True, False)


def test_channels_the_client_opens_again_after_the_server_died_are_closed_at_exit():
    # the Robot process of the fault test: the server killed, the generator never closed, and
    # the client's RPC channel connected again (as its subscriber thread can): dpgate's exit
    # hook closes it before libzmq's own teardown. Without the hook this process printed
    # "False" and then hung at exit until killed (2026-11-28); the abort is the same state
    # meeting a race (not reproduced here in 20 runs of bare reconnecting sockets).
    lib = os.path.join(os.path.dirname(__file__), "..", "..", "libraries")
    code = textwrap.dedent(
        """
        import atexit, os, signal, sys
        sys.path.insert(0, sys.argv[1])
        seen = {}
        # registered first, so it runs last: after dpgate's exit hook
        atexit.register(lambda: print("at exit, channels closed:", seen["g"].client.conn.rpc.context.closed,
                                      seen["g"].client.conn.async_.context.closed, flush=True))
        from dpgate.traffic.profiles import make_profile
        from dpgate.traffic.trex.loop import TrexLoop
        loop = TrexLoop("txs-", "veth", mgmt_net="198.19.255.28").up()
        try:
            g = seen["g"] = loop.generator(make_profile("ip4", 64))
            g.measure(20_000, 0.5)
            os.kill(loop.server.proc.pid, signal.SIGKILL)
            loop.server.proc.wait(10)
            try:
                g.measure(20_000, 0.5)
            except Exception as err:
                print("trial after the kill:", type(err).__name__, flush=True)
            # what the client's subscriber thread can do after that: connect its RPC channel
            # again (a new context whose socket keeps reconnecting to the dead server)
            g.client.conn.rpc.connect()
        finally:
            loop.down()
        """
    )
    res = subprocess.run([sys.executable, "-c", code, lib], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, (res.returncode, res.stdout[-2000:], res.stderr[-2000:])
    assert "trial after the kill" in res.stdout, res.stdout
    assert "at exit, channels closed: True True" in res.stdout, res.stdout
