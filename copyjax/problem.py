"""One copy task as a hashable description, and the theory's one home around it.

``Problem(L, V, activation, hyper)`` fixes everything but the amount of data P; its methods
are the theory at a P or over P, in the order its layers call each other (each calls only
the layers below it):

1. actions (``copyjax.reduced``: the reduced effective actions in the order parameters);
2. minima and transitions (``copyjax.theory``: every minimum of a form at P, the curves
   over P, the transition points);
3. order-parameter sampling (``copyjax.op_posterior``: the posterior form's modes and NUTS
   draws, its a_G profile).

    prob = Problem.make(64, 32, "softmax")
    prob.transition_points().P_star               # 3667 (MAP form)
    prob.transition_points("posterior").P_star    # 4225 (posterior form)
    prob.minima(5000, "posterior")                # two minima (a_G 0.002, 0.539): coexistence

Being hashable, a ``Problem`` keys caches and compiled code like the ``(L, V, hyper)`` it
replaces; the module functions it calls keep their signatures.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import jax.numpy as jnp

from copyjax import theory
from copyjax._checks import check_activation, check_form, check_P, check_size
from copyjax.data import expected_stats
from copyjax.hyper import Hyper, default_hyper

if TYPE_CHECKING:
    from copyjax import op_posterior


def _P(P):
    """P checked (a finite number > 0) and passed on as given (an int stays an int)."""
    check_P(P)
    return P


class Problem(NamedTuple):
    """Sequence length ``L``, vocabulary ``V``, ``activation`` ("softmax" or "linear") and
    the hyperparameters (``Hyper``). Build it with ``Problem.make`` (checks, default
    hyperparameters)."""

    L: int
    V: int
    activation: str
    hyper: Hyper

    @classmethod
    def make(cls, L: int, V: int, activation: str, hyper: Hyper | None = None) -> "Problem":
        L, V = check_size("L", L, 2), check_size("V", V, 2)
        check_activation(activation)
        return cls(L, V, activation, default_hyper(activation, L) if hyper is None else hyper)

    # data
    def expected_stats(self, P, dtype=jnp.float32):
        """``E C: (L, L, V, V)`` at P (``data.expected_stats``)."""
        return expected_stats(P, self.L, self.V, dtype)

    # layer 2: minima and transitions
    def minima(self, P, form: str = "map") -> list:
        """Every local minimum of the ``form``'s action at P (``theory.minima``)."""
        return theory.minima(_P(P), self.L, self.V, self.activation, self.hyper, check_form(form))

    def global_minimum(self, P, form: str = "map"):
        """The minimum of lowest action at P."""
        return min(self.minima(P, form), key=lambda m: m.action)

    def minimum_loss(self, m, P, form: str = "map") -> float:
        """The per-sequence training loss at a minimum ``m`` (``theory.minimum_loss``)."""
        return theory.minimum_loss(m, _P(P), self.L, self.V, self.activation, self.hyper, check_form(form))

    def theory_curve(self, Ps, form: str = "map") -> dict:
        """The global minimum's order parameters and loss over the grid ``Ps``."""
        return theory.theory_curve(Ps, self.L, self.V, self.activation, self.hyper, check_form(form))

    def transition_points(self, form: str = "map", P_range=None) -> theory.TransitionPoints:
        """P*, spinodals (softmax) or P_1, P_x (linear) of the ``form``."""
        return theory.transition_points(self.L, self.V, self.activation, self.hyper, check_form(form), P_range)

    # layer 3: the posterior form in order-parameter space (op_posterior imported on use: it
    # brings blackjax and the chain driver, 0.25 s that `import copyjax` need not pay)
    def posterior_modes(self, P):
        """Modes of the posterior form at P with their Laplace masses."""
        from copyjax import op_posterior

        return op_posterior.posterior_modes(_P(P), self.L, self.V, self.activation, self.hyper)

    def sample_op_posterior(self, key, P, **kwargs) -> op_posterior.OPSamples:
        """NUTS draws of the posterior form at P (``op_posterior.sample_op_posterior``)."""
        from copyjax import op_posterior

        return op_posterior.sample_op_posterior(key, _P(P), self.L, self.V, self.activation, self.hyper,
                                                **kwargs)

    def softmax_aG_profile(self, P, edges, divide: float, **kwargs) -> op_posterior.TheoryProfile:
        """The posterior form's free energy over a_G bins (softmax)."""
        if self.activation != "softmax":
            raise ValueError(f"softmax_aG_profile needs activation 'softmax', got {self.activation!r}")
        from copyjax import op_posterior

        return op_posterior.softmax_aG_profile(_P(P), self.L, self.V, edges, divide, self.hyper, **kwargs)


__all__ = ["Problem"]
