"""Run thousands of chains at once: ``lax.scan`` over ``vmap(step)``, sharded over devices.

Chain i uses the key ``fold_in(key, i)`` and, at step t, ``fold_in(fold_in(key, i), t)``:
its draws do not depend on how many chains run or how they are split over devices.
The chain axis is sharded over ``jax.devices()`` with a ``NamedSharding``; the run is a
Python loop over blocks of steps (one compiled function), which drives the progress bar
and lets callers checkpoint between blocks.

One contract: ``run_chains(key, spec, init_positions, observe, data, *, schedule, layout)``
with a hashable ``spec.build(data) -> SamplingAlgorithm`` and ``observe(position, data)``;
``run_algorithm`` wraps a plain ``SamplingAlgorithm`` and ``observe(position)``.
"""
from __future__ import annotations

import inspect
import math
from functools import partial
from typing import Callable, NamedTuple

import blackjax
import jax
import jax.numpy as jnp
import numpy as np
from jax import shard_map
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from copyjax._checks import check_burn_in, check_size
from copyjax.schema import Summary


class Samples(NamedTuple):
    """Output of ``run_chains``.

    ``draws``: dict name -> ``(chain, draw)`` arrays of the observed scalars;
    ``final``: the final sampler states (chain axis first); ``nonfinite``: ``(chain,)`` bool,
    True for chains whose state or draws turned non-finite (left out of every summary; not
    NUTS's divergent transitions, which ``op_posterior.OPSamples.divergent`` counts);
    ``info``: dict of per-chain means of numeric kernel infos (e.g. acceptance rate) over the
    steps after the burn-in.
    """

    draws: dict
    final: object
    nonfinite: np.ndarray
    info: dict


def chain_mesh(devices=None) -> Mesh:
    """A 1-d mesh named ``chains`` over the given (default: all) devices."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("chains",))


def chain_keys(key, chains):
    """Per-chain keys ``fold_in(key, i)`` for ``i`` in ``chains``: a count n (``0..n-1``) or
    an array of chain indices."""
    ids = jnp.arange(chains) if isinstance(chains, int) else jnp.asarray(chains)
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(ids)


class Schedule(NamedTuple):
    """When a chain is recorded: ``num_steps`` steps, the first ``burn_in`` not recorded,
    then every ``thin``-th, giving ``num_draws = (num_steps - burn_in) // thin`` draws."""

    num_steps: int
    burn_in: int = 0
    thin: int = 1

    @property
    def num_draws(self) -> int:
        return (self.num_steps - self.burn_in) // self.thin

    def check(self) -> "Schedule":
        check_size("num_steps", self.num_steps, 1)
        check_size("thin", self.thin, 1)
        check_burn_in(self.burn_in, self.num_steps)
        if self.num_draws < 1:
            raise ValueError(f"thin must be <= num_steps - burn_in = {self.num_steps - self.burn_in}, "
                             f"got {self.thin}")
        return self


class Layout(NamedTuple):
    """How the chains are laid out; none of it changes a chain's draws except ``chain_block``
    (XLA picks matmul blockings by batch size, so two runs agree bit for bit when they use
    the same ``chain_block``, whatever the device count).

    ``devices``: the devices to shard the chain axis over (default ``jax.devices()``);
    ``chain_block``: chains stepped together under ``vmap`` (``lax.map`` over the blocks of a
    device; default one block per device, or the spec's ``preferred_chain_block`` where it
    is smaller); ``block_draws``: draws per host round trip (progress bar and checkpoint
    granularity; default about 50 round trips per run); ``chain_ids``: the chain indices the
    keys are folded from (default ``0..n_chains-1``), so one chain of a large run can be
    rerun alone."""

    devices: object = None
    chain_block: int | None = None
    block_draws: int | None = None
    chain_ids: object = None


class Fixed(NamedTuple):
    """A plain blackjax ``SamplingAlgorithm`` as a spec: ``build(data)`` returns it whatever
    the data (which are then usually None)."""

    algorithm: object

    def build(self, data):
        return self.algorithm


