"""Old public path of the Robot listener: ``--listener dpgate.listener.DpgateListener:junit.xml``
keeps working. The code lives in :mod:`dpgate.robot.listener`."""

from dpgate.robot.listener import DpgateListener

__all__ = ["DpgateListener"]
