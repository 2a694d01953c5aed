"""dpgate.outputs"""
