"""Free energy of the exact posterior along an order parameter (umbrella sampling + MBAR):
phase weights, posterior moments, the equal-weight point P* and the barrier (softmax), the
onset's susceptibility and the sign families' weights (linear).

    python scripts/free_energy.py --L 64 --V 32                 # 5 P around the theory's P*
    python scripts/free_energy.py --L 16 --V 32 --seeds 0 1 2   # finite-data spread of P*
    python scripts/free_energy.py --L 64 --V 32 --P 4000 4400   # explicit P
    python scripts/free_energy.py --L 64 --V 32 --activation linear --out runs/free_energy_linear
    python scripts/free_energy.py --L 32 --V 16 --tokens zipf:1 --scan  # another token law
    python scripts/free_energy.py --L 32 --V 32 --mask causal --no-theory --scan 1400 2400  # causal mask

softmax: windows on the copy logit xi, F over a_G, phases split at xi = log(L) / 2; with
--mask causal (or window:W) that model (copyjax.masks): windows on its copy logit, F over the mean
over its loss rows of a_G(l), the same split.
linear: windows on rho = c_1 + c_G (the mean sector, the onset's order parameter), every chain
started with c_G = +0.5 (c_G's sign is slow above the crossover; the posterior is even under
G -> -G, so one sign loses nothing); F over |rho| and |c_G|, Var |rho| (the susceptibility),
and the weights of the sign families g s < 0 / g s > 0 (docs/free_energy.md).

Writes into --out: points/ (one JSON + npz per (seed, P), written atomically; a killed run
resumes from them), summary.json (documented in docs/free_energy.md) and free_energy.png/pdf.
"""
from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from typing import NamedTuple

from _cli import (add_compile_cache_option, add_distributed_options, add_stack_options, enable_compile_cache, float_in,
                  int_at_least, mask_arg, nonneg_int, positive_float, positive_int, stack_mask, start_distributed,
                  token_law_arg)



def _overlap(rec, where: str) -> dict:
    """MBAR's weakest link between its states, in the output, and said aloud when it is too weak
    to trust (``mbar.MIN_OVERLAP``): more steps, more chains or closer windows/tempers."""
    from copyjax import mbar

    if not rec.overlap_ok:
        print(f"  warning ({where}): MBAR's states overlap too little (weakest link {rec.weakest_overlap:.3g} < "
              f"{mbar.MIN_OVERLAP}): its free energies between them are unreliable; run more --steps, more "
              "--chains-per-window or a smaller --temper-spacing / --spacing", flush=True)
    return {"mbar_weakest_overlap": rec.weakest_overlap, "mbar_overlap_ok": rec.overlap_ok}