class PositionObserver(NamedTuple):
    """``observe(position) -> dict`` as the driver's ``observe(position, data)``."""

    fn: Callable

    def __call__(self, position, data):
        return self.fn(position)


def _is_multiprocess() -> bool:
    return jax.process_count() > 1


def _to_global(x, sharding):
    """``x`` (the same full host value in every process) as a global array laid out by
    ``sharding``: each process supplies its own devices' slices (one process: ``device_put``)."""
    if not _is_multiprocess():
        return jax.device_put(x, sharding)
    host = np.asarray(x)
    return jax.make_array_from_callback(host.shape, sharding, lambda index: host[index])


def _to_host(x) -> np.ndarray:
    """A global array as one NumPy array in every process: the one collective of a
    multi-process run (``process_allgather``; one process: ``np.asarray``)."""
    if not _is_multiprocess() or getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))


def run_chains(key, spec, init_positions, observe: Callable, data=None, *, schedule: Schedule | None = None,
               layout: Layout = Layout(), progress: bool = False, desc: str = "chains") -> Samples:
    """Run ``n_chains`` chains of the sampler ``spec`` builds.

    ``spec``: hashable, with ``build(data) -> blackjax SamplingAlgorithm`` and optionally
    ``data_at_step(data, t)`` (the data at step t, e.g. a minibatch shared by all chains) and
    ``preferred_chain_block`` (a plain ``SamplingAlgorithm`` goes through ``run_algorithm``
    or ``Fixed``). ``observe(position, data) -> dict`` of scalars, hashable (a
    ``PositionObserver`` for functions of the position alone). ``data``: a pytree of arrays
    (statistics, step size, ...) that enters the compiled functions as an argument, so a
    sweep over P with fixed shapes compiles once. ``init_positions``: pytree with a leading
    chain axis. ``schedule``: steps, burn-in, thinning (``Schedule``); ``layout``: devices,
    chain blocks, host round trips, chain indices (``Layout``).

    Under ``jax.distributed`` (``copyjax.distributed``: one process per host, ``jax.devices()``
    spanning them all) every process calls it with the same arguments: the chain axis is sharded
    over every device of every process, each process feeds its own devices' chains, ``data`` is
    replicated, and the draws, final states and infos are gathered once at the end, so every
    process returns the same ``Samples``; the progress bar is process 0's.
    """
    if schedule is None:
        raise TypeError("run_chains() needs schedule=Schedule(num_steps, burn_in, thin)")
    if not hasattr(spec, "build"):
        raise TypeError("spec must have build(data) -> SamplingAlgorithm; for a plain SamplingAlgorithm "
                        "use run_algorithm (or Fixed(algorithm) with a PositionObserver)")
    n_chains = jax.tree.leaves(init_positions)[0].shape[0]
    check_size("n_chains", n_chains, 1)
    schedule.check()
    num_steps, burn_in, thin, num_draws = *schedule, schedule.num_draws
    mesh = chain_mesh(layout.devices)
    n_dev = mesh.size
    chain_block = layout.chain_block
    if chain_block is None:
        chain_block = -(-n_chains // n_dev)
        preferred = getattr(spec, "preferred_chain_block", None)
        if preferred:
            chain_block = min(chain_block, preferred)
    chain_block = check_size("chain_block", chain_block, 1)
    # pad to whole blocks on every device; padded chains are dropped at the end
    n_pad = -n_chains % (n_dev * chain_block)
    pad = lambda x: jnp.concatenate([x, jnp.repeat(x[:1], n_pad, 0)]) if n_pad else x
    shard = NamedSharding(mesh, PartitionSpec("chains"))
    positions = jax.tree.map(lambda x: _to_global(pad(x), shard), init_positions)
    ids = n_chains if layout.chain_ids is None else jnp.asarray(layout.chain_ids)
    if not isinstance(ids, int) and ids.shape != (n_chains,):
        raise ValueError(f"chain_ids must have shape ({n_chains},), got {ids.shape}")
    keys = chain_keys(key, ids)
    if _is_multiprocess():
        keys = jax.random.wrap_key_data(_to_global(pad(jax.random.key_data(keys)), shard))
        if data is not None:
            data = jax.tree.map(lambda x: _to_global(x, NamedSharding(mesh, PartitionSpec())), data)
    else:
        keys = jax.device_put(pad(keys), shard)
    static = dict(algorithm=spec, observe=observe, mesh=mesh, chain_block=chain_block)
    states = _init(positions, keys, data, algorithm=spec)
    advance = lambda states, keys, t0, n: _advance(states, keys, t0, data, n=n, **static)
    obs = lambda states: _observe(states, data, **static)

    block_draws = layout.block_draws or max(1, math.ceil(num_draws / 50))
    bar = None
    if progress and jax.process_index() == 0:
        from tqdm.auto import tqdm

        bar = tqdm(total=num_steps, desc=desc, unit="step")
    t = 0
    info_sum = None
    if burn_in:
        # kernel infos are averaged over the recorded steps only (after the burn-in)
        states, _ = advance(states, keys, t, burn_in)
        t += burn_in
        if bar:
            bar.update(burn_in)
    draws = []
    while len(draws) < num_draws:
        nb = min(block_draws, num_draws - len(draws))
        for _ in range(nb):
            states, acc = advance(states, keys, t, thin)
            t += thin
            info_sum = acc if info_sum is None else jax.tree.map(jnp.add, info_sum, acc)
            draws.append(obs(states))
        if bar:
            bar.update(nb * thin)
    if bar:
        bar.close()
    if _is_multiprocess():  # the one collective: a gather per observable, state leaf and info field
        stacked = {k: _to_host(jnp.stack([d[k] for d in draws], axis=1))[:n_chains] for k in draws[0]}
        states = jax.tree.map(lambda x: jax.random.wrap_key_data(jnp.asarray(_to_host(jax.random.key_data(x))))
                              if _is_key(x) else jnp.asarray(_to_host(x)), states)
        info_sum = jax.tree.map(_to_host, info_sum)
    else:
        stacked = {k: np.stack([np.asarray(d[k]) for d in draws], axis=1)[:n_chains] for k in draws[0]}
    leaves = [np.asarray(x)[:n_chains] for x in jax.tree.leaves(states) if not _is_key(x)]
    finite_state = np.all([np.all(np.isfinite(x.reshape(n_chains, -1)), axis=1) for x in leaves
                           if np.issubdtype(x.dtype, np.floating) and x.size], axis=0)
    finite_draws = np.all([np.all(np.isfinite(v), axis=1) for v in stacked.values()], axis=0)
    final = jax.tree.map(lambda x: x[:n_chains], states)
    info = {k: np.asarray(v)[:n_chains] / (num_draws * thin) for k, v in (info_sum or {}).items()}
    return Samples(stacked, final, ~(finite_state & finite_draws), info)


def run_algorithm(key, algorithm, init_positions, observe: Callable, *, schedule: Schedule,
                  layout: Layout = Layout(), progress: bool = False, desc: str = "chains") -> Samples:
    """``run_chains`` for a plain blackjax ``SamplingAlgorithm`` and ``observe(position)``
    (no data: what the algorithm needs is closed over, so every new algorithm compiles anew)."""
    return run_chains(key, Fixed(algorithm), init_positions, PositionObserver(observe), None,
                      schedule=schedule, layout=layout, progress=progress, desc=desc)


def _is_key(x) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)


