#!/usr/bin/env python3
"""Does ``disturbance`` see a CI neighbour? Trials alternating without and with a CPU hog.

    sudo .venv/bin/python benchmarks/disturbance_demo.py --sut linux-xconnect --prefix sg0- \\
        [--pairs 4] [--rate 100kpps] [--duration 1] [--hog-cpu 1] [--nice 19]

One testbed, one SUT; ``--pairs`` times: a trial with nothing added, then a trial with
``taskset -c <hog-cpu> nice -n <nice> sh -c 'while :; do :; done'`` running. Re-measurement
is off here (every attempt is shown). Prints each trial's foreign share per core, the
trial's ``disturbance`` and the SUT's own cycles per packet, then the medians per arm.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "libraries"))

from dpgate.config.units import parse_rate  # noqa: E402
from dpgate.testbeds.embedded.session import EmbeddedSession  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sut", default="linux-xconnect")
    ap.add_argument("--prefix", default="sg0-")
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--rate", default="100kpps")
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--hog-cpu", type=int, default=1)
    ap.add_argument("--nice", type=int, default=19)
    a = ap.parse_args(argv)
    arms: dict[str, list] = {"quiet": [], "hog": []}
    with EmbeddedSession("topologies/embedded.yaml", a.sut, prefix=a.prefix, calibrate=False) as s:
        assert s.generator is not None  # up: EmbeddedSession.__enter__
        s.generator.remeasure = 0
        load = parse_rate(a.rate).resolve(None)
        for _ in range(a.pairs):
            for arm in ("quiet", "hog"):
                hog = None
                if arm == "hog":
                    hog = subprocess.Popen(
                        [
                            "taskset",
                            "-c",
                            str(a.hog_cpu),
                            "nice",
                            "-n",
                            str(a.nice),
                            "sh",
                            "-c",
                            "while :; do :; done",
                        ]
                    )
                    time.sleep(0.2)
                try:
                    r = s.measure(load, a.duration)
                finally:
                    if hog is not None:
                        hog.terminate()
                        hog.wait()
                c = r.details.get("cpu", {})
                arms[arm].append(r)
                print(
                    f"  {arm:5s} disturbance {r.disturbance:.3f}  foreign {c.get('foreign_share')}  "
                    f"steal {c.get('steal_share')}  SUT own cpp {r.sut_cpu_cycles_per_packet}  loss {r.loss_packets}"
                )
    for arm, rs in arms.items():
        print(
            f"{a.sut} {arm}: median disturbance {statistics.median(r.disturbance for r in rs):.3f}, "
            f"median SUT own cpp {statistics.median(r.sut_cpu_cycles_per_packet or 0 for r in rs):.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