def _listed(x):
    import numpy as np

    return [None if not np.isfinite(v) else float(v) for v in x]


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--L", type=int_at_least("--L", 2), default=64)
    ap.add_argument("--V", type=int_at_least("--V", 2), default=32)
    ap.add_argument("--activation", choices=["softmax", "linear"], default="softmax")
    ap.add_argument("--tokens", type=token_law_arg, default="uniform",
                    help="token law of the sampled data: uniform, zipf:S or markov:Q (copyjax.tokens); a Markov "
                         "law has no reduced theory: use --no-theory with --P or --scan P_lo P_hi")
    ap.add_argument("--mask", type=mask_arg, default="full",
                    help="attention mask (copyjax.masks): full (cyclic, the paper's), causal (keys m <= l, no loss at "
                         "position 0) or window:W (keys l-W .. l); softmax only under a mask other than full (no reduced "
                         "theory: use --no-theory with --P or --scan P_lo P_hi)")
    add_stack_options(ap, first_layer=True)
    ap.add_argument("--P", type=positive_int("--P"), nargs="+",
                    help="P values (default softmax: the theory's posterior-form P* times 0.85 0.93 1 1.08 1.2; "
                         "linear: its onset P_1 times 0.6 0.8 1 1.1 1.2 1.35 1.5 2 3 5)")
    ap.add_argument("--scan", type=positive_int("--scan"), nargs="*", metavar="P",
                    help="softmax: the free energy at every P in [P_lo, P_hi] from one tempered run per seed "
                         "(windows at a ladder of tempers on the data of P0 sequences, one MBAR): --scan P_lo P_hi, "
                         "or --scan alone for the theory's coexistence window (its posterior-form spinodals, "
                         "3 %% beyond each) around its P*")
    ap.add_argument("--P0", type=positive_int("--P0"),
                    help="with --scan: the sequences sampled (default the theory's posterior-form P*, or the "
                         "geometric middle of the scan if P* lies outside it)")
    # neighbouring tempers' data actions differ by ~20 nats sd per unit of log t at L = 64
    # (free_energy.scan_tempers): past 0.3 apart (~6 nats) MBAR has next to no overlap to join them
    ap.add_argument("--temper-spacing", type=float_in("--temper-spacing", 0.0, 0.3, " (neighbouring tempers must overlap)"),
                    default=0.06,
                    help="with --scan: the largest gap in log t between sampled tempers (overlap: see docs/free_energy.md)")
    ap.add_argument("--scan-points", type=int_at_least("--scan-points", 2),
                    help="with --scan: P values reported across the scan (default four per temper interval)")
    ap.add_argument("--bootstrap", type=nonneg_int("--bootstrap"), default=20,
                    help="with --scan: bootstrap replicates of the draws for P*'s error (0: MBAR's error only)")
    ap.add_argument("--seeds", type=nonneg_int("--seeds"), nargs="+", default=[0], help="data seeds (one data set per seed and P)")
    ap.add_argument("--spacing", type=positive_float("--spacing"),
                    help="distance between window centres (default 0.09 in xi for softmax, 0.07 in rho for linear)")
    ap.add_argument("--kappa", type=positive_float("--kappa"),
                    help="harmonic bias strength, nats per coordinate^2 (default 400 softmax, 1000 linear); "
                         "must exceed the free energy's concavity")
    ap.add_argument("--chains-per-window", type=positive_int("--chains-per-window"), default=1)
    ap.add_argument("--steps", type=positive_int("--steps"), default=1200, help="MALA steps per chain (a third burn-in)")
    ap.add_argument("--out", default="runs/free_energy", help="output directory")
    ap.add_argument("--no-theory", action="store_true",
                    help="skip the theory: its posterior-form transition point (about 40 s for softmax at L = 64) and, "
                         "softmax, its profile over a_G at each P (about 25 s per P at L = 64); needs --P; "
                         "summary.json then holds null for them")
    ap.add_argument("--no-progress", action="store_true")
    add_compile_cache_option(ap)
    add_distributed_options(ap)
    return ap


def check_options(ap: argparse.ArgumentParser, a) -> None:
    """Refuse what cannot work, before JAX loads: exit 2 naming the option."""
    if a.steps < 30:
        ap.error("--steps must be >= 30 (a third is burn-in, the rest is thinned by 5)")
    if a.L < 4:
        ap.error("--L must be >= 4")
    if a.scan is not None:
        if a.activation != "softmax":
            ap.error("--scan is for softmax (the equal-weight point P*); linear: give --P")
        if len(a.scan) not in (0, 2) or (len(a.scan) == 2 and a.scan[0] >= a.scan[1]):
            ap.error(f"--scan takes nothing or P_lo P_hi with P_lo < P_hi, got {a.scan}")
        if a.P:
            ap.error("--scan and --P exclude each other")
        if a.no_theory and not a.scan:
            ap.error("--no-theory with --scan needs the range: --scan P_lo P_hi")
    if not a.tokens.iid and not a.no_theory:
        ap.error(f"--tokens {a.tokens.spec}: the reduced theory needs i.i.d. tokens; add --no-theory")
    a.mask = stack_mask(ap, a)  # two layers / shift k: windows on the last layer's copy logit of x_{l-k}
    if a.mask != "full":
        if a.activation != "softmax":
            opt = "--layers / --shift" if "+" in a.mask else "--mask"  # the stack options build a mask spec
            ap.error(f"{opt} (mask {a.mask}): the linear windows bias the full mask's mean coordinate; "
                     "use --activation softmax")
        if not a.no_theory:
            ap.error(f"--mask {a.mask}: the reduced theory is the full mask's; add --no-theory")


class Context(NamedTuple):
    """What every point of a per-P run shares: the options, the model, the windows and bins, and
    the configuration its saved points are keyed by (``cfg``)."""

    a: argparse.Namespace
    L: int
    V: int
    act: str
    linear: bool
    hyper: object
    spacing: float
    kappa: float
    coordinate: str
    copy_start: float | None
    centers: object
    edges: object
    edges_rho: object
    op_div: float | None
    cfg: dict