def _data_at_step(algorithm, data, t):
    """``algorithm.data_at_step(data, t)`` for specs whose data change with the step."""
    if data is None or not hasattr(algorithm, "data_at_step"):
        return data
    return algorithm.data_at_step(data, t)


_INIT_FOLD = 2**31 - 1  # the init key of a chain: fold_in(chain key, this); steps use 0, 1, ...


def _init_one(alg, position, key):
    """``alg.init(position, rng_key)`` where the init takes a key (blackjax's convention for
    inits that draw, e.g. pSGLD's first gradient on a minibatch), else ``alg.init(position)``."""
    if "rng_key" in inspect.signature(alg.init).parameters:
        return alg.init(position, jax.random.fold_in(key, _INIT_FOLD))
    return alg.init(position)


@partial(jax.jit, static_argnames=("algorithm",))
def _init(positions, keys, data, *, algorithm):
    alg = algorithm.build(data)
    return jax.vmap(lambda p, k: _init_one(alg, p, k))(positions, keys)


def _blocked(alg, chain_block, s, keys, t):
    """One step of every chain: (chains, ...) -> (blocks, chain_block, ...), vmap inside a
    block and lax.map across blocks."""
    one = lambda state, k: alg.step(jax.random.fold_in(k, t), state)
    split = lambda x: x.reshape((x.shape[0] // chain_block, chain_block) + x.shape[1:])
    out = jax.lax.map(lambda a: jax.vmap(one)(a[0], a[1]), (jax.tree.map(split, s), split(keys)))
    return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:]), out)


