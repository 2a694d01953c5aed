"""TRex client errors -> one clear dpgate error each.

The texts matched are the TRex v3.08 client's and server's own (quoted per branch), e.g.::

    >>> str(explain_trex_error(RuntimeError("Port 0 : *** port is already taken by 'alice'"), "tg1"))[:57]
    "TRex port busy on tg1: port 0 is held by 'alice' (another"
"""

from __future__ import annotations

import re

from dpgate.model.errors import EnvironmentProblem, TrialError

_TAKEN = re.compile(r"Port (\d+) : \*\*\* port is already taken by '([^']*)'")


def explain_trex_error(err: Exception, server: str) -> Exception:
    """Map a TRex client error to one clear dpgate error naming the server and the fix."""
    text = str(err).strip()
    low = text.lower()
    one_line = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    # common/trex_conn.py: servers without api_sync_v2 (v2.30 and older); a wrong API major
    # is refused by the server's api_sync_v2 with an "API" version error
    if "mismatch between client and server versions" in low or ("api" in low and "version" in low):
        return EnvironmentProblem(
            f"TRex client/server API mismatch with {server}: {one_line}. "
            "dpgate needs a TRex v3.x server and its client (STL RPC API 5.x); "
            "servers v2.30 and older, and PyPI trex-stl-lib 0.3 (API 4.1), do not fit. "
            "Use the client shipped with the server's TRex version (trex.client_path) "
            "or upgrade the server"
        )
    # common/trex_req_resp_client.py: "*** [RPC] - Failed to get server response from tcp://host:port"
    if "failed to get server response" in low or "connection refused" in low:
        return EnvironmentProblem(
            f"TRex server {server} unreachable: {one_line}. Is the TRex server running "
            "(trex-sw-server -i / t-rex-64 -i), and are its RPC/publisher ports "
            "(trex.sync_port/async_port, 4501/4500) reachable from here?"
        )
    # common/trex_client.py when the async heartbeat was lost: "'<cmd>' - is not valid while disconnected"
    if "while disconnected" in low:
        return TrialError(
            f"TRex server {server} lost (the client disconnected: {one_line}): did the server die? See its log"
        )
    # server acquire RPC: "Port N : *** port is already taken by '<user>'"
    taken = _TAKEN.findall(text)
    if taken:
        held = ", ".join(f"port {p} is held by {who!r}" for p, who in taken)
        return EnvironmentProblem(
            f"TRex port busy on {server}: {held} (another client acquired it). "
            "dpgate never takes ports by force: wait for that user or ask them to release it"
        )
    # common/trex_psv.py "port(s) [0]: must be acquired", common/trex_port.py "start - port is not
    # owned": another client forced the port away from us
    if "must be acquired" in low or "port is not owned" in low:
        return EnvironmentProblem(
            f"TRex port busy on {server}: {one_line}: another client took the port while dpgate held it"
        )
    # common/trex_psv.py: "port(s) [1]: link is DOWN - check the connection or specify 'force'"
    if "link is down" in low:
        return EnvironmentProblem(
            f"TRex port link down on {server}: {one_line}. Check cabling, the DUT NIC "
            "(is the SUT started and its ports up?) and transceivers"
        )
    # trex_stl_client.py __check_streams_explicit_dest / PSV_RESOLVED
    if "dest mac is invalid" in low or "please resolve" in low:
        return EnvironmentProblem(
            f"TRex port not resolved on {server}: {one_line}. Set the port's "
            "destination (port_info dest_mac / L3 mode) so TRex knows where to send"
        )
    return TrialError(f"TRex error on {server}: {one_line}")
