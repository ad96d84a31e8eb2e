"""One point of the phase diagram: theory, SGLD chains and an Adam ensemble at (activation, P).

Results are written one file per point, atomically (``copyjax.results``), so an interrupted
sweep resumes with the finished points reused.
"""
from __future__ import annotations

import dataclasses
import time
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import chains, exact_posterior, network, results, samplers, training
from copyjax.data import sampled_stats, stats_size, streamed_tokens
from copyjax.hyper import Hyper
from copyjax.model import attention, log_likelihood_from_stats
from copyjax.order import sector_order_parameters
from copyjax.problem import Problem
from copyjax.schema import (
    OP_OBSERVABLES,
    SGLD_STARTS,
    AdamSummary,
    Estimate,
    PhaseWeights,
    PointSummary,
    SGLDSummary,
    TheoryForm,
    TheoryOP,
)

OBS_KEYS = ("c1", "cG", "abs_rho", "family", "coverage", "loss", "logpost")
# SGLD chains start from the prior (relaxation), exact joint draws (drift from the
# posterior) or the copy pattern (hysteresis): schema.SGLD_STARTS, whose index keys their
# random streams
# what the exact-posterior summary covers (a_1 + a_G = 1 for softmax: no abs_rho)
EXACT_KEYS = {"softmax": ("c1", "cG", "loss"), "linear": ("c1", "cG", "abs_rho", "loss")}


def theory_op(m, L: int, activation: str, **extra) -> TheoryOP:
    """A theory minimum's order parameters in the reported convention
    (``order.sector_order_parameters`` for linear attention); ``extra``: its loss or action."""
    if activation == "linear":
        sec = sector_order_parameters(m.c1, m.cG, L)
        return TheoryOP(float(sec["c1"]), float(sec["cG"]), float(sec["abs_rho"]), **extra)
    return TheoryOP(float(m.c1), float(m.cG), float(m.c1 + m.cG), **extra)


# MALA steps per exact chain when not given: linear attention's copy direction mixes slower.
# Few long chains rather than many short ones: the cost of a step hardly depends on the
# number of chains up to ~64 on CPU (the pass over the statistics dominates), and split
# R-hat of chains with n effective draws sits near 1 + 1/n even for a perfect sampler
# (32 chains x 600 steps: R-hat 1.06-1.08 at softmax P = 933, 1643 with nested R-hat 1.000)
DEFAULT_EXACT_STEPS = {"softmax": 900, "linear": 1800}


