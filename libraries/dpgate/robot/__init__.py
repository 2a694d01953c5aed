"""dpgate.robot"""
