"""TRex client error texts (as in the v3.x client sources) map to one clear dpgate error."""

from __future__ import annotations

import pytest

from dpgate.model.errors import EnvironmentProblem
from dpgate.traffic.trex.driver import explain_trex_error


# texts as the v3.08 client/server produce them (common/trex_conn.py, trex_req_resp_client.py,
# trex_port.py, trex_psv.py; the acquire refusal as the real server answered it)
@pytest.mark.parametrize(
    "text,words",
    [
        ("Mismatch between client and server versions", "API mismatch"),
        ("*** [RPC] - Failed to get server response from tcp://10.0.0.1:4501", "unreachable"),
        ("start - port is not owned", "port busy"),
        (
            "Port 0 : *** port is already taken by 'bob'\nPort 1 : *** port is already taken by 'bob'",
            "held by 'bob'",
        ),
        ("port(s) [0]: link is DOWN - check the connection or specify 'force'", "link down"),
    ],
)
def test_client_texts_map_to_clear_errors(text, words):
    err = explain_trex_error(RuntimeError(text), "10.0.0.1")
    assert isinstance(err, EnvironmentProblem) and words in str(err) and "10.0.0.1" in str(err)


def test_mismatch_message_says_how_to_fix():
    err = explain_trex_error(RuntimeError("Mismatch between client and server versions"), "tg1")
    assert "trex.client_path" in str(err) and "API 5.x" in str(err) and "v3.x" in str(err)
