"""dpgate.testbeds.embedded"""
