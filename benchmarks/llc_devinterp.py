"""devinterp's own LLC estimator scored against copyjax's exact value, on rows of a
``scripts/llc.py`` run: the same network (W, G), data (the row's tokens), w* (its W*, G*),
nbeta and gamma, through ``devinterp.slt.llc.llc`` (devinterp 2.0.1: SGLD with its default
``sgmcmc_sgld``, ``localization = gamma``, full batch, init loss over the full batch).

    pip install -e '.[bench]'
    python scripts/llc.py --L 16 --V 32 --P 300 700 1500 2500 --gamma 10 100 --out runs/llc16
    python benchmarks/llc_devinterp.py runs/llc16 --rows 3 --lr 2e-2 6e-3 2e-3 6e-4

Conventions (read in devinterp 2.0.1's ``optim/sgmcmc.py`` and ``slt/llc.py``): its update is
``theta -= (lr/2) (nbeta grad L + gamma (theta - theta*)) ; theta += sqrt(lr) N(0, 1)``, i.e.
blackjax's SGLD step eps = lr / 2 (the table prints both); its lambda_hat averages the loss
over every step, burn-in included. Printed beside it: the same draws' mean without the
burn-in steps.
"""
import argparse
import json
import os
import time

import numpy as np

try:
    import torch
    from datasets import Dataset
    from devinterp.slt.llc import llc as devinterp_llc
except ImportError as e:  # the optional `bench` extra
    torch = None
    _MISSING = e


class CopyHead(torch.nn.Module if torch is not None else object):
    """copyjax's network in torch: ``f_l = W sum_m A_lm x_m``, ``A = softmax(G)`` (or ``G``),
    target the previous token (``y = roll(x, 1)``, copyjax's ``shift_matrix``); per position
    loss ``|y_l - f_l|^2 / 2``, whose mean over positions and sequences is copyjax's L_n."""

    def __init__(self, W, G, activation):
        super().__init__()
        self.W = torch.nn.Parameter(torch.tensor(np.asarray(W), dtype=torch.float64))
        self.G = torch.nn.Parameter(torch.tensor(np.asarray(G), dtype=torch.float64))
        self.activation = activation

    def per_token_loss(self, ids):
        L, V = self.G.shape[0], self.W.shape[0]
        x = torch.nn.functional.one_hot(ids[:, :L].long(), V).to(torch.float64)  # the last column is padding
        y = torch.roll(x, 1, dims=1)
        A = torch.softmax(self.G, dim=-1) if self.activation == "softmax" else self.G
        f = torch.einsum("lm,bmv->blv", A, x) @ self.W.T
        return 0.5 * ((y - f) ** 2).sum(-1)  # (batch, L) = (batch, seq - 1) of the padded ids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", help="a scripts/llc.py output folder")
    ap.add_argument("--rows", type=int, nargs="+", default=[3])
    ap.add_argument("--lr", type=float, nargs="+", default=[2e-2, 6e-3, 2e-3, 6e-4], help="devinterp's lr (= 2 eps)")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--burn-in", type=int, default=1000)
    ap.add_argument("--batch", type=int, help="minibatch size (default: full batch); the init loss is then "
                                             "devinterp's default, the mean over 32 minibatches")
    a = ap.parse_args()
    if torch is None:
        print(f"llc_devinterp: skipped, torch / devinterp not installed ({_MISSING}); "
              "install them with  pip install -e '.[bench]'")
        return
    torch.set_num_threads(2)
    d = json.load(open(os.path.join(a.run, "llc.json")))
    print(f"batch: {a.batch or 'full'}; {a.chains} chains x ({a.burn_in} burn-in + {a.draws}) steps")
    print("| row | activation | P | phase | gamma | exact | lr (eps) | devinterp (burn-in in) | without burn-in "
          "| rel. error | s |")
    print("|---:|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for i in a.rows:
        r = d["rows"][i]
        z = np.load(os.path.join(a.run, r["inputs"]))
        tokens = np.asarray(z["tokens"])
        P = tokens.shape[0]
        ids = np.concatenate([tokens, np.zeros((P, 1), tokens.dtype)], axis=1)
        ds = Dataset.from_dict({"input_ids": ids.tolist()}).with_format("torch")
        for lr in a.lr:
            model = CopyHead(z["W_star"], z["G_star"], r["activation"])
            t0 = time.perf_counter()
            out = devinterp_llc(model, ds, {}, lr=lr, n_beta=r["nbeta"], localization=r["gamma"],
                                loss_fn=lambda m, x: m.per_token_loss(x), num_chains=a.chains,
                                num_draws=a.draws, num_burnin_steps=a.burn_in, batch_size=a.batch or P,
                                num_init_loss_batches=32 if a.batch else 1, shuffle=bool(a.batch))
            trace = np.asarray(out["loss_trace"].values)  # (chain, step)
            lam = float(out["llc_mean"])
            lam_post = r["nbeta"] * (trace[:, a.burn_in:].mean() - float(out["init_loss"]))
            rel = (lam - r["llc_exact"]) / r["llc_exact"]
            print(f"| {i} | {r['activation']} | {r['P']} | {r['phase']} | {r['gamma']:g} | {r['llc_exact']:.3f} "
                  f"| {lr:g} ({lr / 2:g}) | {lam:.3f} | {lam_post:.3f} | {rel:+.1%} "
                  f"| {time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
