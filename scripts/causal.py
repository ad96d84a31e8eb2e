"""The MAP of G under the causal mask (or --mask window:W), row by row: at each P the exact
action at the expected statistics (uniform tokens) minimised over all allowed entries of G from
a pooling start (G = 0) and from a copy start (logit --gamma at the previous token), the per-row
copy order parameter a_G(l) of each and of the lower of the two (the global MAP); table and figure.

    python scripts/causal.py --L 32 --V 32 --P 600 900 1200 1600 2000 2500 3000 --out runs/causal
    python scripts/causal.py --L 32 --V 32 --P 600 1200 2000 3000 --exact-chains 8 --out runs/causal_exact
    python scripts/causal.py --L 32 --V 32 --activation linear --P 800 1200 1600 2400 --exact-chains 8 --out runs/causal_lin

``--activation linear`` (A = tril(G)): also the onset of the MAP form, where G = 0 stops being a
minimum of the action at the expected statistics (``copyjax.onset.linear_onset``: the Hessian
there, I / sigma_g2 + P H1 - P^2 H2, loses positive definiteness), and its unstable mode's
pooling / copy content; the copy order parameter is c_G(l) (``Mask.row_copy_order``) and the
exact posterior's summary is of |mean c_G| (the posterior is symmetric under G -> -G).

``--exact-chains N``: also the exact posterior of G on sampled data of P sequences
(``exact_posterior.sample_exact_posterior(mask=...)``: adaptive MALA, W integrated out), its
mean and sd of the row-averaged a_G and each start family's mean (they disagree where two
phases coexist).

A row with l + 1 keys needs a copy logit of order ln(l + 1): does the transition run through
the rows from l = 1 upwards, and does each row jump (first order) or turn smoothly?
"""
from __future__ import annotations

import argparse
import json
import os
import time

