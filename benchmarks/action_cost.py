"""Cost of value+grad of S_P(G) through the statistics vs the naive per-sequence build.

    python benchmarks/action_cost.py [--L 64 --V 32 --naive-max 100000]

The statistics path costs O(L^2 V^2 + V^3) whatever P is; the naive path builds the pooled
features h (P x L x V) and their Gram matrices, O(P L^2 V). Ratios are from one run.
"""
import argparse

import jax
import jax.numpy as jnp

import copyjax as cj  # noqa: E402
from _timing import best_time  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int, default=64)
    ap.add_argument("--V", type=int, default=32)
    ap.add_argument("--Ps", type=int, nargs="+", default=[100, 1000, 10_000, 100_000, 1_000_000])
    ap.add_argument("--naive-max", type=int, default=100_000,
                    help="largest P for the naive path (its features take 4 P L V bytes)")
    a = ap.parse_args(argv)
    L, V = a.L, a.V
    hyper = cj.default_hyper("softmax", L)
    G = 0.5 * jax.random.normal(jax.random.key(0), (L, L), jnp.float32)

    exact = jax.jit(jax.value_and_grad(lambda G, C: cj.exact_action(G, C, hyper, "softmax")))

    @jax.jit
    def naive(G, tokens):
        def f(G):
            h = cj.pooled_features(cj.attention(G, "softmax"), tokens, V)
            y = jax.nn.one_hot(cj.copy_targets(tokens), V, dtype=h.dtype)
            return cj.action_from_features(h, y, tokens.shape[0], hyper) + 0.5 * jnp.sum(G**2)
        return jax.value_and_grad(f)(G)

    print(f"# value+grad of S_P, softmax, L={L}, V={V}, float32, {jax.devices()[0].platform}")
    print("| P | stats path (ms) | naive per-sequence (ms) | naive / stats |")
    print("|---:|---:|---:|---:|")
    for P in a.Ps:
        key = jax.random.key(P)
        # Converted once, as a sweep or sampler would do (counts < 2^24 are exact).
        C = cj.sampled_stats(key, P, L, V).astype(jnp.float32)
        _, t_exact = best_time(exact, G, C)
        if P <= a.naive_max:
            tokens = cj.streamed_tokens(key, P, L, V)
            _, t_naive = best_time(naive, G, tokens, repeat=3)
            v1, v2 = exact(G, C)[0], naive(G, tokens)[0]
            assert abs(float(v1 - v2)) <= 1e-4 * abs(float(v1)), (v1, v2)
            print(f"| {P:.0e} | {1e3*t_exact:.3f} | {1e3*t_naive:.1f} | {t_naive/t_exact:.0f} |")
        else:
            print(f"| {P:.0e} | {1e3*t_exact:.3f} | (skipped: > --naive-max) | |")


if __name__ == "__main__":
    main()