_SPEC = PartitionSpec("chains")


@partial(jax.jit, static_argnames=("algorithm", "observe", "mesh", "chain_block", "n"))
def _advance(states, keys, t0, data, *, algorithm, observe, mesh, chain_block, n):
    """n steps of every chain. shard_map: each device runs the same per-device program on
    its own chains, so a chain's arithmetic does not depend on the device count."""
    def local(states, keys, t0, data):
        # data that change with the step (a minibatch shared by all chains) are formed here,
        # once per step and outside the chains' vmap
        step = lambda s, t: _blocked(algorithm.build(_data_at_step(algorithm, data, t)), chain_block, s, keys, t)

        def body(carry, t):
            s, acc = carry
            s, info = step(s, t)
            acc = jax.tree.map(lambda a, x: a + x.astype(a.dtype), acc, _numeric(info))
            return (s, acc), None

        acc0 = jax.tree.map(lambda x: jnp.zeros(x.shape, jnp.float32),
                            _numeric(jax.eval_shape(step, states, 0)[1]))
        (states, acc), _ = jax.lax.scan(body, (states, acc0), t0 + jnp.arange(n))
        return states, acc

    rep = PartitionSpec()
    return shard_map(local, mesh=mesh, in_specs=(_SPEC, _SPEC, rep, rep),
                     out_specs=(_SPEC, _SPEC), check_vma=False)(states, keys, t0, data)


