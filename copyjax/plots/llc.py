"""The learning-coefficient figure of ``scripts/llc.py``: lambda_hat vs P per activation,
one series per (phase, gamma), error bars from the Monte Carlo standard error."""
from __future__ import annotations

from copyjax.plots._common import save


def plot_llc(rows: list, out: str) -> list:
    """``out/llc.png`` and ``.pdf`` from the rows of ``llc.json``; returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    acts = sorted({r["activation"] for r in rows}) or ["softmax"]
    fig, axes = plt.subplots(1, len(acts), figsize=(5.2 * len(acts), 4), squeeze=False)
    for ax, act in zip(axes[0], acts):
        mine = [r for r in rows if r["activation"] == act]
        for phase, gamma in sorted({(r["phase"], r["gamma"]) for r in mine}):
            s = sorted((r for r in mine if r["phase"] == phase and r["gamma"] == gamma), key=lambda r: r["P"])
            left = [r["left_phase"] > 0.05 for r in s]
            ax.errorbar([r["P"] for r in s], [r["llc_exact"] for r in s], [r["llc_exact_se"] for r in s],
                        marker="o", capsize=3, label=f"{phase}, gamma {gamma:g}")
            for r, bad in zip(s, left):
                if bad:  # the chains left w*'s phase: not a local estimate
                    ax.plot(r["P"], r["llc_exact"], "x", color="k", ms=9)
        ax.set_xscale("log")
        ax.set_xlabel("P (sequences)")
        ax.set_ylabel("exact lambda_hat")
        ax.set_title(f"{act}  (x: chains left the phase)")
        ax.legend(fontsize=8)
    return save(fig, out, "llc")


__all__ = ["plot_llc"]
