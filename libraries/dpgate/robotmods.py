"""Old public path of the pre-run modifiers: ``--prerunmodifier dpgate.robotmods.CaseTags`` keeps
working. The code lives in :mod:`dpgate.robot.modifiers`."""

from dpgate.robot.modifiers import CaseTags, tags_for

__all__ = ["CaseTags", "tags_for"]
