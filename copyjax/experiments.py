"""One point of the phase diagram: theory, SGLD chains and an Adam ensemble at (activation, P).

Results are written one file per point, atomically (temporary file + ``os.replace``), so an
interrupted sweep resumes with the finished points reused.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import chains, network, samplers, theory, training
from copyjax.data import sampled_stats, streamed_tokens
from copyjax.hyper import Hyper
from copyjax.model import attention, log_likelihood_from_stats

OBS_KEYS = ("c1", "cG", "coverage", "loss", "logpost")


def config_hash(cfg: dict) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True).encode()).hexdigest()[:16]


def atomic_write_bytes(path: str, data: bytes) -> None:
    d = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_savez(path: str, **arrays) -> None:
    import io

    buf = io.BytesIO()
    np.savez(buf, **arrays)
    atomic_write_bytes(path, buf.getvalue())


def auto_step_size(P: float, V: int, hyper: Hyper, scale: float = 0.05) -> float:
    """``scale / lambda_W``: lambda_W = beta P / V + V / sigma_w2 is the largest curvature of
    -log p in W (reached on span{U, S}), the stiffest direction of the posterior."""
    return scale / (hyper.beta * P / V + V / hyper.sigma_w2)


def _test_loss(final, stats_test, hyper, activation) -> np.ndarray:
    P = jnp.trace(stats_test[0, 0])

    def one(p):
        A = attention(p.G, activation)
        return -log_likelihood_from_stats(p.W, A, stats_test, hyper.beta) / (hyper.beta * P)

    return np.asarray(jax.jit(jax.vmap(one))(final))


def _signed(draws: dict, activation: str) -> dict:
    """Linear attention is even in (W, G): report order parameters with sign(rho) fixed."""
    if activation != "linear":
        return draws
    s = np.where(draws["c1"] + draws["cG"] < 0, -1.0, 1.0)
    return dict(draws, c1=s * draws["c1"], cG=s * draws["cG"])


def tuned_mala_step(key, logdensity, x0, n_pilot=400, target=0.57):
    """MALA step size from blackjax's dual averaging on one pilot chain started at x0."""
    import blackjax

    da_init, da_update, da_final = blackjax.adaptation.step_size.dual_averaging_adaptation(target)
    kernel = blackjax.mala.build_kernel()

    def body(carry, k):
        state, da = carry
        state, info = kernel(k, state, logdensity, jnp.exp(da.log_step_size))
        return (state, da_update(da, info.acceptance_rate)), None

    (_, da), _ = jax.lax.scan(body, (blackjax.mala.init(x0, logdensity), da_init(1e-2)),
                              jax.random.split(key, n_pilot))
    return float(da_final(da))


