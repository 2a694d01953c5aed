"""TRex (stateless) traffic generator for lab testbeds: the same ``measure(load, duration)``
seam as the embedded generator, so every search works with it.

* ``server``: the TRex server lifecycle (config file from the topology's TG ports, start in
  the TG namespace, readiness, stop); ``install``: where TRex is and importing its client;
* ``driver``: ``TrexGenerator`` (the trial); ``streams``: the STL streams of the profiles;
  ``latency``: latency stats -> percentiles and JUnit metrics; ``errors``: client errors ->
  one clear message; ``loop``: a looped-back TRex bench for self-tests and benchmarks.

Client: the TRex v3.x Python client shipped in the TRex install
(``<trex>/automation/trex_control_plane/interactive``; ``trex.client_path`` in the topology
overrides it) or PyPI ``lbr-trex-client``. PyPI ``trex-stl-lib`` 0.3 speaks RPC API 4.1,
which v3.x servers reject: refused with a message saying how to fix it.

Verified against the real TRex v3.08 server (tests/integration/test_tx_trex.py,
tests/faults/test_tx_trex_faults.py, benchmarks/lab_local.py; docs/trex.md). Unit tests use
a fake client that refuses what the real one refuses (tests/unit/trex_fake.py) and the real
client library when TRex is installed.
"""

from dpgate.traffic.trex.driver import TrexGenerator, import_trex_api  # noqa: F401
from dpgate.traffic.trex.server import TrexServer  # noqa: F401
from dpgate.traffic.trex.streams import StreamBuilder  # noqa: F401
