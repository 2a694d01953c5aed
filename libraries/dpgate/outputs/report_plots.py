"""PNG plots of the sign-off report (matplotlib, Agg backend), one function per figure.

Each function takes plain rows (dicts built by :mod:`dpgate.outputs.report`) and a path, writes
one PNG and returns the path. The figures follow seed 000: throughput per frame size,
efficiency bars (IPP, IPC, CPP, Mpps: Figures 7, 9, 10, 11), HT speedup (Figure 13),
multi-core speedup against perfect linear scaling (Figure 14).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def throughput_bars(title: str, rows: Sequence[Dict], path: str) -> str:
    """NDR and PDR (Mpps) side by side for each frame size x core configuration."""
    plt = _plt()
    labels = [f"{r['size']} {r['cores']}" for r in rows]
    x = list(range(len(rows)))
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(rows)), 3.2))
    ax.bar([i - 0.2 for i in x], [r["ndr"] / 1e6 for r in rows], width=0.4, label="NDR")
    ax.bar([i + 0.2 for i in x], [r["pdr"] / 1e6 for r in rows], width=0.4, label="PDR")
    ax.set_xticks(x)
    ax.set_xticklabels(
        labels, fontsize=8, rotation=30 if len(rows) > 6 else 0, ha="right" if len(rows) > 6 else "center"
    )
    ax.set_ylabel("Mpps")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def efficiency_bars(rows: Sequence[Dict], path: str) -> str:
    """Four panels over NFs: instructions/packet, instructions/cycle, cycles/packet, Mpps.

    ``rows``: dicts with ``label`` and numeric-or-None ``ipp``, ``ipc``, ``cpp``, ``mpps``;
    a panel whose values are all None says "not measured" instead of drawing bars.
    """
    plt = _plt()
    panels = [
        ("ipp", "instructions / packet (Fig. 7)"),
        ("ipc", "instructions / cycle (Fig. 9)"),
        ("cpp", "cycles / packet (Fig. 10)"),
        ("mpps", "NDR Mpps (Fig. 11)"),
    ]
    labels = [r["label"] for r in rows]
    fig, axes = plt.subplots(2, 2, figsize=(max(7.0, 0.7 * len(rows) * 2 + 2), 6.4))
    for ax, (key, title) in zip(axes.flat, panels):
        vals = [r.get(key) for r in rows]
        ax.set_title(title, fontsize=9)
        if all(v is None for v in vals):
            ax.text(0.5, 0.5, "not measured\non this host", ha="center", va="center", transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        ax.bar(range(len(rows)), [v or 0.0 for v in vals])
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels, fontsize=7, rotation=35, ha="right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def ht_speedup_bars(points: Sequence[Tuple[str, float]], path: str) -> str:
    """HT speedup (2T1C / 1T1C throughput) per NF and core count, with the 1.0 line."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(points)), 3.2))
    ax.bar(range(len(points)), [v for _, v in points])
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels([k for k, _ in points], fontsize=7, rotation=35, ha="right")
    ax.set_ylabel("throughput HT / no HT")
    ax.set_title("Hyper-Threading speedup (seed 000 Fig. 13)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def multicore_lines(
    nf: str, series: Dict[str, List[Tuple[int, float]]], path: str, limit_pps: Optional[float] = None
) -> str:
    """Throughput (Mpps) against physical cores, one line per HT mode, each with its perfect
    linear speedup from its own 1-core value (dashed)."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    for label, pts in sorted(series.items()):
        pts = sorted(pts)
        xs = [c for c, _ in pts]
        (line,) = ax.plot(xs, [p / 1e6 for _, p in pts], marker="o", label=f"{label} measured")
        one = dict(pts).get(1)
        if one:
            ax.plot(
                xs,
                [one * c / 1e6 for c in xs],
                linestyle="--",
                color=line.get_color(),
                label=f"{label} perfect linear",
            )
    if limit_pps:
        ax.axhline(limit_pps / 1e6, color="grey", linewidth=0.8, linestyle=":", label="TG/NIC limit")
    ax.set_xlabel("physical cores")
    ax.set_ylabel("NDR Mpps")
    ax.set_title(f"{nf}: multi-core speedup (seed 000 Fig. 14)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
