"""Old public path of the embedded-testbed keyword library (``Library dpgate.robotlib.EmbeddedTestbed``).

The code lives in :mod:`dpgate.robot.embedded` and :mod:`dpgate.robot.gates`; this module re-exports it.
"""
from dpgate.robot.embedded import *  # noqa: F401,F403
from dpgate.robot.embedded import EmbeddedTestbed, Gates  # noqa: F401
