"""Deterministic minimisation shared by the modules that need a mode: optax's L-BFGS in one
jitted loop (was written out three times: ``op_posterior``, ``mask``, a test helper)."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def lbfgs_minimize(fun, x0, *, max_steps: int, tol: float = 0.0):
    """Minimise ``fun`` (scalar, differentiable) from ``x0`` (any array) with optax L-BFGS and
    its zoom line search (every accepted step descends). Stops after ``max_steps`` iterations
    or once the largest gradient entry is ``<= tol`` (``tol = 0``: always ``max_steps``).
    Returns ``(x, n_steps)``. Traceable: call it inside ``jit`` for one compilation."""
    import optax

    opt = optax.lbfgs()
    vg = optax.value_and_grad_from_state(fun)

    def cond(c):
        return (c[3] < max_steps) & (c[2] > tol)

    def body(c):
        x, state, _, i = c
        v, g = vg(x, state=state)
        u, state = opt.update(g, state, x, value=v, grad=g, value_fn=fun)
        return optax.apply_updates(x, u), state, jnp.max(jnp.abs(g)), i + 1

    init = (x0, opt.init(x0), jnp.asarray(jnp.inf, jnp.result_type(x0)), 0)
    x, _, _, n = jax.lax.while_loop(cond, body, init)
    return x, n


__all__ = ["lbfgs_minimize"]
