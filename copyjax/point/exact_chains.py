"""The exact marginal posterior of G on the point's data: adaptive MALA on all L^2 entries
(``copyjax.exact_posterior``), half the chains from the prior, half from the copy pattern."""
from __future__ import annotations

import jax
import numpy as np

from copyjax import exact_posterior
from copyjax.point.base import Method, draws_with_prefix
from copyjax.schema import ExactSummary

# what the exact-posterior summary covers (a_1 + a_G = 1 for softmax: no abs_rho)
EXACT_KEYS = {"softmax": ("c1", "cG", "loss"), "linear": ("c1", "cG", "abs_rho", "loss")}

# two layers' order parameters (masks.stack's layer_order: each layer's weight on x_l, x_{l-1}, x_{l-2})
LAYER_KEYS = tuple(f"A{i}_{n}" for i in (1, 2) for n in ("I", "S", "S2"))

# MALA steps per exact chain when not given: linear attention's copy direction mixes slower.
# Few long chains rather than many short ones: the cost of a step hardly depends on the
# number of chains up to ~64 on CPU (the pass over the statistics dominates), and split
# R-hat of chains with n effective draws sits near 1 + 1/n even for a perfect sampler
# (32 chains x 600 steps: R-hat 1.06-1.08 at softmax P = 933, 1643 with nested R-hat 1.000)
DEFAULT_EXACT_STEPS = {"softmax": 900, "linear": 1800}


