"""TRex (stateless) traffic generator for lab testbeds: the same ``measure(load, duration)``
seam as the embedded generator, so every search works with it.

Client: the TRex v3.x Python client, i.e. the ``trex`` package shipped in a TRex install
(``<trex>/scripts/automation/trex_control_plane/interactive``, set ``trex.client_path`` in
the topology) or PyPI ``lbr-trex-client``. PyPI ``trex-stl-lib`` 0.3 (package
``trex_stl_lib``) speaks RPC API 4.1 which TRex v3.x servers reject: it is refused with a
message saying how to fix it.

Real validation needs a lab with a TRex server; the unit tests drive this module through a
fake client object (``tests/unit/test_trex.py``, ``FakeTrexClient``).
"""

from dpgate.traffic.trex.driver import TrexGenerator, import_trex_api  # noqa: F401
from dpgate.traffic.trex.streams import StreamBuilder  # noqa: F401
