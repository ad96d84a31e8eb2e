"""Small demo: exact S_P and the order parameters of its minima at a few P.

    python scripts/demo.py [--L 16 --V 8 --Ps 50 200 800 3200]

For each activation and P it samples P copy-task sequences, then minimises the exact
effective action S_P(G) with optax Adam from two starts (near zero and near the copy
pattern) and prints S_P, the order parameters (c_1, c_G) and the coverage of each minimum.
"""
import argparse

import jax
import jax.numpy as jnp
import optax

import copyjax as cj
from _cli import int_at_least, nonneg_int, positive_int


def minimise(G0, C, hyper, activation, steps=600, lr=0.05):
    opt = optax.adam(lr)
    loss = lambda G: cj.exact_action(G, C, hyper, activation)

    def body(carry, _):
        G, s = carry
        v, g = jax.value_and_grad(loss)(G)
        u, s = opt.update(g, s)
        return (optax.apply_updates(G, u), s), v

    (G, _), _ = jax.lax.scan(body, (G0, opt.init(G0)), None, length=steps)
    return G, loss(G)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int_at_least("--L", 2), default=16)
    ap.add_argument("--V", type=int_at_least("--V", 2), default=8)
    ap.add_argument("--Ps", type=positive_int("--Ps"), nargs="+", default=[50, 200, 800, 3200])
    ap.add_argument("--seed", type=nonneg_int("--seed"), default=0)
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)
    L, V = a.L, a.V
    S = cj.shift_matrix(L, jnp.float64)
    run = jax.jit(minimise, static_argnames=("activation",))
    print(f"exact S_P minima, L={L}, V={V} (start: 'zero' = small random G, 'copy' = copy pattern)")
    print(f"{'activation':>10} {'P':>6} {'start':>5} {'S_P':>12} {'c_1':>8} {'|c_G|':>8} {'coverage':>9}")
    for activation in ["softmax", "linear"]:
        hyper = cj.default_hyper(activation, L)
        copy_init = 4.0 * S if activation == "softmax" else S
        for P in a.Ps:
            C = cj.sampled_stats(jax.random.key(a.seed + P), P, L, V).astype(jnp.float64)
            small = 0.01 * jax.random.normal(jax.random.key(a.seed), (L, L), jnp.float64)
            for name, G0 in [("zero", small), ("copy", copy_init)]:
                G, val = run(G0, C, hyper, activation)
                A = cj.attention(G, activation)
                op = cj.reported_order_parameters(A, activation)  # linear: sign-invariant
                c1, cG = op["c1"], op["cG"]
                print(f"{activation:>10} {P:>6} {name:>5} {float(val):12.4f} {float(c1):8.4f} "
                      f"{float(cG):8.4f} {float(cj.coverage(A)):9.4f}")


if __name__ == "__main__":
    main()
