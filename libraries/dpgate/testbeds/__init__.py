"""dpgate.testbeds"""
