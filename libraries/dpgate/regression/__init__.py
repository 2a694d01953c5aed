"""dpgate.regression"""
