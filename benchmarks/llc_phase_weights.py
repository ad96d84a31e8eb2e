"""The phase weights explained: the free energy's measured log(copy / pooling
mass) across a softmax coexistence window against predictions from local quantities at the two
minima, on the scan's own data (the statistics of its P0 sequences scaled to each P, as the
scan's MBAR targets are).

    python scripts/free_energy.py --L 32 --V 32 --scan 2092 3322 --P0 2461 --steps 900 --bootstrap 10 --no-theory --seeds 0 --out runs/pstarL/L32V32
    python benchmarks/llc_phase_weights.py runs/pstarL/L32V32 --P 2350 2463 2600 2800 --out runs/llc_pw32

Per P and phase: w* by Adam on the joint MAP (``llc.find_minima``), L_n(w*), the exact lambda_hat
(``llc.estimate_llc``) at each ``--gamma`` and each nbeta of ``--nbeta`` (``default`` = P / log P,
devinterp's; ``P`` = the posterior's own beta = 1), and Laplace's log mass of the phase's basin of
the G-marginal (``local_weights.laplace_log_mass``: W integrated, the prior included).
Predictions of log(Z_copy / Z_pool): singular learning theory's ``-P dL_n - d lambda log P``
(``local_weights.slt_log_odds``), the same with the log posterior at w* in place of -P L_n (the
prior's term added), and Laplace's. Writes ``OUT/phase_weights.json`` (rows saved as they
finish; a rerun resumes), ``OUT/phase_weights.md`` (the table) and ``OUT/phase_weights.png``.
"""
import argparse
import json
import math
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
import copyjax as cj  # noqa: E402
from copyjax import llc  # noqa: E402
from copyjax.local_weights import laplace_log_mass, slt_log_odds  # noqa: E402
from copyjax.order import reported_order_parameters  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scan", help="a scripts/free_energy.py --scan output folder (summary.json)")
    ap.add_argument("--P", type=float, nargs="+", required=True, help="data sizes inside the scan's range")
    ap.add_argument("--gamma", type=float, nargs="+", default=[10.0])
    ap.add_argument("--nbeta", nargs="+", default=["default", "P"], choices=["default", "P"])
    ap.add_argument("--chains", type=int, default=8)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)

    summ = json.load(open(os.path.join(a.scan, "summary.json")))
    cfg = summ["config"]
    L, V, P0 = cfg["L"], cfg["V"], cfg["P0"]
    seed = summ["seeds"][0]
    sc = summ["scan"][str(seed)]
    Ps, lr, lr_sd = (np.asarray(sc[k], float) for k in ("P", "log_ratio", "log_ratio_sd"))
    for P in a.P:
        if not Ps[0] <= P <= Ps[-1]:
            ap.error(f"--P {P:g} lies outside the scan's range [{Ps[0]:.0f}, {Ps[-1]:.0f}]")
    tokens = cj.token_law(summ.get("tokens", "uniform"))
    hyper = cj.default_hyper("softmax", L)
    key = cj.point_key(seed, P0)  # the scan's data, as scripts/free_energy.py draws it
    stats0 = cj.sampled_stats(jax.random.fold_in(key, 0), P0, L, V, tokens=tokens).astype(jnp.float32).astype(jnp.float64)

    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "phase_weights.json")
    setup = {"scan": os.path.abspath(a.scan), "L": L, "V": V, "P0": P0, "seed": seed, "tokens": tokens.spec,
             "gamma": a.gamma, "nbeta": a.nbeta, "chains": a.chains, "steps": a.steps}
    old = json.load(open(path)) if os.path.exists(path) else None
    rows = old["rows"] if old and old.get("config") == setup else []


    def save():
        with open(path + ".tmp", "w") as f:
            json.dump({"config": setup, "rows": rows}, f, indent=1)
        os.replace(path + ".tmp", path)


    def phase_row(P, stats, m, k):
        """Local quantities at one minimum: loss, lambda_hat per (nbeta, gamma), Laplace's mass."""
        r = {"phase": m.phase, "loss_star": float(llc.mean_loss(m.W, m.G, stats, "softmax")), "logpost_star": m.logpost,
             "aG_star": m.cG, "llc": {}}
        for nb in a.nbeta:
            nbeta = llc.default_nbeta(P) if nb == "default" else float(P)
            for g in a.gamma:
                e = llc.estimate_llc(jax.random.fold_in(k, len(r["llc"])), stats, m.W, m.G, "softmax", nbeta=nbeta,
                                     gamma=g, n_chains=a.chains, num_steps=a.steps)
                r["llc"][f"{nb},{g:g}"] = {"nbeta": nbeta, "gamma": g, "llc": e.llc, "se": e.llc_se, "rhat": e.rhat,
                                           "left_phase": e.left_phase}
        lap = laplace_log_mass(m.G, stats, hyper, "softmax")
        aG = float(reported_order_parameters(cj.attention(jnp.asarray(lap.G), "softmax"), "softmax")["cG"])
        r["laplace"] = {"log_mass": lap.log_mass, "action": lap.action, "logdet": lap.logdet, "aG_mode": aG,
                        "phase_mode": str(llc.phase_of(aG, 0.0, "softmax", L)), "grad_max": lap.grad_max,
                        "min_eig": lap.min_eig, "n_steps": lap.n_steps}
        return r


    done = {r["P"] for r in rows}
    for i, P in enumerate(a.P):
        if P in done:
            continue
        t0 = time.perf_counter()
        stats = stats0 * (P / P0)
        k = jax.random.fold_in(jax.random.key(seed), i)
        mins = {m.phase: m for m in llc.find_minima(k, stats, hyper, "softmax")}
        row = {"P": P, "measured": float(np.interp(P, Ps, lr)), "measured_sd": float(np.interp(P, Ps, lr_sd)),
               "phases": {ph: phase_row(P, stats, m, jax.random.fold_in(k, j)) for j, (ph, m) in enumerate(mins.items())}}
        if {"copy", "pooling"} <= set(mins):
            c, p = row["phases"]["copy"], row["phases"]["pooling"]
            pred = {}
            for s in c["llc"]:
                pred[f"slt[{s}]"] = slt_log_odds(P, c["loss_star"], p["loss_star"], c["llc"][s]["llc"], p["llc"][s]["llc"])
                pred[f"slt_logpost[{s}]"] = (c["logpost_star"] - p["logpost_star"]
                                             - (c["llc"][s]["llc"] - p["llc"][s]["llc"]) * math.log(P))
            pred["laplace"] = c["laplace"]["log_mass"] - p["laplace"]["log_mass"]
            row["predicted"] = pred
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        save()
        print(f"P = {P:g}: measured {row['measured']:+.2f} +- {row['measured_sd']:.2f}; "
              + ", ".join(f"{k} {v:+.1f}" for k, v in row.get("predicted", {}).items()) + f" ({row['wall_s']:.0f} s)",
              flush=True)

    rows.sort(key=lambda r: r["P"])
    save()
    both = [r for r in rows if "predicted" in r]
    keys = list(both[0]["predicted"]) if both else []
    lines = [f"Phase weights at L = {L}, V = {V} (scan data P0 = {P0}, seed {seed}, tokens {tokens.spec}): "
             "log(Z_copy / Z_pool), measured (free energy) and predicted from local quantities; residual = "
             "predicted - measured.", "",
             "| P | measured | " + " | ".join(keys) + " |", "|---:|---:|" + "---:|" * len(keys)]
    for r in both:
        lines.append(f"| {r['P']:g} | {r['measured']:+.2f} ± {r['measured_sd']:.2f} | "
                     + " | ".join(f"{r['predicted'][k]:+.1f} ({r['predicted'][k] - r['measured']:+.1f})" for k in keys) + " |")
    llc_keys = list(rows[0]["phases"][next(iter(rows[0]["phases"]))]["llc"]) if rows else []
    lines += ["", "| P | phase | L_n(w*) | a_G at w* | log posterior at w* | "
              + " | ".join(f"lambda_hat [{s}]" for s in llc_keys) + " | Laplace log mass | a_G at the G-mode |",
              "|---:|---|---:|---:|---:|" + "---:|" * len(llc_keys) + "---:|---:|"]
    for r in rows:
        for ph, q in r["phases"].items():
            lines.append(f"| {r['P']:g} | {ph} | {q['loss_star']:.4f} | {q['aG_star']:.3f} | {q['logpost_star']:.1f} | "
                         + " | ".join(f"{v['llc']:.2f} ± {v['se']:.2f}" + (" (left)" if v["left_phase"] > 0.05 else "")
                                      for v in q["llc"].values())
                         + f" | {q['laplace']['log_mass']:.1f} | {q['laplace']['aG_mode']:.3f} |")
    # a constant offset fitted to each prediction: what is left is its P-dependence
    lines += ["", "| prediction | mean residual | residual sd after removing the mean | slope d(log-odds)/dP, predicted / measured |",
              "|---|---:|---:|---|"]
    if len(both) >= 2:
        x = np.array([r["P"] for r in both])
        y = np.array([r["measured"] for r in both])
        s_meas = np.polyfit(x, y, 1)[0]
        for k in keys:
            res = np.array([r["predicted"][k] for r in both]) - y
            s_pred = np.polyfit(x, res + y, 1)[0]
            lines.append(f"| {k} | {res.mean():+.1f} | {res.std(ddof=1):.2f} | {s_pred:.4f} / {s_meas:.4f} |")
    open(os.path.join(a.out, "phase_weights.md"), "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))

    if both:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4))
        ax.plot(Ps, lr, "k-", label="measured (free-energy scan)")
        ax.fill_between(Ps, lr - 2 * lr_sd, lr + 2 * lr_sd, color="k", alpha=0.2)
        x = [r["P"] for r in both]
        for j, k in enumerate(keys):
            pred = np.array([r["predicted"][k] for r in both])
            meas = np.array([r["measured"] for r in both])
            if "logpost" not in k:  # hundreds of nats off: on the residual panel only
                ax.plot(x, pred, "o--", color=f"C{j}", label=k)
            bx.plot(x, pred - meas, "o--", color=f"C{j}", label=k)
        ax.axhline(0, color="gray", lw=0.5)
        ax.set_xlabel("P (sequences)")
        ax.set_ylabel("log(Z_copy / Z_pool)")
        ax.set_title(f"softmax L = {L}, V = {V}: phase weights")
        ax.legend(fontsize=7)
        bx.axhline(0, color="gray", lw=0.5)
        bx.set_yscale("symlog", linthresh=10)
        bx.set_xlabel("P (sequences)")
        bx.set_ylabel("predicted - measured (nats)")
        bx.set_title("residual of each local prediction")
        bx.legend(fontsize=7)
        fig.savefig(os.path.join(a.out, "phase_weights.png"), dpi=130, bbox_inches="tight")


if __name__ == "__main__":
    main()
