"""What every lab SUT driver offers: a data plane on a DUT, reached through a node
(:class:`dpgate.model.protocols.Node`), pinned to the cores the allocation gave it.

``LabTestbed`` drives each one the same way: ``configure()``, ``start()`` (which waits for
``ready()``), trials, ``stats()`` for SUT-side counters, ``version()`` for the record,
``stop()``. Commands are argv lists run through the node, never shell strings.
"""

from __future__ import annotations

from typing import Any, Mapping


class LabSut:
    """Base class of VPP, testpmd, l3fwd and OVS-DPDK on a lab DUT."""

    def configure(self) -> None:
        """Write the configuration (startup files, flows) before ``start``; nothing by default."""

    def start(self) -> None:
        raise NotImplementedError

    def ready(self) -> None:
        """Return when the data plane forwards; raise SutError with its log otherwise."""

    def stop(self) -> None:
        raise NotImplementedError

    def stats(self) -> Mapping[Any, Any]:
        return {}

    def version(self) -> str:
        raise NotImplementedError
