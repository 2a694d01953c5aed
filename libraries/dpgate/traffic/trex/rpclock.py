"""One lock around the TRex v3 client's RPC channel, for when the server dies.

The client's RPC object (``client.conn.rpc``, a ``JsonRpcClient`` over one ZeroMQ REQ
socket) is used by two threads: ours, and the client's async subscriber thread, which asks
``get_async_events`` after every event. Sending holds ``rpc.lock``; connecting, reconnecting
and disconnecting do not. When the server dies, both threads' requests time out, and the
client then disconnects (``socket.close``, ``context.destroy``) in one thread while the other
reconnects (a new context and socket assigned to the same attributes) outside the lock: one
thread can destroy the context the other just connected a socket on. libzmq 4.3.1 (bundled
with TRex v3.08) then aborts the whole process, Robot and its JUnit exit code with it:
``Assertion failed: false (src/session_base.cpp:628)`` (seen in CI in the TRex-killed fault
test, after the results were written; again after this lock, on a slower host: hence also
:func:`release_sockets`, at close and at exit).

:func:`serialize_rpc` puts connect, reconnect, disconnect and the send path under one
re-entrant lock (a send that times out disconnects while holding it), so the two threads
take turns. The client's own code is unchanged; only the instance is wrapped.

>>> import threading, time
>>> class Rpc:  # the JsonRpcClient surface this touches
...     def __init__(self): self.lock, self.inside, self.overlaps = threading.Lock(), 0, 0
...     def _enter(self):
...         self.inside += 1; self.overlaps += self.inside > 1; time.sleep(0.002); self.inside -= 1
...     def connect(self, server=None, port=None): self._enter()
...     def disconnect(self): self._enter()
...     def reconnect(self): return self.connect()
...     def invoke_reconnect(self, retry=0): self._enter()
...     def send_msg(self, msg, retry=0):
...         with self.lock: self._enter(); self.disconnect()  # a timed-out send disconnects
>>> class Client:
...     def __init__(self): self.conn = type("Conn", (), {"rpc": Rpc()})()
>>> c = Client()
>>> serialize_rpc(c), serialize_rpc(c)  # once per client
(True, False)
>>> work = [c.conn.rpc.disconnect, c.conn.rpc.reconnect, lambda: c.conn.rpc.send_msg("x")]
>>> ts = [threading.Thread(target=lambda f=f: [f() for _ in range(20)]) for f in work]
>>> _ = [t.start() for t in ts]; _ = [t.join() for t in ts]
>>> c.conn.rpc.overlaps
0
"""

from __future__ import annotations

import atexit
import functools
import threading
import weakref
from typing import Any

#: The RPC methods that touch the socket or its context outside the client's own lock.
GUARDED = ("connect", "disconnect", "reconnect", "invoke_reconnect", "send_msg")


def serialize_rpc(client: Any) -> bool:
    """Wrap ``client.conn.rpc``'s :data:`GUARDED` methods in one re-entrant lock (which also
    becomes ``rpc.lock``). False when there is no such object or it is wrapped already."""
    rpc = getattr(getattr(client, "conn", None), "rpc", None)
    if rpc is None or getattr(rpc, "_dpgate_serialized", False):
        return False
    lock = threading.RLock()
    for name in GUARDED:
        method = getattr(rpc, name, None)
        if method is not None:
            setattr(rpc, name, _locked(lock, method))
    rpc.lock = lock
    rpc._dpgate_serialized = True
    atexit.register(_release_at_exit, weakref.ref(client))
    return True


def _release_at_exit(ref: Any) -> None:
    client = ref()
    if client is not None:
        release_sockets(client)


#: Longest wait for the subscriber thread to close its socket (it wakes every 0.5 s).
RELEASE_WAIT_S = 3.0


def release_sockets(client: Any) -> None:
    """Close the client's two ZeroMQ channels for good, whatever state it believes it is in.

    After the server died the client's ``disconnect`` can raise before it reaches them, and
    a socket left open keeps reconnecting from libzmq's I/O thread; at interpreter exit that
    thread then runs while libzmq's static tables are destroyed, and 4.3.1 aborts the process
    (``session_base.cpp:628``, its ``start_connecting`` finding no connecter for the address:
    CI, test_tx_trex_faults, twice). So: the subscriber thread is told to end and its context
    terminated (the thread closes its own socket on waking), the RPC socket closed and its
    context destroyed, both with linger 0. Also run at exit for every wrapped client."""
    conn = getattr(client, "conn", None)
    sub = getattr(conn, "async_", None)
    ctx = getattr(sub, "context", None)
    if sub is not None and ctx is not None and not getattr(ctx, "closed", True):
        sub.t_state = getattr(sub, "THREAD_STATE_DEAD", 0)
        ending = threading.Thread(target=ctx.term, daemon=True)
        ending.start()
        ending.join(RELEASE_WAIT_S)
        t = getattr(sub, "t", None)
        if t is not None and t is not threading.current_thread():
            t.join(RELEASE_WAIT_S)
        sub.connected = False
    rpc = getattr(conn, "rpc", None)
    if rpc is None:
        return
    with getattr(rpc, "lock", None) or threading.RLock():
        sock, ctx = getattr(rpc, "socket", None), getattr(rpc, "context", None)
        if sock is not None and not getattr(sock, "closed", True):
            sock.close(linger=0)
        if ctx is not None and not getattr(ctx, "closed", True):
            ctx.destroy(linger=0)
        rpc.connected = False


def _locked(lock: Any, method: Any) -> Any:
    @functools.wraps(method)
    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return method(*args, **kwargs)

    return call
