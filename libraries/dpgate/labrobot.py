"""Old public path of the lab keyword library (``Library dpgate.labrobot.LabTestbed``); see :mod:`dpgate.robot.lab`."""
from dpgate.robot.lab import *  # noqa: F401,F403
from dpgate.robot.lab import LabTestbed  # noqa: F401
