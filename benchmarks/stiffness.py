"""Stiffness at L = 64: how far plain SGLD and pSGLD move the order parameter in a budget.

    python benchmarks/stiffness.py [--P 8973] [--chains 16] [--steps 3000]

Linear attention, L = 64, V = 32, at a P in the copy phase of the posterior form, chains
from the prior. Plain SGLD uses the automatic step (0.05 / the largest curvature in W);
pSGLD (RMSprop preconditioner, frozen after the first fifth of the run) uses the step given.
Prints |c_G| (mean over chains) at checkpoints against the theory's posterior
value (NUTS in order-parameter space), and the number of non-finite chains.
"""
import argparse

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
import copyjax as cj  # noqa: E402
from copyjax import chains as C, op_posterior as O, samplers as S, training  # noqa: E402
from copyjax.hyper import auto_step_size  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, default=8973)
    ap.add_argument("--chains", type=int, default=16)
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--psgld-step", type=float, default=1e-3)
    a = ap.parse_args(argv)
    L, V, act = 64, 32, "linear"
    h = cj.default_hyper(act, L)
    stats = cj.sampled_stats(jax.random.key(0), a.P, L, V).astype(jnp.float32)
    op = O.op_summary(O.sample_op_posterior(jax.random.key(1), float(a.P), L, V, act, h,
                                            n_chains=32, n_draws=100))
    print(f"theory posterior (NUTS in OP space): c_1 = {op.c1.mean:.3f}, c_G = {op.cG.mean:.3f}")
    init = training.init_ensemble(jax.random.key(2), a.chains, L, V, h, act, "prior")
    obs = lambda p: cj.reported_order_parameters(cj.attention(p.G, act), act)  # |c_G|, |rho|
    eps = auto_step_size(a.P, V, h)
    for name, alg in (("SGLD", S.sgld(stats, h, act, eps)),
                      ("pSGLD", S.psgld(stats, h, act, a.psgld_step, adapt_steps=a.steps // 5))):
        s = C.run_algorithm(jax.random.key(3), alg, init, obs, schedule=C.Schedule(a.steps, thin=a.steps // 10),
                            progress=True, desc=name)
        cG = s.draws["cG"][~s.nonfinite].mean(0)
        step = eps if name == "SGLD" else a.psgld_step
        print(f"{name} (step {step:.2e}): c_G at steps "
              + ", ".join(f"{(i + 1) * (a.steps // 10)}: {v:.3f}" for i, v in enumerate(cG))
              + f"; non-finite chains {int(s.nonfinite.sum())}/{a.chains}", flush=True)


if __name__ == "__main__":
    main()
