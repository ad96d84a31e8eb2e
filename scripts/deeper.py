"""Two attention layers: is the shift-k target copied by one head or by two composed heads?

    python scripts/deeper.py --L 16 --V 32 --shift 2 --P 300 1000 3000 10000 --out runs/deeper/L16_k2
    python scripts/deeper.py --L 16 --V 32 --shift 2 --no-residual --P 300 1000 3000 --out runs/deeper/L16_k2_plain

At each P (sampled data), the exact posterior of (G_1, G_2) with W integrated out
(``exact_posterior.sample_exact_posterior`` on ``masks.get("MASK+layers=2+shift=K")``: adaptive
MALA on all 2 L^2 entries), its chains started in three families: from the prior, from the
one-layer circuit (layer 2 attends to x_{l-k} itself; layer 1 to the token itself) and from
the composed circuit (layer 1 a previous-token head, layer 2 copying the rest). Per family:
the composition order parameter c_G of A_eff (1: an exact copy of x_{l-k}), each layer's
weights on x_l, x_{l-1}, x_{l-2} (``Stack.layer_order``), the log density of the last draws,
and where each chain ends (``circuit``): ``pooling`` (A_eff does not copy: softmax, c_G below the mask's phase divide, the free
energy's; linear, |c_G| <= 0.3), else
``one_layer`` or ``composed`` by which path carries more of A_eff's weight on x_{l-k} (layer 2
on x_{l-k} itself, or layer 1 carrying part of the shift). Start families that end apart with
different log densities are coexisting phases (their weights need the free energy along a
composition coordinate, not built yet); families that end together are one phase.

``--layers 1`` is the baseline: one layer on the same data and target, chains from the prior
and the copy pattern (does a second layer move the transition?).

Each P's record is saved under ``--out`` keyed by everything that determines it, so a rerun
reuses finished points and recomputes the rest; ``results.json`` and ``layers.png`` at the end.
"""
from __future__ import annotations

import argparse
import os
import time

from _cli import mask_arg, nonneg_int, positive_int

FAMILIES = ("prior", "one_layer", "composed")
ONE_LAYER_FAMILIES = ("prior", "copy")  # --layers 1, the baseline: the copy pattern's starts


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=positive_int("--L"), default=16, help="sequence length (>= 3)")
    ap.add_argument("--V", type=positive_int("--V"), default=32, help="vocabulary size (>= 2)")
    ap.add_argument("--activation", choices=["softmax", "linear"], default="softmax")
    ap.add_argument("--mask", type=mask_arg, default="full", help="each layer's mask (copyjax.masks)")
    ap.add_argument("--shift", type=int, choices=[1, 2], default=2, help="target y_l = x_{l-k}")
    ap.add_argument("--no-residual", action="store_true", help="h = A_2 A_1 x (no residual stream)")
    ap.add_argument("--layers", type=int, choices=[1, 2], default=2,
                    help="1: the one-layer baseline on the same data and target (families prior, copy)")
    ap.add_argument("--P", type=positive_int("--P"), nargs="+", required=True, help="numbers of sequences")
    ap.add_argument("--chains", type=positive_int("--chains"), default=4,
                    help="chains per circuit start (twice as many from the prior)")
    ap.add_argument("--steps", type=positive_int("--steps"), default=2000, help="MALA steps per chain (a third burn-in)")
    ap.add_argument("--seed", type=nonneg_int("--seed"), default=0, help="the chains' key")
    ap.add_argument("--data-seed", type=nonneg_int("--data-seed"), default=0, help="the data's key")
    ap.add_argument("--out", default="runs/deeper", help="output folder (per-P records, results.json, layers.png)")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def families(layers: int) -> tuple:
    return FAMILIES if layers == 2 else ONE_LAYER_FAMILIES


def circuit(o: dict, shift: int, residual: bool = True, divide: float = 0.3) -> str:
    """Where a chain ends, from its final draw ``o`` (``cG`` and the per-layer weights on x_l,
    x_{l-1}, x_{l-2}): ``pooling`` where A_eff does not copy (|c_G| <= ``divide``: softmax, the
    mask's phase divide, as the free energy's; linear, 0.3), else the path that
    carries more of A_eff's weight on x_{l-k}: ``one_layer`` (layer 2 on x_{l-k}, through the
    residual stream and layer 1's weight on the token itself: w2(S^k) (r + w1(I)), r = 1 with
    the residual) or ``composed`` (layer 1 carrying part of the shift: the sum over j < k of
    w2(S^j) w1(S^(k-j))). Linear weights may be negative; the products say which path copies."""
    if "A2_S" not in o:  # one layer
        return "copy" if abs(o["cG"]) > divide else "pooling"
    if not abs(o["cG"]) > divide:  # linear: the posterior is even in G_2 -> -G_2 (A_eff -> -A_eff)
        return "pooling"
    w1 = (o["A1_I"], o["A1_S"], o["A1_S2"])
    w2 = (o["A2_I"], o["A2_S"], o["A2_S2"])
    one = w2[shift] * (float(residual) + w1[0])
    composed = sum(w2[j] * w1[shift - j] for j in range(shift))
    return "one_layer" if abs(one) >= abs(composed) else "composed"


def copy_divide(mask, a) -> float:
    """The c_G below which a chain pools: softmax, the mask's phase divide (c_G at the copy
    logit log(L) / 2, as in the free energy); linear (no such logit), 0.3."""
    return mask.divide(a.L) if a.activation == "softmax" else 0.3


