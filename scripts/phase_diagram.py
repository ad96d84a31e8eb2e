"""Phase diagram of copy-head emergence: theory, SGLD on (W, G) and Adam on one P grid.

    python scripts/phase_diagram.py --L 64 --V 32            # default, ~minutes on 2 CPU cores
    python scripts/phase_diagram.py --L 16 --V 8 --quick     # seconds
    python scripts/phase_diagram.py --L 64 --V 32 --full     # thousands of chains (GPU)
    python scripts/phase_diagram.py --L 32 --V 32 --activation softmax --mask causal  # causal mask

Writes into --out: points/ (one file per (activation, P), written atomically; a killed run
resumes from them), results.json, results.npz, summary.csv and the figures (PNG + PDF).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

from _cli import (SGLD_STARTS, add_compile_cache_option, add_distributed_options, add_stack_options, enable_compile_cache,
                  mask_arg, nonneg_int, positive_float, positive_int, stack_mask, start_distributed, token_law_arg)

DEFAULT_FREE_ENERGY_STEPS = 300  # umbrella steps per window: ~20 s for the one window point at L = 64

PRESETS = {
    "default": dict(chains=8, steps=200, adam_seeds=4, adam_steps=300, n_P=6, op_chains=16, op_draws=50,
                    exact_chains=16, exact_steps=None),
    "quick": dict(chains=4, steps=200, adam_seeds=2, adam_steps=300, n_P=4, op_chains=4, op_draws=20,
                  exact_chains=8, exact_steps=300),
    "full": dict(chains=2048, steps=20000, adam_seeds=256, adam_steps=5000, n_P=16, op_chains=1024,
                 op_draws=500, exact_chains=1024, exact_steps=3000),
}


def write_netcdf(arr: dict, base: str, attrs: dict) -> None:
    """The point's chains as ArviZ netCDF files, one per sampler family present
    (``copyjax.point.chains``: ``{base}_exact.nc``, ``{base}_op.nc``, ``{base}_sgld_{start}.nc``)."""
    from copyjax import io, point

    for family, draws in point.chains(arr).items():
        io.write_netcdf(io.to_inference_data(draws, attrs=attrs | {"sampler": family}), f"{base}_{family}.nc")


def parser():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--L", type=positive_int("--L"), default=64, help="sequence length (>= 2)")
    ap.add_argument("--V", type=positive_int("--V"), default=32, help="vocabulary size (>= 2)")
    ap.add_argument("--activation", choices=["softmax", "linear", "both"], default="both")
    ap.add_argument("--tokens", type=token_law_arg, default="uniform",
                    help="token law of the data: uniform or zipf:S (i.i.d.; copyjax.tokens)")
    ap.add_argument("--mask", type=mask_arg, default="full",
                    help="attention mask (copyjax.masks): full (cyclic, the paper's), causal (keys m <= l, no loss at "
                         "position 0) or window:W (keys l-W .. l); every method runs under it, the reduced theory's "
                         "lines and its NUTS only under full (the LLC is the full mask's)")
    add_stack_options(ap)
    ap.add_argument("--P-min", type=positive_float("--P-min"), help="smallest P (default: from theory)")
    ap.add_argument("--P-max", type=positive_float("--P-max"), help="largest P (default: from theory)")
    ap.add_argument("--n-P", type=positive_int("--n-P"), help="number of log-spaced P values")
    ap.add_argument("--P", type=positive_int("--P"), nargs="+", help="explicit P values (overrides the range)")
    ap.add_argument("--chains", type=nonneg_int("--chains"), help="SGLD chains per start (0: no SGLD)")
    ap.add_argument("--steps", type=positive_int("--steps"), help="SGLD steps per chain (half are burn-in)")
    ap.add_argument("--step-size", type=positive_float("--step-size"),
                    help="SGLD step size (default: automatic, 0.05 / largest curvature in W)")
    add_compile_cache_option(ap)
    add_distributed_options(ap)
    ap.add_argument("--netcdf", action="store_true",
                    help="also write each point's chains as ArviZ netCDF (points/<activation>_<i>_<sampler>.nc; "
                         "needs pip install 'copyjax[arviz]')")
    ap.add_argument("--batch", type=nonneg_int("--batch"), default=0,
                    help="SGLD minibatch of sequences (0: exact full-batch gradient via statistics, which "
                         "costs less per step than any minibatch above 22 sequences: docs/benchmarks.md)")
    ap.add_argument("--batch-layout", choices=["independent", "shared"], default="independent",
                    help="with --batch: a minibatch per chain and step (independent), or one per step shared "
                         "by all chains (its counts formed once: ~9x the chain-steps/s at 64 chains, but the "
                         "chains share gradient noise, which narrows R-hat and between-chain errors)")
    ap.add_argument("--op-chains", type=nonneg_int("--op-chains"),
                    help="NUTS chains on the theory's posterior in order-parameter space (0: none)")
    ap.add_argument("--op-draws", type=positive_int("--op-draws"), help="draws per NUTS chain")
    ap.add_argument("--exact-chains", type=nonneg_int("--exact-chains"),
                    help="chains of adaptive MALA on the exact marginal posterior of G, half from the "
                         "prior, half from the copy pattern (0: none; at least 4 otherwise)")
    ap.add_argument("--exact-steps", type=positive_int("--exact-steps"),
                    help="MALA steps per exact chain (a third is burn-in with per-chain step adaptation; "
                         "default: 900 softmax, 1800 linear, whose copy direction mixes slower)")
    ap.add_argument("--exact-warmup", type=nonneg_int("--exact-warmup"),
                    help="Adam steps on -log p(G) before the MALA steps (default: 100 softmax, 0 linear)")
    ap.add_argument("--no-free-energy", action="store_true",
                    help="skip the free energy: by default, at softmax points where the exact chains' start "
                         "families disagree (inside the coexistence window), the two phases are weighed by "
                         "umbrella sampling + MBAR on the same data (copyjax.free_energy), and the posterior's "
                         "mean a_G and phase weights are reported from it")
    ap.add_argument("--free-energy", action="store_true", help=argparse.SUPPRESS)  # the default since 0.2.0 (kept so that old command lines run)
    ap.add_argument("--free-energy-steps", type=positive_int("--free-energy-steps"),
                    help="MALA steps per umbrella window (default 300: about 1 min per such point at L = 64 "
                         "on 2 cores; 900 for errors a third smaller on the log-odds)")
    ap.add_argument("--exact-map-steps", type=nonneg_int("--exact-map-steps"), default=0,
                    help="Adam steps on -log p(G | data) from a prior and a copy start: the exact posterior's "
                         "MAP of G (copyjax.point.exact_map; 0: none)")
    ap.add_argument("--llc-steps", type=nonneg_int("--llc-steps"), default=0,
                    help="MALA steps of the exact local learning coefficient at each phase's minimum (Adam on "
                         "the joint MAP; copyjax.point.llc_column, docs/llc.md; about 1 min per point at L = 32; "
                         "0: none)")
    ap.add_argument("--llc-gamma", type=positive_float("--llc-gamma"), default=100.0,
                    help="the LLC's localisation gamma (with --llc-steps)")
    ap.add_argument("--sgld-starts", nargs="+", choices=SGLD_STARTS,
                    help="where SGLD chains start: prior draws (relaxation from the prior), exact "
                         "joint draws of (W, G) (needs exact chains), the copy pattern (hysteresis); "
                         "default: prior and exact (prior alone with --exact-chains 0)")
    ap.add_argument("--adam-seeds", type=nonneg_int("--adam-seeds"), help="Adam runs per start (0: none)")
    ap.add_argument("--adam-steps", type=positive_int("--adam-steps"))
    ap.add_argument("--adam-lr", type=positive_float("--adam-lr"), default=2e-2)
    ap.add_argument("--beta", type=positive_float("--beta"), default=1.0)
    ap.add_argument("--sigma-w2", type=positive_float("--sigma-w2"), default=1.0)
    ap.add_argument("--sigma-g2", type=positive_float("--sigma-g2"),
                    help="prior variance of G (default: 1 softmax, 1/L linear)")
    ap.add_argument("--seed", type=nonneg_int("--seed"), default=0)
    ap.add_argument("--out", default=None, help="output folder (default: results/L{L}_V{V})")
    ap.add_argument("--overwrite", action="store_true", help="replace an --out holding another configuration")
    ap.add_argument("--quick", action="store_true", help="tiny preset (seconds)")
    ap.add_argument("--full", action="store_true", help="GPU preset (thousands of chains)")
    ap.add_argument("--no-progress", action="store_true")
    return ap


def build_config(a, ap):
    if a.quick and a.full:
        ap.error("--quick and --full contradict each other; give at most one")
    if a.L < 2:
        ap.error(f"--L must be >= 2, got {a.L}")
    if a.V < 2:
        ap.error(f"--V must be >= 2, got {a.V}")
    preset = PRESETS["quick" if a.quick else "full" if a.full else "default"]
    pick = lambda v, k: preset[k] if v is None else v
    acts = ["softmax", "linear"] if a.activation == "both" else [a.activation]
    exact_chains, exact_steps = pick(a.exact_chains, "exact_chains"), pick(a.exact_steps, "exact_steps")
    if exact_chains and exact_chains < 4:
        ap.error(f"--exact-chains must be 0 or >= 4 (two start families of >= 2 chains), got {exact_chains}")
    if exact_chains and exact_steps is not None and exact_steps < 30:
        ap.error(f"--exact-steps must be >= 30 (a third is burn-in, the rest gives the draws), got {exact_steps}")
    sgld_starts = a.sgld_starts or (["prior", "exact"] if exact_chains else ["prior"])
    if "exact" in sgld_starts and not exact_chains:
        ap.error("--sgld-starts exact needs exact-posterior chains (--exact-chains > 0)")
    if a.P_min and a.P_max and a.P_min >= a.P_max:
        ap.error(f"--P-min ({a.P_min}) must be smaller than --P-max ({a.P_max})")
    free_energy = exact_chains > 0 and not a.no_free_energy  # the exact chains find the window
    if a.free_energy and not exact_chains:
        ap.error("--free-energy needs exact-posterior chains (--exact-chains > 0): they find the window")
    fe_steps = DEFAULT_FREE_ENERGY_STEPS if a.free_energy_steps is None else a.free_energy_steps
    if free_energy and fe_steps < 30:
        ap.error(f"--free-energy-steps must be >= 30, got {fe_steps}")
    cfg = {
        "L": a.L, "V": a.V, "activations": acts, "chains": pick(a.chains, "chains"),
        "steps": pick(a.steps, "steps"), "step_size": a.step_size, "batch": a.batch,
        "adam_seeds": pick(a.adam_seeds, "adam_seeds"), "adam_steps": pick(a.adam_steps, "adam_steps"),
        "op_chains": pick(a.op_chains, "op_chains"), "op_draws": pick(a.op_draws, "op_draws"),
        "exact_chains": exact_chains, "exact_steps": exact_steps,
        "exact_warmup": a.exact_warmup, "sgld_starts": list(dict.fromkeys(sgld_starts)),
        "adam_lr": a.adam_lr, "adam_rtol": 1e-3, "beta": a.beta, "sigma_w2": a.sigma_w2,
        "sigma_g2": {"softmax": a.sigma_g2 or 1.0, "linear": a.sigma_g2 or 1.0 / a.L},
        "seed": a.seed, "test_P": 2000, "n_P": pick(a.n_P, "n_P"),
        "P_explicit": sorted(set(a.P)) if a.P else None, "P_min": a.P_min, "P_max": a.P_max,
    }
    if a.batch and a.batch_layout != "independent":  # only when asked (earlier configurations keep their hash)
        cfg["batch_layout"] = a.batch_layout
    if a.tokens.kind != "uniform":  # likewise
        if not a.tokens.iid:
            ap.error(f"--tokens {a.tokens.spec}: the main job's theory lines and NUTS need i.i.d. tokens (uniform, "
                     "zipf:S); a Markov law: scripts/free_energy.py --tokens and scripts/transitions.py --forms map")
        cfg["tokens"] = a.tokens.spec
    mask = stack_mask(ap, a)  # an architecture over the mask (copyjax.masks.stack)
    if mask != a.mask and a.llc_steps:
        ap.error("--llc-steps: the exact LLC is one layer's on the shift-1 target; drop --layers / --shift")
    if mask != "full":  # likewise
        cfg.update(op_chains=0, mask=mask)  # NUTS in order-parameter space samples the cyclic theory
    if free_energy:
        cfg["free_energy"] = {"steps": fe_steps}
    if a.exact_map_steps:  # likewise
        cfg["exact_map_steps"] = a.exact_map_steps
    if a.llc_steps:  # likewise
        if a.llc_steps < 30:
            ap.error(f"--llc-steps must be 0 or >= 30 (a third is burn-in), got {a.llc_steps}")
        cfg["llc_steps"], cfg["llc_gamma"] = a.llc_steps, a.llc_gamma
    return cfg


def theory_grid(Ps, n=60):
    """P values for the theory lines of the figures: (n,), spanning the sampled grid ``Ps``; a
    one-point grid gets a factor 2 either side (a run of one P, as benchmarks/gpu.sh makes)."""
    import numpy as np

    lo, hi = float(Ps[0]), float(Ps[-1])
    if lo == hi:
        lo, hi = lo / 2, hi * 2
    return np.geomspace(lo, hi, n)


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    cfg = build_config(a, ap)
    if a.netcdf:
        import importlib.util

        if importlib.util.find_spec("arviz") is None:
            ap.error("--netcdf needs ArviZ: pip install 'copyjax[arviz]'")
    out = a.out or os.path.join("results", f"L{a.L}_V{a.V}")
    try:
        os.makedirs(os.path.join(out, "points"), exist_ok=True)
        probe = os.path.join(out, ".write-test")
        open(probe, "w").close()
        os.unlink(probe)
    except OSError as e:
        ap.error(f"--out {out!r} is not writable: {e.strerror}")

    start_distributed(ap, a)  # before any other JAX call; every process runs the same sweep
    import jax
    import numpy as np

    jax.config.update("jax_enable_x64", True)  # theory in float64; chains stay float32
    enable_compile_cache(a)
    import copyjax as cj
    from copyjax import point as PT, results
    from copyjax.point import figures

    cfg_file = os.path.join(out, "config.json")
    if os.path.exists(cfg_file):
        old = results.read_json(cfg_file)
        if old != cfg and not a.overwrite:
            print(f"error: --out {out!r} holds results of a different configuration "
                  f"(hash {results.config_hash(old)} vs {results.config_hash(cfg)}); use another --out or pass "
                  f"--overwrite", file=sys.stderr)
            return 2
        if old != cfg and results.writes_here():
            for fn in os.listdir(os.path.join(out, "points")):
                os.unlink(os.path.join(out, "points", fn))
    results.write_json(cfg_file, cfg)

    if cfg["batch"]:
        from copyjax.minibatch import EXACT_CHEAPER_ABOVE, exact_is_cheaper

        if exact_is_cheaper(cfg["batch"]):
            print(f"note: the exact gradient (--batch 0, the default) costs less per SGLD step than a "
                  f"minibatch of {cfg['batch']} sequences (above {EXACT_CHEAPER_ABOVE}: cost model in "
                  f"docs/benchmarks.md); running minibatch SGLD as asked", flush=True)
    t_start = time.perf_counter()
    transitions = {}
    for act in cfg["activations"]:
        h = cj.Hyper(cfg["beta"], cfg["sigma_w2"], cfg["sigma_g2"][act])
        transitions[act] = cj.transition_points(a.L, a.V, act, h, "map", tokens=a.tokens)
    if cfg["P_explicit"]:
        Ps = np.array(cfg["P_explicit"], float)
    else:
        marks = [v for t in transitions.values() for k in ("P_star", "P_spinodal_low",
                 "P_spinodal_high", "P_onset", "P_cross", "P_steepest") if (v := getattr(t, k))]
        lo = cfg["P_min"] or 0.4 * min(marks)
        hi = cfg["P_max"] or 2.0 * max(marks)
        Ps = np.geomspace(lo, hi, cfg["n_P"])
    Ps = np.unique(np.maximum(1, np.round(Ps)).astype(int))
    if Ps.size == 0:
        ap.error("the P grid is empty")

    from tqdm.auto import tqdm

    points, arrays = [], {}
    jobs = [(act, int(P), i) for act in cfg["activations"] for i, P in enumerate(Ps)]
    reused = 0
    for act, P, i in tqdm(jobs, desc="phase diagram", unit="point", disable=a.no_progress):
        s, arr, was = PT.load_or_run_point(cfg, out, act, P, i, progress=not a.no_progress)
        reused += was
        points.append(s)
        arrays[(act, P)] = arr
        if a.netcdf:
            write_netcdf(arr, results.point_path(out, act, i), {"activation": act, "P": P, "L": a.L, "V": a.V})

    theory = {}
    masked = cfg.get("mask", "full") != "full"
    for act in cfg["activations"] if not masked else ():  # the reduced theory is the full mask's
        h = cj.Hyper(cfg["beta"], cfg["sigma_w2"], cfg["sigma_g2"][act])
        fine = theory_grid(Ps)
        theory[act] = {k: (v.tolist() if hasattr(v, "tolist") else v)
                       for k, v in cj.theory_curve(fine, a.L, a.V, act, h, "map", tokens=a.tokens).items()}
        # what Adam maximises: the joint posterior of (W, G) (no Occam factor)
        theory[act]["joint_map"] = {k: (v.tolist() if hasattr(v, "tolist") else v)
                                    for k, v in cj.theory_curve(fine, a.L, a.V, act, h, "joint_map",
                                                                tokens=a.tokens).items()
                                    if k != "meta"}
        transitions[act] = transitions[act].as_dict() | {"joint_map": {
            k: v for k, v in cj.transition_points(a.L, a.V, act, h, "joint_map", tokens=a.tokens).as_dict().items()
            if k.startswith("P_")}}

    if masked:  # the full mask's transitions placed the default P grid; they are not this model's
        transitions = {act: {} for act in cfg["activations"]}
    res = {"config": cfg, "activations": cfg["activations"], "P_grid": Ps.tolist(),
           "transitions": transitions, "theory": theory, "points": [p.to_json() for p in points],
           "versions": results.package_versions(results.RECORDED_PACKAGES),
           "wall_s_total": time.perf_counter() - t_start, "points_reused": reused}
    results.write_json(os.path.join(out, "results.json"), res)
    flat = {f"{act}_P{P}_{k}": v for (act, P), arr in arrays.items() for k, v in arr.items()}
    results.atomic_savez(os.path.join(out, "results.npz"), **flat)
    results.write_csv(os.path.join(out, "summary.csv"), PT.csv_columns(), [PT.csv_row(p) for p in points])
    # the figures read the typed points (copyjax.point.Point)
    figs = figures.figures(res | {"points": points}, arrays, out)

    law = "" if a.tokens.kind == "uniform" else f", tokens {a.tokens.spec}"
    law += f", mask {cfg['mask']} (no reduced theory)" if masked else ""
    print(f"\ncopyjax phase diagram, L={a.L}, V={a.V}{law}: {len(points)} points "
          f"({reused} reused) in {res['wall_s_total']:.0f} s -> {out}")
    for act in cfg["activations"]:
        t = transitions[act]
        if not masked:  # (another mask's model has no theory lines)
            if act == "softmax":
                print(f"  softmax theory (MAP): P* = {t['P_star'] or float('nan'):.0f}, spinodals "
                      f"{t['P_spinodal_low'] or float('nan'):.0f}-{t['P_spinodal_high'] or float('nan'):.0f}")
            else:
                print(f"  linear theory (MAP): P_1 = {t['P_onset']:.0f}, P_x = {t['P_cross'] or float('nan'):.0f}")
            print("  joint MAP of (W, G), what Adam maximises: " + ", ".join(
                f"{k} = {v:.0f}" for k, v in t["joint_map"].items() if isinstance(v, float)))
        for p in [q for q in points if q.activation == act]:
            print("    " + PT.point_line(p))
    print("  figures: " + ", ".join(os.path.basename(f) for f in figs if f.endswith(".png")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
