"""The exact marginal posterior of the attention scores, ``p(G | data) ∝ exp(-S_P(G))``
(W integrated out, ``copyjax.action``), sampled at any L.

* ``marginal_logdensity`` (from ``copyjax.action``): the log density every sampler of G uses;
* the kernel: ``sgmcmc.adaptive_mala`` (blackjax's MALA step, each chain's step tuned by
  dual averaging during the burn-in), preconditioned along ``order_directions``;
* ``sample_exact_posterior``: chains from two start families (the prior and the copy
  pattern), vmapped and sharded by ``chains.run_chains``; ``summarize_exact`` gives per
  family summaries, nested R-hat with the families as superchains, per-chain acceptance,
  non-moving chains, and (linear attention) the two sign families.

Why MALA and not NUTS: measured at L = 64 (``benchmarks/exact_kernels.py``, docs/sampling.md).
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from blackjax.base import SamplingAlgorithm

from copyjax import masks
from copyjax._checks import check_activation, check_burn_in, check_size
from copyjax.action import expected_loss, marginal_logdensity
from copyjax.chains import Layout, Samples, Schedule, nested_rhat, run_chains, summarize
from copyjax.data import float_stats
from copyjax.sgmcmc import adaptive_mala
from copyjax.starts import prior_G
from copyjax.schema import EXACT_OBSERVABLES, ExactStat, ExactSummary, FamilyMeans, SignFamilies

def order_directions(L: int, dtype=jnp.float32, mask="full") -> jax.Array:
    """``(k, *param_shape)``: the ``mask``'s orthonormal directions of G along which adaptive
    MALA rescales its steps (``Mask.order_directions``; one layer: U and
    ``(S - U) / sqrt(L - 1)``, the pooling and copy directions)."""
    return masks.get(mask).order_directions(L, dtype)


def logdensity(G, stats, hyper, activation: str, mask="full") -> jax.Array:
    """The exact marginal log density of ``G: (L, L)`` under ``mask``
    (``action.marginal_logdensity``)."""
    return marginal_logdensity(G, stats, hyper, activation, mask)


class ExactSampler(NamedTuple):
    """Hashable spec for ``run_chains(..., data=...)``: adaptive MALA on the exact marginal
    of ``data["stats"]`` from the initial step ``data["step_size"]``. One compilation serves a
    sweep over P (the statistics are an argument)."""

    hyper: object
    activation: str
    n_adapt: int
    target: float = 0.57
    precondition: bool = True
    mask: object = "full"  # a masks name or Mask

    def build(self, data) -> SamplingAlgorithm:
        lp = lambda G: logdensity(G, data["stats"], self.hyper, self.activation, self.mask)
        L = data["stats"].shape[0]
        D = order_directions(L, data["step_size"].dtype, self.mask) if self.precondition else None
        return adaptive_mala.as_top_level_api(lp, data["step_size"], self.n_adapt, self.target, directions=D)


class ExactObserver(NamedTuple):
    """``observe(G, data)``: the ``mask``'s reported order parameters (``Mask.order``: the full
    mask's are ``order.reported_order_parameters``, another's the means over its loss rows),
    the training loss with W averaged over its posterior given G, and the log density."""

    hyper: object
    activation: str
    mask: object = "full"

    def __call__(self, G, data) -> dict:
        stats = float_stats(data["stats"])
        mask = masks.get(self.mask)
        A = mask.attention(G.astype(stats.dtype), self.activation)
        return mask.order(A, self.activation) | mask.layer_order(G, self.activation) | {
            "loss": expected_loss(A, stats, self.hyper, mask),
            "logdensity": marginal_logdensity(G, stats, self.hyper, self.activation, mask)}


# ------------------------------------------------------------------------------ driver


def start_positions(key, n_prior: int, n_copy: int, L: int, hyper, activation: str,
                    dtype=jnp.float32, mask="full") -> jax.Array:
    """``(n_prior + n_copy, *param_shape)`` starts: prior draws ``G ~ N(0, sigma_g2)``, then
    the copy pattern (softmax: logit ``log 4L`` at the previous token, a_G ~ 0.8; linear:
    ``A = S``) plus a tenth of a prior draw; the ``mask``'s copy patterns
    (``Mask.copy_starts``: the causal one has no wrap at row 0; two layers have one per
    ordered phase, the copy chains cycling through them)."""
    mask = masks.get(mask)
    prior = prior_G(key, (n_prior + n_copy, *mask.param_shape(L)), hyper, dtype)
    patterns = mask.copy_starts(L, activation, jnp.log(4.0 * L), dtype)
    copy = patterns[np.arange(n_copy) % patterns.shape[0]] + 0.1 * prior[n_prior:]
    return jnp.concatenate([prior[:n_prior], copy]).astype(dtype)


def default_initial_step(activation: str, hyper) -> float:
    """Where dual averaging starts (it moves by decades within tens of steps)."""
    return 1e-2 * hyper.sigma_g2 if activation == "softmax" else 0.1 * hyper.sigma_g2


def default_warmup_steps(activation: str) -> int:
    """Adam warm-up steps: 100 for softmax (from the prior the copy phase is reached by
    descent); none for linear, whose mode (the MAP, c_G = 0.43 at L = 64, V = 32, P = 5095)
    lies far from its posterior mean (0.12: the residual directions' entropy favours pooling),
    so starting MALA at the mode costs more than starting it at the prior."""
    return 100 if activation == "softmax" else 0


def default_warmup_lr(activation: str, hyper) -> float:
    """Adam's learning rate for the warm-up: a tenth of the prior scale of one entry of G."""
    return 0.05 if activation == "softmax" else 0.4 * float(np.sqrt(hyper.sigma_g2))


def optimise_starts(G0: jax.Array, stats, hyper, activation: str, n_steps: int, learning_rate: float,
                    mask="full"):
    """``n_steps`` of optax Adam (cosine-decayed learning rate) on ``-log p(G | data)`` from
    every start ``G0: (chain, L, L)``, vmapped over chains.

    The warm-up before any Metropolis step: from the prior or the copy pattern, MALA in
    L^2 dimensions needs steps far smaller than at stationarity and crawls (0 % acceptance
    for 1500 steps from the linear copy start at L = 64); gradient steps of Adam reach the
    basin the start drains into in a few hundred steps. The draws before the sampling
    burn-in ends are discarded, so this biases nothing; each family stays in the basin
    its start lies in. ``mask``: the density's (``logdensity``)."""
    n_steps = check_size("n_steps", n_steps, 1)
    return _optimise(G0, stats, jnp.asarray(learning_rate, G0.dtype), hyper=hyper,
                     activation=activation, n_steps=n_steps, mask=masks.get(mask))


@partial(jax.jit, static_argnames=("hyper", "activation", "n_steps", "mask"))
def _optimise(G0, stats, learning_rate, *, hyper, activation, n_steps, mask=masks.FULL):
    import optax

    # statistics and learning rate are arguments: one compilation per sweep over P
    opt = optax.adam(optax.cosine_decay_schedule(learning_rate, n_steps, alpha=0.01))
    loss = lambda G: -logdensity(G, stats, hyper, activation, mask)

    def one(G):
        def body(carry, _):
            G, st = carry
            u, st = opt.update(jax.grad(loss)(G), st, G)
            return (optax.apply_updates(G, u), st), None

        (G, _), _ = jax.lax.scan(body, (G, opt.init(G)), None, length=n_steps)
        return G

    return jax.vmap(one)(G0)


class ExactRun(NamedTuple):
    """``samples``: ``chains.Samples`` (draws ``c1, cG, abs_rho, family, loss, logdensity``,
    ``(chain, draw)``); ``start``: ``(chain,)`` 0 = prior, 1 = copy; ``acceptance``:
    ``(chain,)`` mean acceptance after the burn-in; ``step_size``: ``(chain,)`` adapted steps;
    ``stuck``: ``(chain,)`` chains that did not move (acceptance < 5 % or constant draws)."""

    samples: Samples
    start: np.ndarray
    acceptance: np.ndarray
    step_size: np.ndarray
    stuck: np.ndarray


def sample_exact_posterior(key, stats, hyper, activation: str, *, n_chains: int, num_steps: int,
                           burn_in: int | None = None, thin: int = 1, warmup_steps: int | None = None,
                           warmup_lr: float | None = None, initial_step_size=None,
                           target: float = 0.57, precondition: bool | None = None, progress: bool = False,
                           devices=None, desc: str = "exact", mask="full") -> ExactRun:
    """Adaptive MALA on ``exp(-S_P(G))`` for ``stats: (L, L, V, V)``: ``n_chains // 2`` chains
    from the copy pattern, the rest from the prior. Each chain first takes ``warmup_steps``
    Adam steps (``optimise_starts``; default ``default_warmup_steps``), then MALA whose step is tuned per chain
    during ``burn_in`` (default ``num_steps // 3``) and frozen for the recorded draws;
    ``precondition``: also tune per chain the step scales along the pooling and copy
    directions (``order_directions``); default: for linear attention only (measured in
    ``benchmarks/exact_kernels.py``: it pays where the copy direction is wide, between the
    linear onset and crossover, and hurts softmax, whose short burn-in windows overestimate
    the copy direction's width while chains still relax). ``mask``: a ``copyjax.masks`` name
    or ``Mask`` (the posterior of that model, its order parameters as ``ExactObserver`` records
    them; under a mask other than the full one no preconditioning: the pooling and copy
    directions are the cyclic model's)."""
    check_activation(activation)
    mask = masks.get(mask)
    mask.check(activation)
    precondition = (activation == "linear" and mask == masks.FULL) if precondition is None else bool(precondition)
    if precondition and mask != masks.FULL:
        raise ValueError(f"precondition=True is for the full mask (its pooling and copy directions), got mask "
                         f"{mask.spec!r}")
    n_chains = check_size("n_chains", n_chains, 2)
    num_steps = check_size("num_steps", num_steps, 2)
    warmup_steps = (default_warmup_steps(activation) if warmup_steps is None
                    else check_size("warmup_steps", warmup_steps, 0))
    burn_in = num_steps // 3 if burn_in is None else check_burn_in(burn_in, num_steps, minimum=1)
    # blackjax's Gaussian noise follows the default float type (float64 under x64), so the
    # positions take it; the O(L^2 V^2) contraction runs in the statistics' dtype (float32
    # statistics: twice the speed; the Metropolis test stays exact for that density)
    pos_dtype = jax.dtypes.canonicalize_dtype(jnp.float64)
    stats = float_stats(stats)  # integer counts: cast once here, not truncate G to integers
    L = stats.shape[0]
    k_init, k_run = jax.random.split(key)
    n_copy = n_chains // 2
    init_G = start_positions(k_init, n_chains - n_copy, n_copy, L, hyper, activation, pos_dtype, mask)
    if warmup_steps:
        lr = default_warmup_lr(activation, hyper) if warmup_lr is None else warmup_lr
        init_G = optimise_starts(init_G, stats, hyper, activation, warmup_steps, lr, mask)
    eps0 = default_initial_step(activation, hyper) if initial_step_size is None else initial_step_size
    data = {"stats": stats, "step_size": jnp.asarray(eps0, pos_dtype)}
    smp = run_chains(k_run, ExactSampler(hyper, activation, burn_in, target, precondition, mask), init_G,
                     ExactObserver(hyper, activation, mask), data, schedule=Schedule(num_steps, burn_in, thin),
                     layout=Layout(devices=devices), progress=progress, desc=desc)
    start = np.r_[np.zeros(n_chains - n_copy, int), np.ones(n_copy, int)]
    acc = np.asarray(smp.info["acceptance_rate"])
    constant = np.all(np.asarray(smp.draws["logdensity"]) == np.asarray(smp.draws["logdensity"])[:, :1], axis=1)
    return ExactRun(smp, start, acc, np.asarray(smp.final.step_size), (acc < 0.05) | constant)


def summarize_exact(run: ExactRun, keys=("c1", "cG", "abs_rho", "loss"), z: float = 4.0,
                    nested_threshold: float = 1.05) -> ExactSummary:
    """Summary of an ``ExactRun``.

    Per key: the pooled ``chains.summarize`` (over chains that moved and stayed finite),
    ``prior``/``copy`` (each family alone), ``nested_rhat`` (Margossian et al. 2022, the two
    start families as superchains) and ``gap`` = copy mean - prior mean with its standard
    error ``gap_se``. ``branches_disagree``: the start families disagree on the order
    parameter ``cG`` (nested R-hat > ``nested_threshold`` and gap > ``z`` standard errors):
    then the pooled mean is not the posterior mean (a coexistence window; the free energy
    decides the weights). ``sign_families``: linear attention's g s > 0 / g s < 0 families
    (``sign_families``); where they are separate metastable states (``split``), only the
    same-sign chains enter the summaries (``n_used``), the opposite family is reported there.
    """
    smp = run.samples
    keep = ~np.asarray(smp.nonfinite) & ~run.stuck
    start = run.start
    fams = sign_families(smp.draws, keep)
    if fams.split:
        # distinct, non-switching sign families (large P, linear): the opposite-sign state is
        # metastable with a free-energy cost of ~1e2 nats (theory.linear_family_minima), so
        # the posterior is the same-sign family's; its chains alone enter the summaries
        keep = keep & (np.asarray(smp.draws["family"])[:, -1] == 1.0)
    stats = {}
    for k in keys:
        x = np.asarray(smp.draws[k], float)
        prior, copy = (summarize(x[keep & (start == code)]) for code in (0, 1))
        sc = start[keep]
        both = prior.n_chains >= 2 and copy.n_chains >= 2
        stats[k] = ExactStat(
            **summarize(x[keep]).to_json(), prior=prior, copy=copy,
            nested_rhat=nested_rhat(x[keep], sc) if len(set(sc.tolist())) == 2 else float("nan"),
            gap=copy.mean - prior.mean if both else float("nan"),
            gap_se=float(np.hypot(prior.mcse, copy.mcse)) if both else float("nan"))
    g = stats["cG"]
    layers = {k: stats.pop(k) for k in list(stats) if k not in EXACT_OBSERVABLES} or None
    return ExactSummary(
        n_chains=int(len(start)), n_stuck=int(run.stuck.sum()), n_nonfinite=int(np.asarray(smp.nonfinite).sum()),
        acceptance=[float(a) for a in run.acceptance], step_size=[float(e) for e in run.step_size],
        acceptance_mean=float(np.mean(run.acceptance[keep])) if keep.any() else float("nan"),
        branches_disagree=bool(np.isfinite(g.nested_rhat) and g.nested_rhat > nested_threshold
                               and abs(g.gap) > z * g.gap_se),
        sign_families=fams, n_used=int(keep.sum()), **stats, layers=layers)


def sign_families(draws: dict, keep: np.ndarray, z: float = 4.0) -> SignFamilies:
    """Linear attention's two sign families (``family`` = sign(g s), ``draws`` (chain, draw)).

    Per family (``same``: g s > 0, ``opposite``: g s < 0, by each chain's last draw): the chain
    count and the means of ``cG``, ``abs_rho``, ``c1``, ``logdensity``. ``split``: every kept
    chain stayed in one family over its draws, both families are present and their ``abs_rho``
    differ by more than ``z`` standard errors: the families are then distinct metastable
    states (docs/sampling.md) and ``abs_rho`` (the value reported) is the same-sign family's;
    otherwise chains move between families (small P, where g and s fluctuate around 0) and
    it is the pooled mean."""
    fam_all = np.asarray(draws["family"])
    fam = fam_all[:, -1]
    def means(code):
        m = keep & (fam == code)
        return FamilyMeans(int(m.sum()), **{k: (float(np.mean(np.asarray(draws[k])[m])) if m.any() else None)
                                            for k in ("cG", "abs_rho", "c1", "logdensity")})

    same, opposite = means(1.0), means(-1.0)
    constant = np.all(fam_all == fam[:, None], axis=1)
    rho = np.asarray(draws["abs_rho"], float)
    split = bool(np.all(constant[keep]) and same.n >= 2 and opposite.n >= 2)
    if split:
        a, b = summarize(rho[keep & (fam == 1.0)]), summarize(rho[keep & (fam == -1.0)])
        split = abs(a.mean - b.mean) > z * float(np.hypot(a.mcse, b.mcse))
    pooled = float(np.mean(rho[keep])) if keep.any() else float("nan")
    return SignFamilies(same, opposite, bool(split), same.abs_rho if split else pooled)


__all__ = ["default_initial_step", "default_warmup_lr", "default_warmup_steps", "ExactObserver", "ExactRun",
           "ExactSampler", "logdensity", "optimise_starts", "order_directions", "sample_exact_posterior",
           "sign_families", "start_positions", "summarize_exact"]