@partial(jax.jit, static_argnames=("algorithm", "observe", "mesh", "chain_block"))
def _observe(states, data, *, algorithm, observe, mesh, chain_block):
    def local(states, data):
        split = lambda x: x.reshape((x.shape[0] // chain_block, chain_block) + x.shape[1:])
        out = jax.lax.map(jax.vmap(lambda st: observe(st.position, data)),
                          jax.tree.map(split, states))
        return jax.tree.map(lambda x: x.reshape((x.shape[0] * x.shape[1],) + x.shape[2:]), out)

    return shard_map(local, mesh=mesh, in_specs=(_SPEC, PartitionSpec()), out_specs=_SPEC,
                     check_vma=False)(states, data)


def _numeric(info) -> dict:
    """The float/bool fields of a kernel info NamedTuple, as a dict."""
    if not hasattr(info, "_fields"):
        return {}
    return {k: v for k, v in info._asdict().items()
            if hasattr(v, "dtype") and (jnp.issubdtype(v.dtype, jnp.floating) or v.dtype == jnp.bool_)}


def summarize(draws: np.ndarray, exclude: np.ndarray | None = None) -> Summary:
    """Mean, sd, Monte Carlo standard error, R-hat and ESS of ``draws: (chain, draw)``
    over the chains not in ``exclude: (chain,)`` bool (e.g. ``Samples.nonfinite``);
    ``n_excluded`` counts those left out. ``rhat``: ``blackjax.rhat`` (blackjax >= 1.7:
    rank-normalised split R-hat); ``split_rhat``: numpyro's split Gelman-Rubin; ``ess``:
    numpyro's ``effective_sample_size``; ``mcse = sd / sqrt(ess)``."""
    import numpyro.diagnostics as nd

    x = np.asarray(draws, dtype=float)
    keep = np.ones(x.shape[0], bool) if exclude is None else ~np.asarray(exclude)
    x = x[keep]
    counts = dict(n_chains=int(x.shape[0]), n_excluded=int((~keep).sum()))
    nan = float("nan")
    if x.shape[0] == 0:
        return Summary(**counts, mean=nan, sd=nan, mcse=nan, rhat=nan, split_rhat=nan, ess=nan)
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if x.size > 1 else 0.0
    if x.size and np.ptp(x) == 0:  # constant draws (an order parameter a mask fixes at 0): no ESS, no R-hat
        return Summary(**counts, mean=mean, sd=0.0, mcse=0.0, rhat=nan, split_rhat=nan, ess=nan)
    if x.shape[0] >= 2 and x.shape[1] >= 4:
        # numpyro's ESS (NumPy; the same estimator as blackjax.ess, which re-traces for
        # every shape: 0.2-1 s per call against 0.2 ms)
        ess = float(nd.effective_sample_size(x))
        return Summary(**counts, mean=mean, sd=sd, mcse=sd / math.sqrt(max(ess, 1.0)),
                       rhat=float(_RHAT(jnp.asarray(x))),
                       split_rhat=float(nd.split_gelman_rubin(x[:, :, None])[0]), ess=ess)
    return Summary(**counts, mean=mean, sd=sd, mcse=sd / math.sqrt(max(x.size, 1)), rhat=nan, split_rhat=nan,
                   ess=nan)


# jitted: called eagerly, blackjax's rank-normalised R-hat compiles its ops one by one for every
# new chain count (2.4-2.7 s a shape against 0.6 s as one program, which the persistent
# compilation cache then keeps; ``benchmarks/summarize_cost.py``)
_RHAT = jax.jit(blackjax.rhat, static_argnames=("chain_axis", "sample_axis"))
_ESS_BULK = jax.jit(blackjax.diagnostics.ess_bulk)
_ESS_TAIL = jax.jit(blackjax.diagnostics.ess_tail)


def ess_bulk_tail(draws: np.ndarray) -> tuple[float, float]:
    """Rank-normalised bulk and tail ESS (Vehtari et al. 2021, "Rank-normalization, folding, and
    localization"; ``blackjax.diagnostics.ess_bulk`` / ``ess_tail``, jitted) of ``draws: (chain,
    draw)``; NaN where they are not defined (fewer than 2 chains or 4 draws, non-finite draws,
    constant chains)."""
    x = np.asarray(draws, float)
    nan = (float("nan"), float("nan"))
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 4 or not np.isfinite(x).all() or np.ptp(x) == 0:
        return nan
    xj = jnp.asarray(x)
    return float(_ESS_BULK(xj)), float(_ESS_TAIL(xj))


def nested_rhat(draws: np.ndarray, superchain: np.ndarray) -> float:
    """Nested R-hat (Margossian et al. 2022, "Nested R-hat: assessing the convergence of
    Markov chain Monte Carlo when running many short chains"), ``draws: (chain, draw)``,
    ``superchain: (chain,)`` labels (chains of one superchain share a start family).

    ``nR = sqrt(1 + B / W)``: B the variance of the superchain means, W the mean over
    superchains of (variance of its chain means + mean within-chain variance). Close to 1
    when every superchain has forgotten its start; large when they sit in different modes.
    Neither blackjax nor numpyro provides it.
    """
    x = np.asarray(draws, float)
    lab = np.asarray(superchain)
    groups = [x[lab == u] for u in np.unique(lab)]
    if len(groups) < 2 or x.shape[1] < 2:
        return float("nan")
    chain_means = [g.mean(axis=1) for g in groups]
    sc_means = np.array([m.mean() for m in chain_means])
    B = sc_means.var(ddof=1)
    W = np.mean([(m.var(ddof=1) if len(m) > 1 else 0.0) + g.var(axis=1, ddof=1).mean()
                 for m, g in zip(chain_means, groups)])
    if W <= 0:
        return float("inf") if B > 0 else 1.0
    return float(np.sqrt(1.0 + B / W))


__all__ = ["Fixed", "Layout", "PositionObserver", "Samples", "Schedule", "chain_keys", "chain_mesh", "ess_bulk_tail",
           "nested_rhat",
           "run_algorithm", "run_chains", "summarize"]
