"""Newton solvers for the reduced theory's stationary points: a damped root finder and a
minimiser (jit-able, fixed step counts)."""
from __future__ import annotations


import jax
import jax.numpy as jnp



def newton_root(residual, x0, *, steps: int = 40, max_step: float = 2.0, jacobian=None,
                levenberg: bool = False, objective=None, with_jacobian: bool = False, tol: float | None = None):
    """Newton's method for ``residual(x) = 0`` from ``x0: (n,)``, a fixed number of steps
    (jit/vmap safe), each step clipped to ``max_step`` per coordinate. ``jacobian``: default
    ``jax.jacfwd(residual)``. ``levenberg``: shift a symmetric Jacobian (a Hessian) until
    positive definite, so the step descends where it is not. ``objective``: take the first of
    1, 1/2, ..., 1/64 of each step that lowers it (robust on stiff actions; plain steps can
    jump between basins, which the multi-start search for every minimum relies on).
    The theory's one Newton solver: minima (``newton_minimize``) and the mean-field
    self-consistency equations. ``with_jacobian``: ``residual(x)`` returns ``(r, J)`` in one
    evaluation (where both come from one expensive pass). ``tol``: stop early once
    ``max |r(x)| <= tol (1 + max |x|)`` (a ``while_loop``, at most ``steps`` steps): the same
    iterate as the full run to rounding, since a converged Newton step is ~0. Under ``vmap``
    a while loop runs until every member stops, so map over starts (``jax.lax.map``) for the
    saving."""
    jac = jax.jacfwd(residual) if jacobian is None else jacobian
    if tol is not None:
        if levenberg or objective is not None:
            raise ValueError("tol: early stopping is for plain Newton steps (levenberg=False, objective=None)")
        both = residual if with_jacobian else (lambda x: (residual(x), jac(x)))

        def go_on(c):
            x, r, _, k = c
            return (k < steps) & ~(jnp.max(jnp.abs(r)) <= tol * (1 + jnp.max(jnp.abs(x))))

        def step(c):
            x, r, J, k = c
            x = x - jnp.clip(jnp.linalg.solve(J, r), -max_step, max_step)
            return (x, *both(x), k + 1)

        return jax.lax.while_loop(go_on, step, (x0, *both(x0), 0))[0]

    def body(x, _):
        r, J = residual(x) if with_jacobian else (residual(x), jac(x))
        if levenberg:
            shift = jnp.maximum(0.0, 1e-6 - jnp.min(jnp.linalg.eigvalsh(J))) + 1e-9
            J = J + shift * jnp.eye(x.shape[0], dtype=x.dtype)
        step = jnp.clip(jnp.linalg.solve(J, r), -max_step, max_step)
        if objective is None:
            return x - step, None
        ts = 0.5 ** jnp.arange(7, dtype=x.dtype)
        ft = jax.vmap(lambda t: objective(x - t * step))(ts)
        ok = jnp.isfinite(ft) & (ft < objective(x))
        return x - jnp.where(jnp.any(ok), ts[jnp.argmax(ok)], 0.0) * step, None

    x, _ = jax.lax.scan(body, x0, None, length=steps)
    return x


def newton_minimize(fun, x0, *, steps: int = 40, max_step: float = 2.0, backtrack: bool = False):
    """Damped Newton minimisation of a small smooth ``fun: (n,) -> scalar`` (``newton_root`` on
    its gradient with the Hessian, Levenberg-shifted; ``backtrack``: line search on ``fun``)."""
    return newton_root(jax.grad(fun), x0, steps=steps, max_step=max_step, jacobian=jax.hessian(fun),
                       levenberg=True, objective=fun if backtrack else None)


__all__ = ["newton_minimize", "newton_root"]