def exact_thin(steps: int) -> int:
    """Thinning of the exact chains: about 30 recorded draws per chain after the burn-in."""
    return max(1, (steps - steps // 3) // 30)


class ExactMethod(Method):
    name = "exact"
    prefix = "exact"
    config = {"exact_chains": 16, "exact_steps": None, "exact_warmup": None}
    csv_columns = ("exact_cG", "exact_cG_sd", "exact_cG_mcse", "exact_abs_rho", "exact_loss", "exact_rhat_cG",
                   "exact_nested_rhat_cG", "exact_ess_cG", "exact_branches_disagree", "exact_prior_cG",
                   "exact_copy_cG", "exact_acceptance", "exact_n_stuck", "exact_n_opposite_family",
                   "exact_abs_rho_opposite") + tuple(f"exact_{k}" for k in LAYER_KEYS)
    result_type = ExactSummary

    def enabled(self, ctx):
        return bool(ctx.cfg["exact_chains"])

    def run(self, ctx):
        c, act = ctx.cfg, ctx.activation
        steps = c["exact_steps"] or DEFAULT_EXACT_STEPS[act]
        run = exact_posterior.sample_exact_posterior(
            jax.random.fold_in(ctx.key, 102), ctx.stats, ctx.hyper, act, n_chains=c["exact_chains"],
            num_steps=steps, burn_in=steps // 3, thin=exact_thin(steps), warmup_steps=c["exact_warmup"],
            progress=ctx.progress, desc=f"{act} P={ctx.P} exact", mask=ctx.mask)
        ctx.shared[self.name] = run  # SGLD starts from its draws
        layer_keys = ctx.mask.layer_order_keys
        arrays = {k: run.samples.draws[k] for k in ("c1", "cG", "abs_rho", "family", "loss") + layer_keys}
        arrays |= {"start": run.start, "acceptance": run.acceptance, "step_size": run.step_size,
                   "stuck": run.stuck}
        return exact_posterior.summarize_exact(run, EXACT_KEYS[act] + layer_keys), arrays


    def csv_cells(self, p):
        ex, lin = p.exact, p.activation == "linear"
        pooled = not ex.branches_disagree  # the pooled mean is the posterior's only then
        fam = ex.sign_families
        # where the branches disagree, the posterior's a_G is the free energy's (both phases weighed)
        fe = None if pooled else p.free_energy
        post = ex.cG if pooled else fe.cG if fe is not None else None
        return {
            "exact_cG": post is not None and post.mean, "exact_cG_sd": post is not None and post.sd,
            "exact_cG_mcse": post is not None and post.mcse, "exact_abs_rho": lin and fam.abs_rho,
            "exact_loss": pooled and ex.loss.mean, "exact_rhat_cG": ex.cG.rhat,
            "exact_nested_rhat_cG": ex.cG.nested_rhat, "exact_ess_cG": ex.cG.ess,
            "exact_branches_disagree": str(ex.branches_disagree).lower(),
            "exact_prior_cG": ex.cG.prior.mean, "exact_copy_cG": ex.cG.copy.mean,
            "exact_acceptance": ex.acceptance_mean, "exact_n_stuck": ex.n_stuck,
            "exact_n_opposite_family": lin and fam.opposite.n,
            "exact_abs_rho_opposite": lin and fam.split and fam.opposite.abs_rho} | {
            f"exact_{k}": v.mean for k, v in (ex.layers or {}).items()}

    def report(self, p):
        ex, lin = p.exact, p.activation == "linear"
        c = ex.cG
        fe = p.free_energy if ex.branches_disagree else None
        if fe is not None:  # the posterior from the free energy; the branches as detail
            s = (f"exact posterior (free energy) a_G {fe.cG.mean:.3f}+-{fe.cG.mcse:.3f} (sd {fe.cG.sd:.3f}), "
                 f"copy mass {fe.copy_weight:.3g} [chains' start families disagree: prior-start "
                 f"{c.prior.mean:.3f}, copy-start {c.copy.mean:.3f}]")
        elif ex.branches_disagree:
            s = (f"exact: TWO BRANCHES prior-start {c.prior.mean:.3f}, copy-start {c.copy.mean:.3f} "
                 f"(nested R-hat {c.nested_rhat:.2f}; the free energy weighs them: drop --no-free-energy)")
        else:
            s = f"exact {c.mean:.3f}+-{c.mcse:.3f} (R-hat {c.rhat:.3f}, ESS {c.ess:.0f})"
        if lin:
            fam = ex.sign_families
            s += f" |rho| {fam.abs_rho:.3f}"
            if fam.split:
                s += f" [opposite-sign family: {fam.opposite.n} chains, |rho| {fam.opposite.abs_rho:.3f}]"
        if ex.layers:  # which layer attends where: to x_l, x_{l-1}, x_{l-2}
            s += " | layers " + ", ".join(
                f"{i}: I {ex.layers[f'A{i}_I'].mean:.2f} S {ex.layers[f'A{i}_S'].mean:.2f} S2 {ex.layers[f'A{i}_S2'].mean:.2f}"
                for i in (1, 2))
        if ex.n_stuck:
            s += f" [{ex.n_stuck} chains did not move]"
        return s

    def draw_order_parameter(self, ax, res, act, pts, key, label, color):
        """Means +- sd: one star per point where the start families agree, a star for each
        branch (filled: copy start, open: prior start) where they do not. Linear |rho|: the
        same-sign family where the sign families are separate metastable states (the
        opposite family's value drawn as a cross), else all chains."""
        pts = [p for p in pts if p.exact is not None]
        one = [p for p in pts if not p.exact.branches_disagree]
        two = [p for p in pts if p.exact.branches_disagree]

        def val(p, fam=None):
            if key == "abs_rho" and act == "linear":
                return p.exact.sign_families.abs_rho, p.exact.abs_rho.sd
            s = getattr(p.exact, key) if fam is None else getattr(getattr(p.exact, key), fam)
            return s.mean, s.sd
        if one:
            m, sd = zip(*(val(p) for p in one))
            ax.errorbar([p.P * 1.015 for p in one], m, sd, fmt="*", color=color, ms=10, capsize=2,
                        mec="k", mew=0.5, label=f"exact posterior of G (MALA): {label}")
        for fam, mfc in (("prior", "none"), ("copy", color)):
            if two:
                m, sd = zip(*(val(p, fam) for p in two))
                ax.errorbar([p.P * 1.015 for p in two], m, sd, fmt="*", color=color, mfc=mfc, ms=10,
                            capsize=2, label=f"exact, {fam}-start branch (families disagree): {label}")
        if key == "abs_rho" and act == "linear":
            opp = [(p.P, p.exact.sign_families.opposite.abs_rho) for p in pts if p.exact.sign_families.split]
            if opp:
                ax.plot(*zip(*opp), "+", color=color, ms=8, label="exact, opposite-sign family (g s < 0): |rho|")

    def draw_loss(self, ax, res, act, pts):
        ok = [p for p in pts if p.exact is not None and not p.exact.branches_disagree]
        if ok:
            ax.plot([p.P for p in ok], [p.exact.loss.mean for p in ok], "*k", ms=9, label="exact posterior (W averaged)")

    def figures(self, res, arrays, out):
        if not any(p.exact is not None for p in res["points"]):
            return []
        from copyjax.plots.phase_diagram import exact_histograms, layer_orders

        two = any(p.exact is not None and p.exact.layers for p in res["points"])
        return exact_histograms(res, arrays, out) + (layer_orders(res, arrays, out, LAYER_KEYS) if two else [])

    def chains(self, arrays):
        d = draws_with_prefix(arrays, self.prefix, ("c1", "cG", "abs_rho", "family", "loss"))
        return {self.prefix: d} if d else {}


def exact_joint_starts(key, run, n: int, stats, hyper, activation: str, mask="full"):
    """``n`` exact joint draws of (W, G) as SGLD starts: G from the final states of the
    exact-posterior chains that moved (cycled), W from its Gaussian conditional given G
    (``network.sample_w_posterior``). Float32, like the SGLD chains."""
    import jax.numpy as jnp

    from copyjax import masks, network
    from copyjax.data import float_stats

    ok = np.flatnonzero(~run.stuck & ~np.asarray(run.samples.nonfinite))
    ok = ok if ok.size else np.arange(len(run.stuck))
    G = jnp.asarray(np.asarray(run.samples.final.position)[ok[np.arange(n) % ok.size]])
    stats = float_stats(stats)
    mask = masks.get(mask)
    A = mask.attention(G.astype(stats.dtype), activation)
    W = jax.vmap(lambda k, a: network.sample_w_posterior(k, a, stats, hyper, mask))(jax.random.split(key, n), A)
    return network.Params(W.astype(jnp.float32), G.astype(jnp.float32))


METHOD = ExactMethod()


__all__ = ["DEFAULT_EXACT_STEPS", "EXACT_KEYS", "LAYER_KEYS", "exact_joint_starts", "exact_thin", "ExactMethod", "METHOD"]
