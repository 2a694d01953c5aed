"""Running things: processes, nodes, and the locks that keep two runs apart (``dpgate.exec.lock``)."""