def exact_thin(steps: int) -> int:
    """Thinning of the exact chains: about 30 recorded draws per chain after the burn-in."""
    return max(1, (steps - steps // 3) // 30)


def auto_step_size(P: float, V: int, hyper: Hyper, scale: float = 0.05) -> float:
    """``scale / lambda_W``: lambda_W = beta P / V + V / sigma_w2 is the largest curvature of
    -log p in W (reached on span{U, S}), the stiffest direction of the posterior."""
    return scale / (hyper.beta * P / V + V / hyper.sigma_w2)


def _test_loss(final, stats_test, hyper, activation) -> np.ndarray:
    return np.asarray(_test_loss_jit(final, stats_test, hyper=hyper, activation=activation))


@partial(jax.jit, static_argnames=("hyper", "activation"))
def _test_loss_jit(final, stats_test, *, hyper, activation):
    """Per-sequence loss of every network of ``final`` on fresh statistics (compiled once
    per sweep: the statistics are an argument)."""
    P = stats_size(stats_test)

    def one(p):
        A = attention(p.G, activation)
        return -log_likelihood_from_stats(p.W, A, stats_test, hyper.beta) / (hyper.beta * P)

    return jax.vmap(one)(final)


def exact_joint_starts(key, run, n: int, stats, hyper, activation: str):
    """``n`` exact joint draws of (W, G) as SGLD starts: G from the final states of the
    exact-posterior chains that moved (cycled), W from its Gaussian conditional given G
    (``network.sample_w_posterior``). Float32, like the SGLD chains."""
    ok = np.flatnonzero(~run.stuck & ~np.asarray(run.samples.nonfinite))
    ok = ok if ok.size else np.arange(len(run.stuck))
    G = jnp.asarray(np.asarray(run.samples.final.position)[ok[np.arange(n) % ok.size]])
    A = attention(G.astype(stats.dtype), activation)
    W = jax.vmap(lambda k, a: network.sample_w_posterior(k, a, stats, hyper))(jax.random.split(key, n), A)
    return network.Params(W.astype(jnp.float32), G.astype(jnp.float32))


def run_point(cfg: dict, activation: str, P: int, index: int, progress: bool = False) -> tuple[PointSummary, dict]:
    """Everything at one (activation, P). Returns (``schema.PointSummary``, arrays dict)."""
    t0 = time.perf_counter()
    L, V = cfg["L"], cfg["V"]
    hyper = Hyper(cfg["beta"], cfg["sigma_w2"], cfg["sigma_g2"][activation])
    key = jax.random.fold_in(jax.random.key(cfg["seed"]), index)
    k_data, k_test, k_chain, k_adam, k_init = jax.random.split(key, 5)
    stats = sampled_stats(k_data, P, L, V).astype(jnp.float32)
    stats_test = sampled_stats(k_test, cfg["test_P"], L, V).astype(jnp.float32)
    summary = {"activation": activation, "P": int(P)}
    arrays = {}

    # theory at this P (expected statistics)
    prob = Problem(L, V, activation, hyper)
    for form in ("map", "posterior"):
        ms = prob.minima(P, form)
        best = min(ms, key=lambda m: m.action)
        summary[f"theory_{form}"] = TheoryForm(
            theory_op(best, L, activation, loss=prob.minimum_loss(best, P, form)),
            [theory_op(m, L, activation, action=m.action) for m in ms],
            # two minima: inside this form's coexistence window, where the exact chains'
            # start families are expected to disagree
            in_window=len(ms) > 1)

    # the joint MAP of (W, G): what Adam converges to (docs/theory.md, joint_map form)
    best = prob.global_minimum(P, "joint_map")
    summary["theory_joint_map"] = theory_op(best, L, activation, loss=prob.minimum_loss(best, P, "joint_map"))
    clock = {"theory": time.perf_counter() - t0}
    t1 = time.perf_counter()
    # the posterior form sampled in order-parameter space (NUTS, copyjax.op_posterior)
    if cfg.get("op_chains"):
        from copyjax import op_posterior

        s = prob.sample_op_posterior(jax.random.fold_in(key, 101), float(P), n_chains=cfg["op_chains"],
                                     n_draws=cfg["op_draws"], n_warmup=max(25, cfg["op_draws"] // 2))
        # the observables the exact posterior reports (softmax: no abs_rho)
        summary["theory_posterior_sampled"] = dataclasses.replace(
            op_posterior.op_summary(s), **{k: None for k in OP_OBSERVABLES if k not in EXACT_KEYS[activation]})
        for k in EXACT_KEYS[activation]:
            arrays[f"op_{k}"] = s.draws[k]
    clock["op_nuts"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    # the exact marginal posterior of G on this point's data (adaptive MALA on all L^2 entries)
    run = None
    if cfg.get("exact_chains"):
        steps = cfg["exact_steps"] or DEFAULT_EXACT_STEPS[activation]
        run = exact_posterior.sample_exact_posterior(
            jax.random.fold_in(key, 102), stats, hyper, activation, n_chains=cfg["exact_chains"],
            num_steps=steps, burn_in=steps // 3, thin=exact_thin(steps),
            warmup_steps=cfg["exact_warmup"], progress=progress, desc=f"{activation} P={P} exact")
        summary["exact"] = exact_posterior.summarize_exact(run, EXACT_KEYS[activation])
        for k in ("c1", "cG", "abs_rho", "family", "loss"):
            arrays[f"exact_{k}"] = run.samples.draws[k]
        arrays["exact_start"] = run.start
        arrays["exact_acceptance"] = run.acceptance
        arrays["exact_step_size"] = run.step_size
        arrays["exact_stuck"] = run.stuck

    clock["exact"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    # inside a coexistence window (the start families disagree) equal-time averages cannot
    # weigh the phases: with cfg["free_energy"], umbrella sampling + MBAR on the same data does
    fe = cfg.get("free_energy")
    if fe and activation == "softmax" and run is not None and summary["exact"].branches_disagree:
        from copyjax import free_energy

        pr, _, urun = free_energy.softmax_phase_weights(
            jax.random.fold_in(key, 103), stats, hyper, num_steps=fe["steps"], progress=progress,
            desc=f"{activation} P={P} free energy")
        summary["exact_free_energy"] = PhaseWeights(
            Estimate(pr.mean, pr.mean_sd, float(np.sqrt(max(pr.var, 0.0)))),
            copy_weight=float(pr.weights[1]), copy_weight_sd=float(pr.weights_sd[1]),
            log_ratio=pr.log_ratio, log_ratio_sd=pr.log_ratio_sd, barrier=pr.barrier,
            minima_cG=pr.minima_centres, acceptance_min=float(urun.acceptance.min()))
        arrays["fe_edges"], arrays["fe_F"], arrays["fe_F_sd"] = pr.edges, pr.F, pr.F_sd
    clock["free_energy"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    eps = cfg["step_size"] or auto_step_size(P, V, hyper)
    summary["step_size"] = eps
    obs = network.Observer(hyper, activation, OBS_KEYS)
    data = {"stats": stats, "step_size": jnp.asarray(eps, jnp.float32)}
    if cfg["batch"]:
        # the same sequences the statistics count (same chunking and keys)
        data["tokens"] = streamed_tokens(k_data, P, L, V)
        layout = cfg.get("batch_layout", "independent")
        if layout == "shared":  # one minibatch per step for all chains, from this key
            data["batch_key"] = jax.random.fold_in(k_chain, 1000)
        alg = samplers.NetworkSampler(hyper, activation, "sgld", min(cfg["batch"], P), layout=layout)
    else:
        alg = samplers.NetworkSampler(hyper, activation, "sgld")
    sgld_starts = [s for s in cfg.get("sgld_starts", ("prior", "exact")) if s != "exact" or run is not None]
    summary["sgld"] = {}
    for start in sgld_starts if cfg["chains"] else ():
        ki = jax.random.fold_in(k_init, SGLD_STARTS.index(start))
        if start == "exact":
            init = exact_joint_starts(ki, run, cfg["chains"], stats, hyper, activation)
        else:
            init = training.init_ensemble(ki, cfg["chains"], L, V, hyper, activation, start)
        s = chains.run_chains(jax.random.fold_in(k_chain, SGLD_STARTS.index(start)), alg, init, obs, data,
                              schedule=chains.Schedule(cfg["steps"], cfg["steps"] // 2, max(1, cfg["steps"] // 100)),
                              progress=progress, desc=f"{activation} P={P} sgld/{start}")
        for k in OBS_KEYS:
            arrays[f"sgld_{start}_{k}"] = s.draws[k]
        arrays[f"sgld_{start}_divergent"] = s.nonfinite  # (saved name kept)
        arrays[f"sgld_{start}_test_loss"] = _test_loss(s.final.position, stats_test, hyper, activation)
        summary["sgld"][start] = SGLDSummary(
            *(chains.summarize(s.draws[k], s.nonfinite) for k in ("c1", "cG", "abs_rho", "loss", "coverage")),
            test_loss=float(np.mean(arrays[f"sgld_{start}_test_loss"][~s.nonfinite]))
            if (~s.nonfinite).any() else None)
    clock["sgld"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    for start in ("prior", "copy") if cfg["adam_seeds"] else ():
        ki = jax.random.fold_in(k_init, start == "copy")
        init = training.init_ensemble(ki, cfg["adam_seeds"], L, V, hyper, activation, start)
        ens = training.train_ensemble(jax.random.fold_in(k_adam, start == "copy"), init, stats,
                                      hyper, activation, steps=cfg["adam_steps"],
                                      learning_rate=cfg["adam_lr"],
                                      record_every=max(1, cfg["adam_steps"] // 50))
        for k in OBS_KEYS:
            arrays[f"adam_{start}_{k}_curve"] = ens.curves[k]
            arrays[f"adam_{start}_{k}"] = ens.final_obs[k]
        arrays["adam_steps"] = ens.steps
        arrays[f"adam_{start}_test_loss"] = _test_loss(ens.final, stats_test, hyper, activation)
    if cfg["adam_seeds"]:
        lp = np.concatenate([arrays["adam_prior_logpost"], arrays["adam_copy_logpost"]])
        mask = training.reached_global(lp, rtol=cfg["adam_rtol"])
        arrays["adam_global_mask"] = mask
        pick = lambda k: np.concatenate([arrays[f"adam_prior_{k}"], arrays[f"adam_copy_{k}"]])[mask]
        summary["adam_global"] = AdamSummary(int(mask.sum()), int(mask.size), **{
            k: float(np.mean(pick(k))) for k in ("c1", "cG", "abs_rho", "loss", "coverage", "test_loss")})
    clock["adam"] = time.perf_counter() - t1
    summary["wall_s_by_part"] = clock
    summary["wall_s"] = time.perf_counter() - t0
    return PointSummary(**summary), arrays


# summary.csv: one row per (activation, P); documented column by column in docs/phase_diagram.md
CSV_COLUMNS = (
    "activation", "P", "theory_c1", "theory_cG", "theory_loss", "post_c1", "post_cG",
    "sgld_prior_cG", "sgld_prior_cG_sd", "sgld_copy_cG", "sgld_copy_cG_sd", "sgld_rhat_cG",
    "sgld_ess_cG", "sgld_divergent", "adam_cG", "adam_n_global", "sgld_loss", "adam_loss",
    "adam_test_loss", "coverage", "op_cG", "op_cG_sd", "exact_cG", "exact_cG_sd", "wall_s",
    "theory_abs_rho", "post_abs_rho", "exact_cG_mcse", "exact_abs_rho", "exact_loss",
    "exact_rhat_cG", "exact_nested_rhat_cG", "exact_ess_cG", "exact_branches_disagree",
    "exact_prior_cG", "exact_copy_cG", "exact_acceptance", "exact_n_stuck",
    "exact_n_opposite_family", "exact_abs_rho_opposite", "sgld_exact_cG", "sgld_exact_cG_sd",
    "theory_in_window", "exact_fe_cG", "exact_fe_cG_sd", "exact_fe_cG_mcse", "exact_fe_copy_weight",
    "exact_fe_copy_weight_sd",
)


def csv_row(p: PointSummary) -> list:
    """The ``CSV_COLUMNS`` of one point (empty where a method did not run, and
    ``exact_cG``/``exact_cG_sd`` empty where the start families disagree)."""
    th_map, th_post = p.theory_map.best, p.theory_posterior.best
    op, ex, fe, ad = p.theory_posterior_sampled, p.exact, p.exact_free_energy, p.adam_global
    sg = p.sgld
    lin = p.activation == "linear"
    pooled = ex is not None and not ex.branches_disagree
    fam = ex.sign_families if ex is not None else None
    row = {
        "activation": p.activation, "P": p.P,
        "theory_c1": th_map.c1, "theory_cG": th_map.cG, "theory_loss": th_map.loss, "theory_abs_rho": th_map.abs_rho,
        "post_c1": th_post.c1, "post_cG": th_post.cG, "post_abs_rho": th_post.abs_rho,
        "op_cG": op and op.cG.mean, "op_cG_sd": op and op.cG.sd,
        "exact_cG": pooled and ex.cG.mean, "exact_cG_sd": pooled and ex.cG.sd,
        "exact_cG_mcse": pooled and ex.cG.mcse,
        "exact_abs_rho": lin and fam and fam.abs_rho,
        "exact_loss": pooled and ex.loss.mean,
        "exact_rhat_cG": ex and ex.cG.rhat, "exact_nested_rhat_cG": ex and ex.cG.nested_rhat,
        "exact_ess_cG": ex and ex.cG.ess,
        "exact_branches_disagree": ex and str(ex.branches_disagree).lower(),
        "exact_prior_cG": ex and ex.cG.prior.mean, "exact_copy_cG": ex and ex.cG.copy.mean,
        "exact_acceptance": ex and ex.acceptance_mean, "exact_n_stuck": ex and ex.n_stuck,
        "exact_n_opposite_family": lin and fam and fam.opposite.n,
        "exact_abs_rho_opposite": lin and fam and fam.split and fam.opposite.abs_rho,
        "sgld_prior_cG": _mean(sg.get("prior"), "cG"), "sgld_prior_cG_sd": _mean(sg.get("prior"), "cG", "sd"),
        "sgld_copy_cG": _mean(sg.get("copy"), "cG"), "sgld_copy_cG_sd": _mean(sg.get("copy"), "cG", "sd"),
        "sgld_exact_cG": _mean(sg.get("exact"), "cG"), "sgld_exact_cG_sd": _mean(sg.get("exact"), "cG", "sd"),
        "sgld_rhat_cG": _mean(sg.get("prior"), "cG", "rhat"), "sgld_ess_cG": _mean(sg.get("prior"), "cG", "ess"),
        "sgld_divergent": _mean(sg.get("prior"), "cG", "n_excluded"),
        "sgld_loss": _mean(sg.get("prior"), "loss"), "coverage": _mean(sg.get("prior"), "coverage"),
        "adam_cG": ad and ad.cG, "adam_n_global": ad and ad.n, "adam_loss": ad and ad.loss,
        "adam_test_loss": ad and ad.test_loss,
        "wall_s": p.wall_s,
        "theory_in_window": str(p.theory_posterior.in_window).lower(),
        "exact_fe_cG": fe and fe.cG.mean, "exact_fe_cG_sd": fe and fe.cG.sd, "exact_fe_cG_mcse": fe and fe.cG.mcse,
        "exact_fe_copy_weight": fe and fe.copy_weight, "exact_fe_copy_weight_sd": fe and fe.copy_weight_sd,
    }
    # an empty cell where a method did not run or a quantity does not apply (None, False)
    return ["" if row[c] is None or row[c] is False else row[c] for c in CSV_COLUMNS]


def _mean(section, key: str, stat: str = "mean"):
    """``getattr(section.<key>, stat)``, None where the section did not run."""
    return None if section is None else getattr(getattr(section, key), stat)


def point_line(p: PointSummary) -> str:
    """One line of the script's report for a point: theory, exact posterior (both branches
    where the start families disagree), SGLD, Adam."""
    lin = p.activation == "linear"
    name = "|c_G|" if lin else "a_G"
    th = p.theory_posterior.best
    line = f"P={p.P:>7}: theory (posterior form) {name}={th.cG:.3f}"
    if lin:
        line += f" |rho|={th.abs_rho:.3f}"
    if p.theory_posterior.in_window:
        line += " [two minima: coexistence window]"
    if p.theory_posterior_sampled:
        line += f" | NUTS(OP) {p.theory_posterior_sampled.cG.mean:.3f}"
    ex = p.exact
    if ex:
        c = ex.cG
        if ex.branches_disagree:
            line += (f" | exact: TWO BRANCHES prior-start {c.prior.mean:.3f}, copy-start "
                     f"{c.copy.mean:.3f} (nested R-hat {c.nested_rhat:.2f})")
        else:
            line += f" | exact {c.mean:.3f}+-{c.mcse:.3f} (R-hat {c.rhat:.3f}, ESS {c.ess:.0f})"
        if lin:
            fam = ex.sign_families
            line += f" |rho| {fam.abs_rho:.3f}"
            if fam.split:
                line += f" [opposite-sign family: {fam.opposite.n} chains, |rho| {fam.opposite.abs_rho:.3f}]"
        if ex.n_stuck:
            line += f" [{ex.n_stuck} chains did not move]"
        fe = p.exact_free_energy
        if fe:
            line += (f" | free energy (MBAR): {name}={fe.cG.mean:.3f}+-{fe.cG.mcse:.3f}, copy mass "
                     f"{fe.copy_weight:.3g}+-{fe.copy_weight_sd:.2g}")
    for start, lab in (("prior", "SGLD relaxation from prior"), ("exact", "SGLD from exact draws"),
                       ("copy", "SGLD from copy")):
        if start in p.sgld:
            line += f" | {lab} {p.sgld[start].cG.mean:.3f}"
    if p.adam_global:
        ad = p.adam_global
        line += f" | Adam {ad.cG:.3f} ({ad.n}/{ad.of})"
    return line


def load_or_run_point(cfg, out, activation, P, index, progress=False) -> tuple[PointSummary, dict, bool]:
    """Reuse a finished point (same configuration hash) or compute and save it
    (``copyjax.results``: atomic writes, summary last). Returns (summary, arrays, reused)."""
    base = results.point_path(out, activation, index)
    done = results.load_point(base, results.config_hash(cfg), P)
    if done is not None:
        return PointSummary.from_json(done[0]), done[1], True
    summary, arrays = run_point(cfg, activation, P, index, progress)
    summary = summary.replace(config_hash=results.config_hash(cfg))
    results.save_point(base, summary.to_json(), arrays)
    return summary, arrays, False


__all__ = ["auto_step_size", "CSV_COLUMNS", "csv_row", "DEFAULT_EXACT_STEPS", "exact_joint_starts",
           "EXACT_KEYS", "exact_thin", "load_or_run_point", "OBS_KEYS", "point_line", "run_point",
           "SGLD_STARTS", "theory_op"]
