"""SGLD chains on the network's (W, G) from each start: the prior (relaxation), exact joint
draws of (W, G) (drift away from the posterior) or the copy pattern (hysteresis)."""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from copyjax import chains, masks, network, samplers, training
from copyjax.data import stats_size, streamed_tokens
from copyjax.hyper import auto_step_size
from copyjax.point.base import Method, draws_with_prefix
from copyjax.point.exact_chains import exact_joint_starts
from copyjax.schema import SGLD_STARTS, SGLDRuns, SGLDSummary

OBS_KEYS = ("c1", "cG", "abs_rho", "family", "coverage", "loss", "logpost")
# marker and label per start (the starts' index in schema.SGLD_STARTS keys their random streams)
SGLD_LABEL = {"prior": ("o", "SGLD relaxation from the prior"), "exact": ("s", "SGLD from exact posterior draws"),
              "copy": ("D", "SGLD from the copy pattern")}


def held_out_loss(final, stats_test, hyper, activation, mask="full") -> np.ndarray:
    """Per-sequence loss of every network of ``final`` (a ``network.Params`` with a leading
    axis) on fresh statistics, under ``mask``."""
    return np.asarray(_test_loss_jit(final, stats_test, hyper=hyper, activation=activation, mask=masks.get(mask)))


@partial(jax.jit, static_argnames=("hyper", "activation", "mask"))
def _test_loss_jit(final, stats_test, *, hyper, activation, mask):
    # compiled once per sweep: the statistics are an argument
    P = stats_size(stats_test)

    def one(p):
        A = mask.attention(p.G, activation)
        return -mask.log_likelihood(p.W, A, stats_test, hyper.beta) / (hyper.beta * P)

    return jax.vmap(one)(final)


def _stat(section, key: str, stat: str = "mean"):
    """``getattr(section.<key>, stat)``, None where the start did not run."""
    return None if section is None else getattr(getattr(section, key), stat)