def context(a, hyper) -> Context:
    """The windows (softmax: the copy logit's, split at the divide; linear: rho = c_1 + c_G, chains
    started at c_G = +0.5, as the sign families sit at rho of either sign given c_G > 0), the bins
    and the configuration."""
    import numpy as np

    from copyjax import free_energy as FE

    L, V, act = a.L, a.V, a.activation
    linear = act == "linear"
    spacing = a.spacing or (0.07 if linear else 0.09)
    kappa = a.kappa or (1000.0 if linear else 400.0)
    edges_rho = op_div = None
    if linear:
        coordinate, copy_start = "mean", 0.5
        centers = np.arange(-0.92, 1.3 + 1e-9, spacing)  # 32 windows at the default spacing
        edges = np.linspace(0.0, 1.3, 66)  # |rho| and |c_G|
        edges_rho = np.linspace(-0.98, 1.32, 116)  # signed rho, given c_G > 0 (the chains' start)
    else:
        coordinate, copy_start = "copy", None
        centers, op_div, edges = FE.softmax_windows(L, spacing, a.mask)
    cfg = dict(L=L, V=V, activation=act, spacing=spacing, kappa=kappa, steps=a.steps,
               chains_per_window=a.chains_per_window, n_windows=int(centers.size))
    if linear:  # (softmax's config stays as it was: its saved points are reused)
        cfg["coordinate"] = coordinate
    if a.tokens.kind != "uniform":  # (named only where not uniform: uniform points saved before stay valid)
        cfg["tokens"] = a.tokens.spec
    if a.mask != "full":  # (the same for the mask)
        cfg["mask"] = a.mask
    return Context(a, L, V, act, linear, hyper, spacing, kappa, coordinate, copy_start, centers, edges, edges_rho,
                   op_div, cfg)


@functools.lru_cache(maxsize=None)
def _theory_profile(L: int, V: int, P: int, edges: tuple, op_div: float, hyper) -> dict:
    import numpy as np

    from copyjax import free_energy as FE
    from copyjax.op_posterior import softmax_aG_profile

    edges = np.asarray(edges)
    th = softmax_aG_profile(P, L, V, edges, op_div, hyper)
    return {"theory_F": _listed(th.F), "theory_log_ratio": th.log_ratio,
            "theory_minima_op": FE.bin_centres(edges, FE.local_minima(th.F)),
            "theory_boundary_gap": th.boundary_gap}


def theory_profile(ctx: Context, P: int) -> dict:
    """The theory's posterior-form F over the same a_G bins (softmax; ~25 s at L = 64); it
    depends on P only, not on the data seed, so it is computed once per P."""
    return _theory_profile(ctx.L, ctx.V, P, tuple(ctx.edges.tolist()), ctx.op_div, ctx.hyper)


def refresh_minima(ctx: Context, r: dict) -> dict:
    """Minima and barrier of a saved point recomputed from its saved profiles (they follow
    ``FE.local_minima``'s current noise criterion without resampling)."""
    import numpy as np

    from copyjax import free_energy as FE

    sets = [("F", "edges", "minima_op", "barrier")]
    if ctx.linear:
        sets += [("F_abs_rho", "edges", "minima_abs_rho", None), ("F_rho", "edges_rho", "minima_rho", "barrier_rho")]
    for f, e, mk, bk in sets:
        F, e = np.array(r[f], float), np.asarray(r[e], float)
        m = FE.local_minima(F, F_sd=np.array(r[f + "_sd"], float))
        r[mk] = FE.bin_centres(e, m)
        if bk:
            r[bk] = FE.barrier_height(F, m)
    return r