def exact_posterior(key, stats, L, V, activation, hyper, n_chains, steps, thin):
    """blackjax MALA on the exact marginal exp(-S_P(G)) of ``stats``: half of the chains from
    the prior, half from the copy pattern. Returns ``(Samples, step size, n prior chains)``;
    draws ``c1, cG`` (sign-fixed for linear) and ``loss`` (W averaged over its posterior)."""
    import copyjax as cj
    from copyjax import chains as C
    from copyjax import samplers as S
    from copyjax.action import data_action, expected_loss

    def logdensity(G):
        A = cj.attention(G, activation)
        return -(data_action(A, stats, hyper) + 0.5 * jnp.sum(G**2) / hyper.sigma_g2)

    k_init, k_pilot, k_run = jax.random.split(key, 3)
    prior = jnp.sqrt(hyper.sigma_g2) * jax.random.normal(k_init, (n_chains, L, L))
    # Copy-pattern starts: a strong logit at the previous token (softmax) / A = S (linear).
    S_mat = cj.shift_matrix(L, prior.dtype)
    copy = (jnp.log(4.0 * L) * S_mat if activation == "softmax" else S_mat) + 0.1 * prior
    half = n_chains // 2
    init = jnp.concatenate([prior[: n_chains - half], copy[:half]])
    eps = tuned_mala_step(k_pilot, logdensity, init[0])

    def observe(G):
        A = cj.attention(G, activation)
        c1, cG = cj.order_parameters(A)
        s = jnp.where(c1 + cG < 0, -1.0, 1.0) if activation == "linear" else 1.0
        return {"c1": s * c1, "cG": s * cG, "loss": expected_loss(A, stats, hyper)}

    smp = C.run_chains(k_run, S.mala_marginal(stats, hyper, activation, eps), init, observe,
                       num_steps=steps, burn_in=steps // 3, thin=thin)
    return smp, eps, n_chains - half


def run_point(cfg: dict, activation: str, P: int, index: int, progress: bool = False) -> tuple[dict, dict]:
    """Everything at one (activation, P). Returns (summary dict, arrays dict)."""
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
    for form in ("map", "posterior"):
        ms = theory.minima(P, L, V, activation, hyper, form)
        best = min(ms, key=lambda m: m.action)
        summary[f"theory_{form}"] = {
            "global": {"c1": best.c1, "cG": best.cG,
                       "loss": theory.minimum_loss(best, P, L, V, activation, hyper, form)},
            "minima": [{"c1": m.c1, "cG": m.cG, "action": m.action} for m in ms],
        }

    # the joint MAP of (W, G): what Adam converges to (docs/theory.md, joint_map form)
    ms = theory.minima(P, L, V, activation, hyper, "joint_map")
    best = min(ms, key=lambda m: m.action)
    summary["theory_joint_map"] = {"c1": best.c1, "cG": best.cG,
                                   "loss": theory.minimum_loss(best, P, L, V, activation, hyper, "joint_map")}
    # the posterior form sampled in order-parameter space (NUTS, copyjax.op_posterior)
    if cfg.get("op_chains"):
        from copyjax import op_posterior

        s = op_posterior.sample_op_posterior(jax.random.fold_in(key, 101), float(P), L, V, activation,
                                             hyper, n_chains=cfg["op_chains"], n_draws=cfg["op_draws"],
                                             n_warmup=max(25, cfg["op_draws"] // 2))
        summ = op_posterior.op_summary(s)
        summary["theory_posterior_sampled"] = {k: summ[k] for k in ("c1", "cG", "loss")} | {
            "mode_weights": summ["weights"], "n_divergent_transitions": summ["n_divergent_transitions"]}
        for k in ("c1", "cG", "loss"):
            arrays[f"op_{k}"] = s.draws[k]
    # the exact marginal posterior of G on this point's data (MALA on all L^2 entries)
    if cfg.get("exact_chains"):
        smp, eps_x, n_prior = exact_posterior(jax.random.fold_in(key, 102), stats.astype(jnp.float64),
                                              L, V, activation, hyper, cfg["exact_chains"],
                                              cfg["exact_steps"], max(1, cfg["exact_steps"] // 100))
        summary["exact"] = {k: chains.summarize(smp.draws[k], smp.divergent) for k in ("c1", "cG", "loss")}
        summary["exact"]["step_size"] = eps_x
        for k in ("c1", "cG", "loss"):
            arrays[f"exact_{k}"] = smp.draws[k]

    eps = cfg["step_size"] or auto_step_size(P, V, hyper)
    summary["step_size"] = eps
    obs = network.Observer(hyper, activation, OBS_KEYS)
    data = {"stats": stats, "step_size": jnp.asarray(eps, jnp.float32)}
    if cfg["batch"]:
        # the same sequences the statistics count (same chunking and keys)
        data["tokens"] = streamed_tokens(k_data, P, L, V)
        alg = samplers.NetworkSampler(hyper, activation, "sgld", min(cfg["batch"], P))
    else:
        alg = samplers.NetworkSampler(hyper, activation, "sgld")
    for start in ("prior", "copy"):
        ki = jax.random.fold_in(k_init, start == "copy")
        if cfg["chains"]:
            init = training.init_ensemble(ki, cfg["chains"], L, V, hyper, activation, start)
            s = chains.run_chains(jax.random.fold_in(k_chain, start == "copy"), alg, init, obs,
                                  data=data, num_steps=cfg["steps"], burn_in=cfg["steps"] // 2,
                                  thin=max(1, cfg["steps"] // 100), progress=progress,
                                  desc=f"{activation} P={P} sgld/{start}")
            draws = _signed(s.draws, activation)
            for k in OBS_KEYS:
                arrays[f"sgld_{start}_{k}"] = draws[k]
            arrays[f"sgld_{start}_divergent"] = s.divergent
            arrays[f"sgld_{start}_test_loss"] = _test_loss(
                s.final.position, stats_test, hyper, activation)
            summary[f"sgld_{start}"] = {
                k: chains.summarize(draws[k], s.divergent) for k in ("c1", "cG", "loss", "coverage")
            } | {"test_loss": float(np.mean(arrays[f"sgld_{start}_test_loss"][~s.divergent]))
                 if (~s.divergent).any() else None}
        if cfg["adam_seeds"]:
            init = training.init_ensemble(ki, cfg["adam_seeds"], L, V, hyper, activation, start)
            ens = training.train_ensemble(jax.random.fold_in(k_adam, start == "copy"), init, stats,
                                          hyper, activation, steps=cfg["adam_steps"],
                                          learning_rate=cfg["adam_lr"],
                                          record_every=max(1, cfg["adam_steps"] // 50))
            curves = _signed(ens.curves, activation)
            final = _signed(ens.final_obs, activation)
            for k in OBS_KEYS:
                arrays[f"adam_{start}_{k}_curve"] = curves[k]
                arrays[f"adam_{start}_{k}"] = final[k]
            arrays["adam_steps"] = ens.steps
            arrays[f"adam_{start}_test_loss"] = _test_loss(ens.final, stats_test, hyper, activation)
    if cfg["adam_seeds"]:
        lp = np.concatenate([arrays["adam_prior_logpost"], arrays["adam_copy_logpost"]])
        mask = training.reached_global(lp, rtol=cfg["adam_rtol"])
        arrays["adam_global_mask"] = mask
        pick = lambda k: np.concatenate([arrays[f"adam_prior_{k}"], arrays[f"adam_copy_{k}"]])[mask]
        summary["adam_global"] = {"n": int(mask.sum()), "of": int(mask.size)} | {
            k: float(np.mean(pick(k))) for k in ("c1", "cG", "loss", "coverage", "test_loss")}
    summary["wall_s"] = time.perf_counter() - t0
    return summary, arrays


def point_path(out: str, activation: str, index: int) -> str:
    return os.path.join(out, "points", f"{activation}_{index:03d}")


def load_or_run_point(cfg, out, activation, P, index, progress=False):
    """Reuse a finished point (same configuration hash) or compute and save it."""
    base = point_path(out, activation, index)
    if os.path.exists(base + ".json") and os.path.exists(base + ".npz"):
        with open(base + ".json") as f:
            summary = json.load(f)
        if summary.get("config_hash") == config_hash(cfg) and summary.get("P") == int(P):
            with np.load(base + ".npz") as z:
                return summary, dict(z), True
    summary, arrays = run_point(cfg, activation, P, index, progress)
    summary["config_hash"] = config_hash(cfg)
    # arrays first, summary last: a point counts as done only once its summary exists
    atomic_savez(base + ".npz", **arrays)
    atomic_write_bytes(base + ".json", json.dumps(summary, indent=1).encode())
    return summary, arrays, False
