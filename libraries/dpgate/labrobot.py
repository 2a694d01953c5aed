"""Old public path of the lab keyword library: ``Library dpgate.labrobot.LabTestbed`` keeps working.

The code lives in :mod:`dpgate.robot.lab`.
"""

from dpgate.robot.lab import LabTestbed, parse_cores, parse_ht

__all__ = ["LabTestbed", "parse_cores", "parse_ht"]