def run_point(ctx: Context, seed: int, P: int) -> dict:
    """One (seed, P): the umbrella run and its profiles, or the saved point where its
    configuration matches (a killed run resumes from the points it saved)."""
    import jax
    import jax.numpy as jnp

    import copyjax as cj
    from copyjax import free_energy as FE
    from copyjax.results import atomic_savez, load_if_same, save_with_key

    a, L, V, act, linear, hyper, cfg = ctx.a, ctx.L, ctx.V, ctx.act, ctx.linear, ctx.hyper, ctx.cfg
    centers, edges, edges_rho, op_div = ctx.centers, ctx.edges, ctx.edges_rho, ctx.op_div
    spacing, kappa, coordinate, copy_start = ctx.spacing, ctx.kappa, ctx.coordinate, ctx.copy_start
    base = os.path.join(a.out, "points", f"seed{seed}_P{P}")
    # (the theory's profile over a_G is for uniform tokens; its P* takes any i.i.d. law)
    with_theory = not (linear or a.no_theory or a.tokens.kind != "uniform")
    old = load_if_same(base + ".json", cfg)  # the same configuration: reused
    if old is not None:
        if with_theory and "theory_F" not in old:  # a point saved before, or with --no-theory
            old.update(theory_profile(ctx, P))
            save_with_key(base + ".json", cfg, old)
        return refresh_minima(ctx, old)
    t0 = time.perf_counter()
    key = cj.point_key(seed, P)
    stats = cj.sampled_stats(jax.random.fold_in(key, 0), P, L, V, tokens=a.tokens).astype(jnp.float32)
    if linear:
        run = FE.sample_umbrella(jax.random.fold_in(key, 1), stats, hyper, act, centers, kappa=kappa,
                                 num_steps=a.steps, chains_per_window=a.chains_per_window,
                                 progress=not a.no_progress, desc=f"seed {seed} P={P}", coordinate=coordinate,
                                 copy_start=copy_start)
        rec = FE.recombine(run)
    else:
        pr, rec, run = FE.softmax_phase_weights(jax.random.fold_in(key, 1), stats, hyper, spacing=spacing,
                                                kappa=kappa, num_steps=a.steps,
                                                chains_per_window=a.chains_per_window,
                                                progress=not a.no_progress, desc=f"seed {seed} P={P}",
                                                mask=a.mask)
    out = {"config": cfg, "seed": seed, "P": P, "n_kept": rec.n_kept, "mbar_grad_norm": float(rec.result.grad_norm),
           **_overlap(rec, f"seed {seed} P={P}"), "acceptance_min": float(run.acceptance.min()),
           "edges": edges.tolist()}
    if linear:
        # phases = the sign families (g s < 0, g s > 0); F over |rho| (moments of |rho|) and over |c_G|
        pr = FE.profile(rec, run, 0, edges, 0.0, coordinate="abs_rho", phase="family", mean_of="abs_rho")
        pc = FE.profile(rec, run, 0, edges, 0.0, coordinate="op", phase="family", mean_of="op")
        # rho with its sign: above the crossover c_G stays > 0, so rho > 0 is the same-sign
        # family (g s > 0) and rho < 0 the opposite one; below it c_G's sign is noise
        px = FE.profile(rec, run, 0, edges_rho, 0.0, coordinate="xi", phase="family", mean_of="abs_rho")
        out.update({"family_weights": pr.weights.tolist(), "family_weights_sd": pr.weights_sd.tolist(),
                    "log_ratio": pr.log_ratio, "log_ratio_sd": pr.log_ratio_sd,
                    "mean_abs_rho": pr.mean, "mean_abs_rho_sd": pr.mean_sd,
                    "var_abs_rho": pr.var, "var_abs_rho_sd": pr.var_sd,
                    "mean": pc.mean, "mean_sd": pc.mean_sd, "var_cG": pc.var, "var_cG_sd": pc.var_sd,
                    "minima_abs_rho": pr.minima_centres, "minima_op": pc.minima_centres, "barrier": pc.barrier,
                    "F_abs_rho": _listed(pr.F), "F_abs_rho_sd": _listed(pr.F_sd),
                    "edges_rho": edges_rho.tolist(), "F_rho": _listed(px.F), "F_rho_sd": _listed(px.F_sd),
                    "minima_rho": px.minima_centres, "barrier_rho": px.barrier,
                    "F": _listed(pc.F), "F_sd": _listed(pc.F_sd)})
    else:
        out.update({"divide_op": op_div, "weights": pr.weights.tolist(), "weights_sd": pr.weights_sd.tolist(),
                    "log_ratio": pr.log_ratio, "log_ratio_sd": pr.log_ratio_sd, "mean": pr.mean,
                    "mean_sd": pr.mean_sd, "var": pr.var, "var_sd": pr.var_sd, "minima_op": pr.minima_centres,
                    "barrier": pr.barrier, "F": _listed(pr.F), "F_sd": _listed(pr.F_sd)})
        if with_theory:
            out.update(theory_profile(ctx, P))
    out["wall_s"] = time.perf_counter() - t0
    atomic_savez(base + ".npz", xi=run.xi, op=run.op, abs_rho=run.abs_rho, family=run.family, center=run.center,
                 acceptance=run.acceptance)
    save_with_key(base + ".json", cfg, out)
    return out