from _cli import mask_arg, positive_float, positive_int


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=positive_int("--L"), default=32)
    ap.add_argument("--V", type=positive_int("--V"), default=32)
    ap.add_argument("--activation", choices=["softmax", "linear"], default="softmax")
    ap.add_argument("--mask", type=mask_arg, default="causal", help="causal (default) or window:W (copyjax.masks)")
    ap.add_argument("--P", type=positive_int("--P"), nargs="+", required=True)
    ap.add_argument("--gamma", type=positive_float("--gamma"),
                    help="the copy start: its logit (softmax, default 8) or copy weight (linear, default 1)")
    ap.add_argument("--steps", type=positive_int("--steps"), default=400, help="L-BFGS iterations per start")
    ap.add_argument("--exact-chains", type=int, default=0,
                    help="chains on the exact causal posterior of G per P (half from pooling, half from the copy start; "
                         "0: none), on sampled data of P sequences")
    ap.add_argument("--exact-steps", type=positive_int("--exact-steps"), default=900, help="MALA steps per exact chain")
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--out", default="runs/causal")
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    if a.L < 3 or a.V < 2:
        ap.error("--L must be >= 3 and --V >= 2")
    if a.exact_chains and a.exact_chains < 2:
        ap.error(f"--exact-chains must be 0 or >= 2 (one per start), got {a.exact_chains}")
    if a.exact_steps < 30:
        ap.error(f"--exact-steps must be >= 30 (a third is burn-in), got {a.exact_steps}")

    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import copyjax as cj
    from copyjax import masks
    from copyjax.chains import summarize
    from copyjax.exact_posterior import sample_exact_posterior
    from copyjax.local_weights import exact_mode
    from copyjax.onset import linear_onset

    M = masks.get(a.mask)

    L, V, act = a.L, a.V, a.activation
    h = cj.default_hyper(act, L)
    gamma = a.gamma or (8.0 if act == "softmax" else 1.0)
    OP = "a_G" if act == "softmax" else "c_G"  # the copy order parameter's name
    os.makedirs(a.out, exist_ok=True)
    Ps = sorted(set(a.P))
    # linear: G = 0 is a stationary point of the action (A -> -A is a symmetry), so the pooling start
    # is a small causal pooling pattern instead
    pool0 = jnp.zeros((L, L)) if act == "softmax" else 0.05 * jnp.tril(jnp.ones((L, L))) / jnp.arange(1, L + 1)[:, None]
    starts = {"pool": pool0, "copy": gamma * M.copy_pattern(L, jnp.float64)}
    rows, t0 = [], time.perf_counter()
    onset = None
    if act == "linear":
        o = linear_onset(L, V, h, mask=M)
        full = cj.theory.transition_points(L, V, "linear", form="map")
        onset = {"P_onset": o.P_onset, "c1": o.c1, "cG": o.cG, "cG_rows": o.cG_rows.tolist(),
                 "full_mask_P_onset": full.P_onset, "full_mask_direction": full.onset_direction}
        print(f"onset of the {M.spec} MAP form (G = 0 unstable): P_1 = {o.P_onset:.1f}, unstable mode (c_1, c_G) = "
              f"({o.c1:.3f}, {o.cG:.3f}), c_G(l) from {o.cG_rows.min():.3f} to {o.cG_rows.max():.3f} over rows; "
              f"full mask (reduced theory): P_1 = {full.P_onset:.1f}, mode {tuple(round(x, 3) for x in full.onset_direction)}",
              flush=True)
    print(f"{M.spec} MAP, L={L}, V={V}, {act}: rows l = 1 .. {L - 1}; {OP}(l) = 0 pooling over the row's keys, "
          f"1 copying")
    print(f"{'P':>7} {'S pool':>10} {'S copy':>10} {'mean ' + OP + ' pool':>14} {'copy':>6} {'rows copying (global)':>22}")
    for P in Ps:
        C = cj.expected_stats(float(P), L, V, jnp.float64)
        res = {}
        for name, G0 in starts.items():
            G = exact_mode(G0, C, h, act, M, a.steps)
            res[name] = (float(cj.exact_action(G, C, h, act, M)), np.asarray(M.row_copy_order(M.attention(G, act))))
        best = min(res, key=lambda k: res[k][0])
        aG = res[best][1]
        n_copy = int(np.sum(aG > 0.5))
        rows.append({"P": P, "action": {k: v[0] for k, v in res.items()}, "aG_rows": {k: v[1].tolist() for k, v in res.items()},
                     "global": best, "n_rows_copying": n_copy})
        if a.exact_chains:
            data = cj.sampled_stats(cj.point_key(a.data_seed, P), P, L, V).astype(jnp.float64)
            run = sample_exact_posterior(cj.point_key(a.data_seed + 1, P), data, h, act,
                                         n_chains=a.exact_chains, num_steps=a.exact_steps, mask=M)
            cG = np.asarray(run.samples.draws["cG"], float)
            # per start family: the mean of the order parameter (linear: of |row mean c_G|, the sign being a symmetry)
            order = cG if act == "softmax" else np.abs(cG)
            ex = summarize(order)
            fam = {s: float(order[run.start == code].mean()) for s, code in (("pool", 0), ("copy", 1))}
            # linear: c_1 flips with c_G under the symmetry, so it is read in the frame where c_G > 0
            c1 = np.asarray(run.samples.draws["c1"], float) * (1.0 if act == "softmax" else np.sign(cG))
            rows[-1]["exact"] = {"mean": ex.mean, "mcse": ex.mcse, "sd": ex.sd, "rhat": ex.rhat, "by_start": fam,
                                 "acceptance": float(np.nanmean(run.acceptance)), "c1": float(c1.mean()),
                                 "c1_sd": float(c1.std())}
            print(f"{'':>7} exact posterior (MALA, {a.exact_chains} x {a.exact_steps}): mean "
                  f"{OP if act == 'softmax' else '|c_G|'} {ex.mean:.3f} "
                  f"+- {ex.mcse:.3f} (sd {ex.sd:.3f}, R-hat {ex.rhat:.3f}); from prior "
                  f"{fam['pool']:.3f}, from copy {fam['copy']:.3f}; mean c_1 {c1.mean():.3f}", flush=True)
        print(f"{P:>7} {res['pool'][0]:>10.2f} {res['copy'][0]:>10.2f} {res['pool'][1].mean():>14.3f} "
              f"{res['copy'][1].mean():>6.3f} {n_copy:>4} of {L - 1} ({best}: rows "
              f"{', '.join(str(i + 1) for i in np.flatnonzero(aG > 0.5)[:3])}{' ...' if n_copy > 3 else ''})", flush=True)
    with open(os.path.join(a.out, "causal_map.json"), "w") as f:
        json.dump({"L": L, "V": V, "activation": act, "mask": M.spec, "gamma": gamma, "onset": onset, "steps": a.steps, "exact_chains": a.exact_chains,
                   "exact_steps": a.exact_steps, "data_seed": a.data_seed, "rows": rows,
                   "seconds": time.perf_counter() - t0}, f, indent=1)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4))
    glob = np.array([r["aG_rows"][r["global"]] for r in rows])
    im = ax.imshow(glob.T, aspect="auto", origin="lower", vmin=0, vmax=1, cmap="viridis",
                   extent=(-0.5, len(Ps) - 0.5, 0.5, L - 0.5))
    ax.set_xticks(range(len(Ps)))
    ax.set_xticklabels([str(P) for P in Ps], rotation=45, fontsize=7)
    ax.set_xlabel("P")
    ax.set_ylabel("row l (l + 1 keys)")
    ax.set_title(f"{M.spec} MAP (global): {OP} per row, L = {L}, V = {V}")
    fig.colorbar(im, ax=ax)
    for name, mk in (("pool", "o-"), ("copy", "s--")):
        bx.plot(Ps, [np.mean(r["aG_rows"][name]) for r in rows], mk, label=f"MAP from the {name} start")
    if a.exact_chains:
        bx.errorbar(Ps, [r["exact"]["mean"] for r in rows], [r["exact"]["sd"] for r in rows], fmt="D", color="k",
                    capsize=3, label="exact posterior (mean +- sd)")
    bx.set_xscale("log")
    bx.set_xlabel("P")
    bx.set_ylabel(f"mean over rows of {OP}(l)")
    bx.legend(fontsize=7)
    bx.set_title("MAP from both starts" + (" and the exact posterior" if a.exact_chains else ""))
    fig.tight_layout()
    for ext in ("png", "pdf"):
        fig.savefig(os.path.join(a.out, f"causal_map.{ext}"), dpi=130)
    print(f"causal_map.json and causal_map.png in {a.out} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