def label_ends(rec: dict, shift: int, residual: bool, divide: float) -> dict:
    """``rec`` with each family's ``ends`` counted from its chains' final draws (so a record
    saved under another labelling rule is relabelled, not rerun)."""
    for f in rec["families"].values():
        final = f["final"]
        ends = [circuit({k: v[j] for k, v in final.items()}, shift, residual, divide) for j in range(f["n"])]
        f["ends"] = {c: ends.count(c) for c in ("pooling", "copy", "one_layer", "composed") if c in ends}
    return rec


def run_point(a, spec: str, P: int) -> dict:
    import jax
    import jax.numpy as jnp
    import numpy as np

    import copyjax as cj
    from copyjax import exact_posterior, masks
    from copyjax.data import sampled_stats

    mask = masks.get(spec)
    hyper = cj.default_hyper(a.activation, a.L)
    stats = sampled_stats(jax.random.fold_in(jax.random.key(a.data_seed), P), P, a.L, a.V).astype(jnp.float32)
    n = 4 * a.chains  # start_positions: half from the prior, the copy half alternating the two circuits
    t0 = time.perf_counter()
    run = exact_posterior.sample_exact_posterior(
        jax.random.fold_in(jax.random.key(a.seed), P), stats, hyper, a.activation, n_chains=n, num_steps=a.steps,
        burn_in=a.steps // 3, thin=max(1, a.steps // 300), progress=not a.no_progress,
        desc=f"{spec} P={P}", mask=mask)
    wall = time.perf_counter() - t0
    d = {k: np.asarray(v, float) for k, v in run.samples.draws.items()}
    fam = np.r_[np.zeros(n // 2, int), 1 + np.arange(n // 2) % (2 if a.layers == 2 else 1)]
    keys = ("cG", "loss") + mask.layer_order_keys
    out = {"P": P, "wall_s": wall, "acceptance": float(np.mean(run.acceptance)), "n_stuck": int(run.stuck.sum()),
           "families": {}}
    for f, name in enumerate(families(a.layers)):
        sel = (fam == f) & ~run.stuck
        out["families"][name] = {
            "n": int(sel.sum()),
            **{k: {"mean": float(d[k][sel].mean()), "sd": float(d[k][sel].std())} for k in keys},
            "logdensity_last": float(d["logdensity"][sel][:, -max(1, d["logdensity"].shape[1] // 5):].mean()),
            "final": {k: d[k][sel, -1].tolist() for k in keys}}
    return out


def line(r: dict) -> str:
    parts = []
    for name, f in r["families"].items():
        ends = ", ".join(f"{k} {v}" for k, v in f["ends"].items() if v)
        lay = (f" A1(I {f['A1_I']['mean']:.2f} S {f['A1_S']['mean']:.2f}) A2(S {f['A2_S']['mean']:.2f} "
               f"S2 {f['A2_S2']['mean']:.2f})") if "A1_I" in f else ""
        parts.append(f"{name}: c_G {f['cG']['mean']:.3f}{lay} log p {f['logdensity_last']:.1f} [ends {ends}]")
    return f"P={r['P']:>6} ({r['wall_s']:.0f} s): " + " | ".join(parts)


def figure(records: list, out: str, title: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    Ps = np.array([r["P"] for r in records], float)
    for f, ls in zip(records[0]["families"], ("-", "--", ":")):
        for j, k in enumerate(k for k in ("cG", "A1_I", "A1_S", "A2_S", "A2_S2") if k in records[0]["families"][f]):
            ax = axes[0] if k == "cG" else axes[1]
            m = [r["families"][f][k]["mean"] for r in records]
            sd = [r["families"][f][k]["sd"] for r in records]
            ax.errorbar(Ps, m, sd, ls=ls, marker="o", ms=3, capsize=2, color=f"C{j}", label=f"{k}, {f} starts")
    for ax, lab in zip(axes, ("c_G of A_eff (composition order parameter)", "layer i's weight on x_l / x_{l-1} / x_{l-2}")):
        ax.set_xscale("log")
        ax.set_xlabel("P")
        ax.set_ylabel(lab)
        if ax.get_legend_handles_labels()[0]:  # one layer has no per-layer weights
            ax.legend(fontsize=6, ncol=2)
        else:
            ax.set_visible(False)
    fig.suptitle(title)
    path = os.path.join(out, "layers.png")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    if a.L < 3:
        ap.error(f"--L must be >= 3 (x_{{l-2}} distinct from x_l), got {a.L}")
    from copyjax import masks, results
    from copyjax.specs import StackSpec

    try:
        spec = StackSpec(a.mask, a.layers, not a.no_residual, a.shift).checked().spec
    except ValueError as e:  # the spec's own rule (copyjax.specs.StackSpec.checked), in the options' names
        ap.error(f"--no-residual: {e}" if str(e).startswith("residual") else str(e))
    os.makedirs(a.out, exist_ok=True)
    records = []
    divide = copy_divide(masks.get(spec), a)
    for P in sorted(set(a.P)):
        key = {"version": 2, "spec": spec, "L": a.L, "V": a.V, "activation": a.activation, "P": P, "chains": a.chains,
               "steps": a.steps, "seed": a.seed, "data_seed": a.data_seed}
        path = os.path.join(a.out, f"P{P}.json")
        rec = results.load_if_same(path, key)
        if rec is None:
            rec = run_point(a, spec, P)
            results.save_with_key(path, key, rec)
        else:
            rec = {k: v for k, v in rec.items() if k not in ("key", "key_hash")}
        records.append(label_ends(rec, a.shift, not a.no_residual, divide))
        print(line(records[-1]), flush=True)
    results.write_json(os.path.join(a.out, "results.json"), {"spec": spec, "args": vars(a), "points": records})
    print("figure:", figure(records, a.out, f"{spec}, {a.activation}, L={a.L}, V={a.V}"))


if __name__ == "__main__":
    main()