def print_point(ctx: Context, seed: int, P: int, r: dict) -> None:
    """The line a finished point prints."""
    if ctx.linear:
        w, ws = r["family_weights"], r["family_weights_sd"]
        print(f"  seed {seed} P={P:6d}: mean |rho| {r['mean_abs_rho']:.4f} +- {r['mean_abs_rho_sd']:.4f}, "
              f"Var |rho| {r['var_abs_rho']:.2e} +- {r['var_abs_rho_sd']:.1e}, mean |c_G| {r['mean']:.4f} +- "
              f"{r['mean_sd']:.4f}; minima at |c_G| {', '.join(f'{m:.3f}' for m in r['minima_op'])}, "
              f"|rho| {', '.join(f'{m:.3f}' for m in r['minima_abs_rho'])}, rho (c_G > 0) "
              f"{', '.join(f'{m:.3f}' for m in r['minima_rho'])}; family g s < 0: {w[0]:.3g} +- "
              f"{ws[0]:.2g}, log(same / opposite) {r['log_ratio']:.1f} +- {r['log_ratio_sd']:.1f} "
              f"({r['wall_s']:.0f} s)", flush=True)
    else:
        w, ws = r["weights"], r["weights_sd"]
        th = (f"; theory log(copy/pool) {r['theory_log_ratio']:+.2f}, minima at "
              f"{', '.join(f'{m:.3f}' for m in r['theory_minima_op'])}") if "theory_F" in r else ""
        print(f"  seed {seed} P={P:6d}: copy weight {w[1]:.3g} +- {ws[1]:.2g}, log(copy/pool) "
              f"{r['log_ratio']:+.2f} +- {r['log_ratio_sd']:.2f}, mean a_G {r['mean']:.4f} +- {r['mean_sd']:.4f}, "
              f"minima at a_G {', '.join(f'{m:.3f}' for m in r['minima_op'])}, barrier {r['barrier']:.1f} nats "
              f"({r['wall_s']:.0f} s){th}", flush=True)


def summarize_linear(ctx: Context, Ps, results, tp, theory_P, t_all) -> int:
    """The linear run's summary: where Var |rho| peaks per seed, summary.json and the figure."""
    import numpy as np

    from copyjax.plots import free_energy as plotting
    from copyjax.results import write_json

    a, cfg = ctx.a, ctx.cfg
    per_seed = {}
    for seed in a.seeds:
        rs = [results[(seed, P)] for P in Ps]
        var = np.array([r["var_abs_rho"] for r in rs])
        k = int(np.nanargmax(var))
        per_seed[seed] = {"P_susceptibility_peak": Ps[k], "var_abs_rho_peak": float(var[k]),
                          "n_minima_cG": [len(r["minima_op"]) for r in rs]}
        th = "not computed" if theory_P is None else f"{theory_P:.0f}"
        print(f"  seed {seed}: Var |rho| peaks at P = {Ps[k]} (grid point; theory onset P_1 = {th}); "
              f"minima of F(|c_G|) per P: {per_seed[seed]['n_minima_cG']}", flush=True)
    summary = {
        "config": cfg, "tokens": a.tokens.spec, "theory_P_onset": theory_P, "theory_P_cross": None if tp is None else tp.P_cross, "P": Ps, "seeds": a.seeds,
        "per_seed": {str(k): v for k, v in per_seed.items()},
        "points": [{k: results[(s_, P)][k] for k in ("seed", "P", "family_weights", "family_weights_sd", "log_ratio",
                                                        "log_ratio_sd", "mean_abs_rho", "mean_abs_rho_sd",
                                                        "var_abs_rho", "var_abs_rho_sd", "mean", "mean_sd",
                                                        "var_cG", "var_cG_sd", "minima_op", "minima_abs_rho",
                                                        "minima_rho", "barrier_rho")}
                   for s_ in a.seeds for P in Ps],
        "wall_s": time.perf_counter() - t_all,
    }
    write_json(os.path.join(a.out, "summary.json"), summary)
    plotting.free_energy_linear(summary, [results[(a.seeds[0], P)] for P in Ps], os.path.join(a.out, "free_energy"))
    print(f"summary.json and free_energy.png in {a.out} ({summary['wall_s']:.0f} s)")
    return 0


