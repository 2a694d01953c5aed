"""dpgate: gate CI pipelines on the performance of software network data planes."""

__version__ = "0.1.0"
