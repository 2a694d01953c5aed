"""dpgate.exec"""
