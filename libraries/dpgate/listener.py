"""Old public path of the Robot listener (``--listener dpgate.listener.DpgateListener``); see :mod:`dpgate.robot.listener`."""
from dpgate.robot.listener import *  # noqa: F401,F403
from dpgate.robot.listener import DpgateListener  # noqa: F401
