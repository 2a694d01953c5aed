"""dpgate.model"""
