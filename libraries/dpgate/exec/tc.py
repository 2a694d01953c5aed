"""tc argv builders shared by the SUTs and test loops that cross-connect two interfaces.

This kernel has no ``matchall``/``flower`` classifiers; ``u32 match u32 0 0`` matches every
frame, and ``mirred egress redirect`` sends it out of another interface.

>>> mirred_redirect("a0", "a1")[:5]
['tc', 'filter', 'add', 'dev', 'a0']
>>> mirred_redirect("a0", "a1", prio=1)[-3:]
['redirect', 'dev', 'a1']
"""

from __future__ import annotations

from typing import List, Optional


def mirred_redirect(src: str, dst: str, prio: Optional[int] = None) -> List[str]:
    """argv of a tc filter on ``src``'s ingress qdisc (``ffff:``) redirecting every frame to ``dst``."""
    head = ["tc", "filter", "add", "dev", src, "parent", "ffff:", "protocol", "all"]
    if prio is not None:
        head += ["prio", str(prio)]
    return head + ["u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", dst]
