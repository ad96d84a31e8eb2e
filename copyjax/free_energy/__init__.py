"""Free energy of the exact posterior of G along the copy order parameter: umbrella sampling
recombined by MBAR (``copyjax.mbar``).

The exact marginal ``p(G | data) ∝ exp(-S_P(G))`` (W integrated out) is sampled in windows
``k`` with a harmonic bias on the copy coordinate

    xi(G) = <G, S - U> / <S, S - U>          (xi(lambda S) = lambda: the copy logit),

``u_k(G) = S_P(G) + kappa/2 (xi(G) - c_k)^2``, one batch of vmapped adaptive-MALA chains
(``sgmcmc.adaptive_mala.build_kernel``, its step size tuned per chain during the burn-in and
frozen) for all windows at once. xi is linear in G, so the bias is a quadratic in G that
MALA handles as well as the prior. Windows may also temper the likelihood, beta -> t beta,
which is exactly the posterior on the counts t C (the statistics enter S_P only through
beta C): MBAR over (window, t) then gives the free energy at every effective data size t P
in the sampled range from one run on the same sequences.

From the recombined samples: the free-energy profile F_P over the reported order parameter
(softmax a_G, linear |c_G|) or over xi, the mass on each side of the barrier (the phase
weights), the posterior mean of the order parameter, each with MBAR's asymptotic error
(draws subsampled to be near-uncorrelated first, per chain), and the transition point where
the two phases carry equal mass.

Modules: ``coordinates`` (what the windows bias), ``umbrella`` (the sampler), ``recombination`` (MBAR,
the profile and the phase weights), ``scan`` (the tempered scan over P), ``landscape`` (minima,
barriers, equal mass); their names are re-exported here.
"""
from __future__ import annotations

from copyjax.free_energy.coordinates import (
    check_coordinate,
    COORDINATES,
    copy_coordinate,
    copy_direction,
    mean_coordinate,
)
from copyjax.free_energy.umbrella import (
    biased_logdensity,
    sample_umbrella,
    start_positions,
    UmbrellaObserver,
    UmbrellaRun,
    UmbrellaSampler,
    UmbrellaState,
)
from copyjax.free_energy.landscape import barrier_height, bin_centres, equal_weight_point, local_minima
from copyjax.free_energy.recombination import (
    Profile,
    profile,
    recombine,
    Recombined,
    softmax_phase_weights,
    softmax_windows,
    SoftmaxWindows,
)
from copyjax.free_energy.scan import Scan, scan_tempers, softmax_scan

__all__ = ["barrier_height", "biased_logdensity", "bin_centres", "check_coordinate", "COORDINATES",
           "copy_coordinate", "copy_direction", "equal_weight_point", "local_minima", "mean_coordinate", "Profile",
           "profile", "recombine", "Recombined", "sample_umbrella", "Scan", "scan_tempers", "softmax_phase_weights",
           "softmax_scan", "softmax_windows", "SoftmaxWindows", "start_positions", "UmbrellaObserver", "UmbrellaRun",
           "UmbrellaSampler", "UmbrellaState"]
