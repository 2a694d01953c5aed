"""Part 2 of benchmarks/lab_local.py: NDR/PDR and latency per NF and frame size through TRex.

On the lab on one machine (``topologies/lab-local.yaml``, prefix ``lbb-``): LocalLab up, the
TRex server in the TG namespace, then for each NF (``--nfs``) and frame size (``--sizes``):
the SUT through its lab driver over real SSH (CPU 1), one bidirectional search with the
lab keywords' search (``per-commit``, bounded by ``--search-limit`` s, bounds from the trials
so far when it runs out), then TRex latency streams at 90/50/10 % of PDR (1000 pps per
direction). Columns: NDR/PDR in pps (both directions), whether the search completed, whether
the generator (not the SUT) was the limit at the top, latency min/avg/p99/max in us at 50 %
of PDR, wall time. Teardown leaves nothing (LocalLab.down).

    PYTHONPATH=libraries python3 benchmarks/lab_local.py --parts nf [--nfs testpmd-io,vpp-ip4] [--sizes 64B]
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any, Dict, List

from dpgate.config.topology import load_topology
from dpgate.exec.remote import SshNode
from dpgate.testbeds.lab.cores import CoreAllocation
from dpgate.testbeds.lab.local import LocalLab
from dpgate.testbeds.lab.nfs import LAB_NFS, lab_nf, make_sut
from dpgate.traffic.profiles import make_profile

PREFIX = "lbb-"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_CPU = CoreAllocation(main=1, workers=(1,), phy_cores=1, threads_per_core=1, numa=0)


def add_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--nfs", default=",".join(LAB_NFS), help="nf: comma list of lab NFs")
    ap.add_argument("--sizes", default="64B", help="nf: comma list of frame sizes (64B, IMIX, 1518B)")
    ap.add_argument("--search-limit", type=float, default=90.0, help="nf: seconds per search")


def nf_rows(args: argparse.Namespace) -> List[Dict[str, Any]]:
    from dpgate.search.bounded import search_ndr_pdr
    from dpgate.traffic.trex import TrexGenerator
    from dpgate.traffic.trex.server import TrexServer

    topo = load_topology(os.path.join(ROOT, "topologies", "lab-local.yaml"), prefix=PREFIX)
    rows: List[Dict[str, Any]] = []
    with LocalLab(topo) as lab:
        srv = TrexServer.for_topology(topo, lab.run_dir)
        srv.start()
        node = SshNode(topo.dut.ssh)
        try:
            for nf in getattr(args, "nfs", ",".join(LAB_NFS)).split(","):
                sut = make_sut(nf, node, topo, ONE_CPU)
                sut.configure()
                sut.start()
                try:
                    for size in getattr(args, "sizes", "64B").split(","):
                        rows.append(
                            _one(
                                nf,
                                size,
                                topo,
                                srv,
                                search_ndr_pdr,
                                TrexGenerator,
                                getattr(args, "search_limit", 90.0),
                            )
                        )
                finally:
                    sut.stop()
        finally:
            node.close()
            srv.stop()
    return rows


def _one(nf: str, size: str, topo: Any, srv: Any, search: Any, gen_cls: Any, limit: float) -> Dict[str, Any]:
    t0 = time.monotonic()
    gen = gen_cls(
        topo, make_profile(lab_nf(nf).traffic, size, bidirectional=True), latency_pps=1000, trex_server=srv
    )
    try:
        run = search(gen.measure, 10_000, gen.max_pps, "0", "0.5%", "per-commit", {}, limit)
        lat: Dict[str, Any] = {}
        if run.pdr:
            r = gen.measure(0.5 * run.pdr, 5.0)
            lat = r.details.get("latency") or {}
        row = {
            "nf": nf,
            "size": size,
            "ndr_pps": round(run.ndr or 0),
            "pdr_pps": round(run.pdr or 0),
            "complete": run.complete,
            "max_pps": round(gen.max_pps or 0),
            "at_max": bool(run.pdr and gen.max_pps and run.pdr >= 0.99 * gen.max_pps),
            "tg": gen.tg_name,
        }
        for d, v in sorted(lat.items()) if isinstance(lat, dict) else []:
            if isinstance(v, dict):  # per direction
                row[f"lat50_{d}"] = "/".join(
                    f"{v.get(k, '-')}" for k in ("min_us", "avg_us", "p99_us", "max_us")
                )
        if isinstance(lat, dict) and "avg_us" in lat:
            row["lat50_min/avg/p99/max_us"] = "/".join(
                f"{lat.get(k, '-')}" for k in ("min_us", "avg_us", "p99_us", "max_us")
            )
        row["wall_s"] = round(time.monotonic() - t0)
        print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
        return row
    finally:
        gen.disconnect()