class SGLDMethod(Method):
    name = "sgld"
    prefix = "sgld"
    config = {"chains": 8, "steps": 200, "step_size": None, "batch": 0, "sgld_starts": ["prior", "exact"]}
    csv_columns = ("sgld_prior_cG", "sgld_prior_cG_sd", "sgld_copy_cG", "sgld_copy_cG_sd", "sgld_exact_cG",
                   "sgld_exact_cG_sd", "sgld_rhat_cG", "sgld_ess_cG", "sgld_divergent", "sgld_loss", "coverage")

    def run(self, ctx):
        c, act, h, P = ctx.cfg, ctx.activation, ctx.hyper, ctx.P
        eps = c["step_size"] or auto_step_size(P, ctx.V, h)
        obs = network.Observer(h, act, OBS_KEYS, ctx.mask)
        data = {"stats": ctx.stats, "step_size": jnp.asarray(eps, jnp.float32)}
        if c["batch"]:
            # the same sequences the statistics count (same chunking and keys)
            data["tokens"] = streamed_tokens(ctx.k_data, P, ctx.L, ctx.V, tokens=ctx.tokens)
            layout = c.get("batch_layout", "independent")
            if layout == "shared":  # one minibatch per step for all chains, from this key
                data["batch_key"] = jax.random.fold_in(ctx.k_chain, 1000)
            alg = samplers.NetworkSampler(h, act, "sgld", min(c["batch"], P), layout=layout, mask=ctx.mask)
        else:
            alg = samplers.NetworkSampler(h, act, "sgld", mask=ctx.mask)
        run = ctx.shared.get("exact")
        starts = [s for s in c["sgld_starts"] if s != "exact" or run is not None]
        summaries, arrays = {}, {}
        for start in starts if c["chains"] else ():
            ki = jax.random.fold_in(ctx.k_init, SGLD_STARTS.index(start))
            if start == "exact":
                init = exact_joint_starts(ki, run, c["chains"], ctx.stats, h, act, ctx.mask)
            else:
                init = training.init_ensemble(ki, c["chains"], ctx.L, ctx.V, h, act, start, mask=ctx.mask)
            s = chains.run_chains(jax.random.fold_in(ctx.k_chain, SGLD_STARTS.index(start)), alg, init, obs, data,
                                  schedule=chains.Schedule(c["steps"], c["steps"] // 2, max(1, c["steps"] // 100)),
                                  progress=ctx.progress, desc=f"{act} P={P} sgld/{start}")
            for k in OBS_KEYS:
                arrays[f"{start}_{k}"] = s.draws[k]
            arrays[f"{start}_divergent"] = s.nonfinite  # (saved name kept)
            arrays[f"{start}_test_loss"] = tl = held_out_loss(s.final.position, ctx.stats_test, h, act, ctx.mask)
            summaries[start] = SGLDSummary(
                *(chains.summarize(s.draws[k], s.nonfinite) for k in ("c1", "cG", "abs_rho", "loss", "coverage")),
                test_loss=float(np.mean(tl[~s.nonfinite])) if (~s.nonfinite).any() else None)
        return SGLDRuns(eps, summaries), arrays

    def to_json(self, r):
        # file layout: the step size at the top level, one section per start
        return {"step_size": r.step_size} | {f"sgld_{s}": r.starts[s].to_json() for s in r.starts}

    def from_json(self, d):
        if d.get("step_size") is None:
            return None
        return SGLDRuns(d["step_size"], {s: SGLDSummary.from_json(d[f"sgld_{s}"]) for s in SGLD_STARTS
                                          if f"sgld_{s}" in d})

    def csv_cells(self, p):
        st = p.sgld.starts
        prior = st.get("prior")
        return {"sgld_prior_cG": _stat(prior, "cG"), "sgld_prior_cG_sd": _stat(prior, "cG", "sd"),
                "sgld_copy_cG": _stat(st.get("copy"), "cG"), "sgld_copy_cG_sd": _stat(st.get("copy"), "cG", "sd"),
                "sgld_exact_cG": _stat(st.get("exact"), "cG"),
                "sgld_exact_cG_sd": _stat(st.get("exact"), "cG", "sd"),
                "sgld_rhat_cG": _stat(prior, "cG", "rhat"), "sgld_ess_cG": _stat(prior, "cG", "ess"),
                "sgld_divergent": _stat(prior, "cG", "n_excluded"), "sgld_loss": _stat(prior, "loss"),
                "coverage": _stat(prior, "coverage")}

    def report(self, p):
        labels = (("prior", "SGLD relaxation from prior"), ("exact", "SGLD from exact draws"),
                  ("copy", "SGLD from copy"))
        return " | ".join(f"{lab} {p.sgld.starts[s].cG.mean:.3f}" for s, lab in labels if s in p.sgld.starts)

    def _series(self, pts):
        for start, (mk, lab) in SGLD_LABEL.items():
            with_start = [p for p in pts if p.sgld is not None and start in p.sgld.starts]
            if with_start:
                yield start, mk, lab, with_start

    def draw_order_parameter(self, ax, res, act, pts, key, label, color):
        for start, mk, lab, ps in self._series(pts):
            off = {"prior": 0.97, "exact": 1.03, "copy": 1.09}[start]
            ax.errorbar([p.P * off for p in ps], [getattr(p.sgld.starts[start], key).mean for p in ps],
                        [getattr(p.sgld.starts[start], key).sd for p in ps], fmt=mk, color=color,
                        mfc="none", ms=5, capsize=2, alpha=0.7, label=f"{lab}: {label}")

    def draw_loss(self, ax, res, act, pts):
        for start, mk, lab, ps in self._series(pts):
            Ps = [p.P for p in ps]
            ax.plot(Ps, [p.sgld.starts[start].loss.mean for p in ps], mk, mfc="none", label=f"{lab}: train")
            ax.plot(Ps, [np.nan if p.sgld.starts[start].test_loss is None else p.sgld.starts[start].test_loss
                         for p in ps], mk, alpha=0.5, label=f"{lab}: test")

    def draw_coverage(self, ax, act, pts):
        for start, mk, lab, ps in self._series(pts):
            ax.plot([p.P for p in ps], [p.sgld.starts[start].coverage.mean for p in ps], mk + "-", mfc="none",
                    label=f"{act}, {lab}")

    def chains(self, arrays):
        out = {}
        for s in SGLD_STARTS:
            d = draws_with_prefix(arrays, f"{self.prefix}_{s}", OBS_KEYS)
            if d:
                out[f"{self.prefix}_{s}"] = d
        return out


METHOD = SGLDMethod()


__all__ = ["held_out_loss", "METHOD", "OBS_KEYS", "SGLD_LABEL", "SGLDMethod"]
