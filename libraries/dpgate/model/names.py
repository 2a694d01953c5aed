"""Test case names: ``<size>-[<threads>t]<cores>c-<what>[-ndrpdr]``, as CSIT names them.

The one regular expression every module that reads a case name uses (the pre-run modifier
tags cases by frame size and core count; the report groups them).

>>> m = CASE_NAME.match("64B-4t2c-ethip4-ip4base-ndrpdr")
>>> m["size"], m["threads"], m["cores"], m["rest"]
('64B', '4', '2', 'ethip4-ip4base')
>>> CASE_NAME.match("IMIX-1c-linux-ip4")["rest"], CASE_NAME.match("linux-ip4 64B") is None
('linux-ip4', True)
"""

from __future__ import annotations

import re

CASE_NAME = re.compile(
    r"^(?P<size>\d+B|IMIX)-(?:(?P<threads>\d+)t)?(?P<cores>\d+)c-(?P<rest>.+?)(?:-ndrpdr)?$", re.I
)