def summarize_softmax(ctx: Context, Ps, results, theory_P, t_all) -> int:
    """The softmax run's summary: P* and the barrier per seed, the theory's equal-mass point,
    summary.json and the figure."""
    import numpy as np

    from copyjax import free_energy as FE
    from copyjax.plots import free_energy as plotting
    from copyjax.results import write_json

    a, cfg = ctx.a, ctx.cfg
    per_seed = {}
    for seed in a.seeds:
        rs = [results[(seed, P)] for P in Ps]
        Pst, Pst_err = FE.equal_weight_point(np.array(Ps), np.array([r["log_ratio"] for r in rs]),
                                             np.array([r["log_ratio_sd"] for r in rs]))
        # barrier at P*: interpolated between the bracketing points (where both show two minima)
        bar = float("nan")
        if np.isfinite(Pst):
            i = int(np.searchsorted(Ps, Pst)) - 1
            b0, b1 = rs[i]["barrier"], rs[i + 1]["barrier"]
            wgt = (np.log(Pst) - np.log(Ps[i])) / (np.log(Ps[i + 1]) - np.log(Ps[i]))
            bar = float((1 - wgt) * b0 + wgt * b1)
        per_seed[seed] = {"P_star": Pst, "P_star_err": Pst_err, "barrier_at_P_star": bar}
        th = ("not computed" if a.no_theory else "none (no first-order transition)") if theory_P is None \
            else f"{theory_P:.0f}"
        print(f"  seed {seed}: P* = {Pst:.0f} +- {Pst_err:.0f} (theory, posterior form: {th}); "
              f"barrier at P* {bar:.1f} nats", flush=True)

    ps = np.array([v["P_star"] for v in per_seed.values()])
    # the theory's equal-mass point from its own profiles (interpolated like the exact one)
    th_lr = [results[(a.seeds[0], P)].get("theory_log_ratio") for P in Ps]
    theory_profile_P = (FE.equal_weight_point(np.array(Ps), np.array(th_lr, float), np.zeros(len(Ps)))[0]
                        if None not in th_lr else float("nan"))
    if np.isfinite(theory_profile_P):
        print(f"  theory profiles (posterior form, quadrature over the macrostate): log(copy/pool) crosses 0 at "
              f"P = {theory_profile_P:.0f}", flush=True)
    summary = {
        "config": cfg, "tokens": a.tokens.spec, "mask": a.mask, "theory_P_star": theory_P,
        "theory_profile_P_star": theory_profile_P if np.isfinite(theory_profile_P) else None, "P": Ps, "seeds": a.seeds,
        "P_star": float(np.nanmean(ps)) if np.isfinite(ps).any() else None,
        "P_star_err": (float(np.nanstd(ps, ddof=1) / np.sqrt(np.isfinite(ps).sum())) if np.isfinite(ps).sum() > 1
                       else per_seed[a.seeds[0]]["P_star_err"]),
        "barrier_at_P_star": (float(np.nanmean(bars)) if np.isfinite(bars := np.array(
            [v["barrier_at_P_star"] for v in per_seed.values()], float)).any() else None),
        "per_seed": {str(k): v for k, v in per_seed.items()},
        "method": "per-P", "n_umbrella_runs": len(a.seeds) * len(Ps),
        "points": [{k: results[(s, P)].get(k) for k in ("seed", "P", "weights", "weights_sd", "log_ratio",
                                                           "log_ratio_sd", "mean", "mean_sd", "minima_op", "barrier",
                                                           "theory_log_ratio", "theory_minima_op")}
                   for s in a.seeds for P in Ps],
        "wall_s": time.perf_counter() - t_all,
    }
    # seconds: the sampling and MBAR of every point, also those reused from an earlier run
    summary["seconds"] = float(sum(r.get("wall_s", 0.0) for r in results.values()))
    write_json(os.path.join(a.out, "summary.json"), summary)

    plotting.free_energy(summary, [results[(a.seeds[0], P)] for P in Ps], os.path.join(a.out, "free_energy"))
    print(f"P* = {summary['P_star']} +- {summary['P_star_err']}; summary.json and free_energy.png in {a.out} "
          f"({summary['wall_s']:.0f} s)")
    return 0


