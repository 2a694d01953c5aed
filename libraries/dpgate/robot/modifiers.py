"""Robot pre-run modifier: tags derived from CSIT-style test names, so that one line is one
case and ``--include 64B`` / ``--include 2T1C`` still select cases.

    robot --prerunmodifier dpgate.robotmods.CaseTags suites/embedded

``64B-1c-linux-ip4-ndrpdr`` gets 64B and 1C; ``IMIX-2t1c-ethip4-ip4base-ndrpdr`` gets IMIX,
1C and 2T1C (threads x physical cores, as in CSIT); a name ending ``-ndrpdr`` gets NDRPDR.
"""

from __future__ import annotations

from typing import List

from robot.api import SuiteVisitor

from dpgate.model.names import CASE_NAME


def tags_for(name: str) -> List[str]:
    """Robot tags of a CSIT-style case name.

    >>> tags_for("IMIX-2t1c-ethip4-ip4base-ndrpdr")
    ['IMIX', '1C', '2T1C', 'NDRPDR']
    """
    m = CASE_NAME.match(name)
    tags: List[str] = []
    if m:
        tags.append(m.group("size").upper())
        tags.append(f"{m.group('cores')}C")
        if m.group("threads"):
            tags.append(f"{m.group('threads')}T{m.group('cores')}C")
    if name.lower().endswith("-ndrpdr"):
        tags.append("NDRPDR")
    return tags


class CaseTags(SuiteVisitor):
    def start_test(self, test) -> None:
        for tag in tags_for(test.name):
            if tag not in test.tags:
                test.tags.add(tag)
