"""Old public path of the pre-run modifiers (``--prerunmodifier dpgate.robotmods.CaseTags``); see :mod:`dpgate.robot.modifiers`."""
from dpgate.robot.modifiers import *  # noqa: F401,F403
from dpgate.robot.modifiers import CaseTags  # noqa: F401