def main(argv=None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    check_options(ap, a)
    start_distributed(ap, a)  # before any other JAX call
    import jax

    jax.config.update("jax_enable_x64", True)
    enable_compile_cache(a)
    import copyjax as cj

    L, V, act = a.L, a.V, a.activation
    linear = act == "linear"
    hyper = cj.default_hyper(act, L)
    if a.no_theory and not a.P and a.scan is None:
        ap.error("--no-theory needs --P (the default P grid is built around the theory's transition)")
    tp = None if a.no_theory else cj.transition_points(L, V, act, hyper, "posterior", tokens=a.tokens)
    theory_P = None if tp is None else (tp.P_onset if linear else tp.P_star)
    if a.scan is not None:
        return scan(a, L, V, hyper, tp, ap)
    if a.P:
        Ps = sorted(set(a.P))
    else:
        if theory_P is None:
            sys.exit(f"the theory has no first-order transition at L={L}, V={V}: give --P")
        grid = (0.6, 0.8, 1.0, 1.1, 1.2, 1.35, 1.5, 2.0, 3.0, 5.0) if linear else (0.85, 0.93, 1.0, 1.08, 1.2)
        Ps = sorted({int(round(theory_P * f)) for f in grid})
    ctx = context(a, hyper)
    os.makedirs(os.path.join(a.out, "points"), exist_ok=True)
    name = "onset P_1" if linear else "P*"
    print(f"copyjax free energy, L={L}, V={V}, {act}, tokens {a.tokens.spec}, mask {a.mask}: {ctx.centers.size} "
          f"windows on {ctx.coordinate} x {a.chains_per_window} chains, kappa={ctx.kappa}, {a.steps} steps; theory "
          f"(posterior form) {name} = {theory_P}; P = {Ps}; seeds {a.seeds}", flush=True)
    t_all = time.perf_counter()
    results = {}
    for seed in a.seeds:
        for P in Ps:
            results[(seed, P)] = run_point(ctx, seed, P)
            print_point(ctx, seed, P, results[(seed, P)])
    if linear:
        return summarize_linear(ctx, Ps, results, tp, theory_P, t_all)
    return summarize_softmax(ctx, Ps, results, theory_P, t_all)


def scan(a, L: int, V: int, hyper, tp, ap) -> int:
    """--scan: one tempered umbrella run per seed, MBAR over (window, temper), the log-odds and
    the mean a_G across [P_lo, P_hi], P* (MBAR error, bootstrap), barrier, spinodals."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import copyjax as cj
    from copyjax import free_energy as FE
    from copyjax.plots import free_energy as plotting
    from copyjax.results import load_if_same, save_with_key, write_json

    theory_P = None if tp is None else tp.P_star
    if a.scan:
        P_lo, P_hi = map(float, a.scan)
    elif tp is None or tp.P_star is None:
        ap.error(f"the theory has no first-order transition at L={L}, V={V}: give --scan P_lo P_hi")
    else:
        P_lo, P_hi = 0.97 * tp.P_spinodal_low, 1.03 * tp.P_spinodal_high
    P0 = a.P0 or (int(round(theory_P)) if theory_P and P_lo <= theory_P <= P_hi else int(round(np.sqrt(P_lo * P_hi))))
    spacing, kappa = a.spacing or 0.09, a.kappa or 400.0
    temps, t_grid = FE.scan_tempers(P0, P_lo, P_hi, a.temper_spacing, a.scan_points)
    win = FE.softmax_windows(L, spacing, a.mask)
    cfg = dict(L=L, V=V, activation="softmax", spacing=spacing, kappa=kappa, steps=a.steps,
               chains_per_window=a.chains_per_window, n_windows=int(win.centers.size), P0=P0, P_lo=P_lo, P_hi=P_hi,
               temper_spacing=a.temper_spacing, n_temps=int(temps.size), n_targets=int(t_grid.size),
               bootstrap=a.bootstrap)
    if a.tokens.kind != "uniform":
        cfg["tokens"] = a.tokens.spec
    if a.mask != "full":
        cfg["mask"] = a.mask
    os.makedirs(os.path.join(a.out, "points"), exist_ok=True)
    print(f"copyjax free energy scan, L={L}, V={V}, softmax, tokens {a.tokens.spec}, mask {a.mask}: P in [{P_lo:.0f}, {P_hi:.0f}] from data of P0 = {P0} "
          f"sequences; {temps.size} tempers x {win.centers.size} windows x {a.chains_per_window} chains, "
          f"{a.steps} steps, kappa={kappa}; {t_grid.size} P values; theory (posterior form) P* = {theory_P}; "
          f"seeds {a.seeds}", flush=True)
    t_all = time.perf_counter()
    per_seed = {}
    for seed in a.seeds:
        path = os.path.join(a.out, "points", f"scan_seed{seed}.json")
        if (old := load_if_same(path, cfg)) is not None:
            per_seed[seed] = old
        else:
            t0 = time.perf_counter()
            key = cj.point_key(seed, P0)  # the per-P run's data at P = P0
            stats = cj.sampled_stats(jax.random.fold_in(key, 0), P0, L, V, tokens=a.tokens).astype(jnp.float32)
            sc, rec, run = FE.softmax_scan(jax.random.fold_in(key, 1), stats, hyper, P_lo, P_hi,
                                           temper_spacing=a.temper_spacing, n_grid=a.scan_points, spacing=spacing,
                                           kappa=kappa, num_steps=a.steps, chains_per_window=a.chains_per_window,
                                           n_boot=a.bootstrap, progress=not a.no_progress, desc=f"seed {seed} scan",
                                           mask=a.mask)
            fin = lambda x: None if x is None or not np.isfinite(x) else float(x)
            per_seed[seed] = {
                "config": cfg, "seed": seed, "P0": P0, "temps": sc.temps.tolist(), "P": sc.P.tolist(),
                "log_ratio": _listed(sc.log_ratio), "log_ratio_sd": _listed(sc.log_ratio_sd),
                "mean": _listed(sc.mean), "mean_sd": _listed(sc.mean_sd), "copy_weight": _listed(sc.copy_weight),
                "copy_weight_sd": _listed(sc.copy_weight_sd), "barrier": _listed(sc.barrier),
                "n_minima": sc.n_minima.tolist(), "P_star": fin(sc.P_star), "P_star_err": fin(sc.P_star_err),
                "P_star_boot_sd": fin(sc.P_star_boot_sd), "P_star_boot": _listed(sc.P_star_boot),
                "barrier_at_P_star": fin(sc.barrier_at_P_star), "spinodal_low": sc.spinodal_low,
                "spinodal_high": sc.spinodal_high, "n_kept": rec.n_kept,
                "mbar_grad_norm": float(rec.result.grad_norm), **_overlap(rec, f"seed {seed} scan"),
                "acceptance_min": float(run.acceptance.min()),
                # profiles at the sampled tempers, for the figure
                "profiles": [{"P": float(p.P), "edges": p.edges.tolist(), "F": _listed(p.F), "F_sd": _listed(p.F_sd),
                              "weights": p.weights.tolist(), "log_ratio": p.log_ratio, "log_ratio_sd": p.log_ratio_sd}
                             for p in sc.profiles if np.any(np.isclose(p.t, sc.temps))],
                "wall_s": time.perf_counter() - t0}
            save_with_key(path, cfg, per_seed[seed])
        r = per_seed[seed]
        f = lambda x, fmt=".0f": "none" if x is None else format(x, fmt)
        print(f"  seed {seed}: P* = {f(r['P_star'])} +- {f(r['P_star_err'])} (MBAR), bootstrap sd "
              f"{f(r['P_star_boot_sd'])}; barrier at P* {f(r['barrier_at_P_star'], '.1f')} nats; two minima from "
              f"P = {f(r['spinodal_low'])} to {f(r['spinodal_high'])} (none: the scan's edge); "
              f"{r['wall_s']:.0f} s", flush=True)
    ps = np.array([np.nan if r["P_star"] is None else r["P_star"] for r in per_seed.values()], float)
    errs = [max(r["P_star_err"] or 0.0, r["P_star_boot_sd"] or 0.0) for r in per_seed.values()]
    bars = np.array([np.nan if r["barrier_at_P_star"] is None else r["barrier_at_P_star"] for r in per_seed.values()])
    n_ok = int(np.isfinite(ps).sum())
    summary = {
        "config": cfg, "tokens": a.tokens.spec, "mask": a.mask, "method": "scan", "n_umbrella_runs": len(a.seeds), "theory_P_star": theory_P,
        "P_star": float(np.nanmean(ps)) if n_ok else None,
        # several seeds: the spread over data sets; one: the larger of MBAR's and the bootstrap's error
        "P_star_err": float(np.nanstd(ps, ddof=1) / np.sqrt(n_ok)) if n_ok > 1 else (errs[0] if n_ok else None),
        "barrier_at_P_star": float(np.nanmean(bars)) if np.isfinite(bars).any() else None,
        "seeds": a.seeds, "per_seed": {str(s): {k: v for k, v in r.items() if k != "profiles"} for s, r in per_seed.items()},
        "seconds": float(sum(r["wall_s"] for r in per_seed.values())), "wall_s": time.perf_counter() - t_all,
    }
    summary["scan"] = {str(s): {k: r[k] for k in ("P", "log_ratio", "log_ratio_sd")} for s, r in per_seed.items()}
    write_json(os.path.join(a.out, "summary.json"), summary)
    plotting.free_energy(summary, per_seed[a.seeds[0]]["profiles"], os.path.join(a.out, "free_energy"))
    print(f"P* = {summary['P_star']} +- {summary['P_star_err']} (theory, posterior form: {theory_P}); "
          f"summary.json and free_energy.png in {a.out} ({summary['seconds']:.0f} s sampling + MBAR)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
