"""dpgate.config"""
