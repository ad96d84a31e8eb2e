"""What the figure families share: saving, labels, the theory curves' helpers."""
from __future__ import annotations

import os

import numpy as np

# labels of the c1 / cG keys (linear: sector-invariant, copyjax.order.sector_order_parameters)
ACT_LABEL = {"softmax": ("a_1", "a_G"), "linear": ("sign(rho) c_1", "|c_G|")}


def save(fig, out: str, name: str) -> list:
    """``out/name.png`` and ``.pdf`` (on the process that ``results.writes_here``); closes the
    figure; returns the paths."""
    import matplotlib.pyplot as plt

    from copyjax.results import writes_here

    paths = []
    for ext in ("png", "pdf"):
        p = os.path.join(out, f"{name}.{ext}")
        if writes_here():
            fig.savefig(p, dpi=130, bbox_inches="tight")
        paths.append(p)
    plt.close(fig)
    return paths


def curve_value(th: dict, key: str) -> np.ndarray:
    """A theory curve of ``res["theory"]``; linear ``abs_rho`` = c_1 + c_G (rho >= 0 there)."""
    if key == "abs_rho" and "abs_rho" not in th:
        return np.asarray(th["c1"], float) + np.asarray(th["cG"], float)
    return np.asarray(th[key], float)


def metastable_branches(cur: dict, key: str):
    """Metastable minima split into the branch above and the branch below the global
    minimum in c_G, each a list of (P, value): one dashed line per branch, so that a line
    never joins the two sides of a transition."""
    j = 0 if key == "c1" else 1
    above, below = [], []
    for P, cG, ms in zip(cur["P"], cur["cG"], cur["meta"]):
        for m in ms:
            (above if m[1] > cG else below).append((P, m[j]))
    return above, below


__all__ = ["ACT_LABEL", "curve_value", "metastable_branches", "save"]
