"""Print the transition points of the reduced theory for each (L, V) given.

    python scripts/transitions.py --LV 64,32 32,16 64,8 [--tokens zipf:1] [--json out.json]

softmax: P* (global minimum switches), spinodals, jump of a_G; linear: onset P_1 and
crossover P_x (c_G = c_1 along the global minimum); both the MAP and the posterior forms,
default hyperparameters (beta = sigma_w2 = 1, sigma_g2 = 1 softmax, 1/L linear).
``--tokens zipf:S``: i.i.d. Zipf tokens (``copyjax.tokens``); ``--tokens markov:Q --forms map``:
the softmax MAP form along the copy ansatz only (no mean field over rows, no linear theory for
a Markov law: a pattern's weighted scalars depend on where in each row the weight sits).
"""
import argparse

import jax

import copyjax as cj
from copyjax.results import write_json
from _cli import lv_pair, token_law_arg


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--LV", type=lv_pair, nargs="+", default=[(64, 32), (32, 16), (64, 8)],
                    help="L,V pairs (default: 64,32 32,16 64,8)")
    ap.add_argument("--forms", nargs="+", choices=["map", "posterior"], default=["map", "posterior"])
    ap.add_argument("--tokens", type=token_law_arg, default="uniform",
                    help="token law: uniform (default) or zipf:S (i.i.d.; p_v ~ (v+1)^-S)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    a = ap.parse_args(argv)
    if not a.tokens.iid and a.forms != ["map"]:
        ap.error(f"--tokens {a.tokens.spec}: a Markov law has only the softmax MAP form here: add --forms map")
    jax.config.update("jax_enable_x64", True)
    rows = []
    fmt = lambda v: "-" if v is None else f"{v:.0f}"
    if a.tokens.kind != "uniform":
        print(f"tokens: {a.tokens.spec}")
    print("| L | V | form | softmax P* | spinodals | a_G jump | linear P_1 | linear P_x |")
    print("|---:|---:|---|---:|---|---:|---:|---:|")
    for L, V in a.LV:
        for form in a.forms:
            s = cj.transition_points(L, V, "softmax", form=form, tokens=a.tokens)
            lin = cj.transition_points(L, V, "linear", form=form, tokens=a.tokens) if a.tokens.iid else None
            rows.append({"softmax": s.as_dict(), "linear": None if lin is None else lin.as_dict()})
            jump = "-" if not s.first_order else f"{s.aG_jump:.3f}"
            print(f"| {L} | {V} | {form} | {fmt(s.P_star)} | {fmt(s.P_spinodal_low)}-"
                  f"{fmt(s.P_spinodal_high)} | {jump} | {fmt(lin and lin.P_onset)} | "
                  f"{fmt(lin and lin.P_cross)} |", flush=True)
    if a.json:
        write_json(a.json, rows)


if __name__ == "__main__":
    main()
