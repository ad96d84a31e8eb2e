"""Print the transition points of the reduced theory for each (L, V) given.

    python scripts/transitions.py --LV 64,32 32,16 64,8 [--tokens zipf:1] [--json out.json]
    python scripts/transitions.py --LV 64,32 --tokens zipf:1 --exact runs/beyond/z1_64_32

``--exact DIR ...``: ``scripts/free_energy.py`` output folders; the exact posterior's P* (with
its error: MBAR's or the bootstrap's, or the spread over seeds) and the P range where its
free-energy profile has two minima are printed as an ``exact`` row beside the theory's forms for
the (L, V) and token law they hold.

softmax: P* (global minimum switches), spinodals, jump of a_G; linear: onset P_1 and
crossover P_x (c_G = c_1 along the global minimum); both the MAP and the posterior forms,
default hyperparameters (beta = sigma_w2 = 1, sigma_g2 = 1 softmax, 1/L linear).
``--tokens zipf:S``: i.i.d. Zipf tokens (``copyjax.tokens``); ``--tokens markov:Q --forms map``:
the softmax MAP form along the copy ansatz only (no mean field over rows, no linear theory for
a Markov law: a pattern's weighted scalars depend on where in each row the weight sits).
"""
import argparse
import os

import jax

import copyjax as cj
from copyjax.results import read_json, write_json
from _cli import lv_pair, token_law_arg


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--LV", type=lv_pair, nargs="+", default=[(64, 32), (32, 16), (64, 8)],
                    help="L,V pairs (default: 64,32 32,16 64,8)")
    ap.add_argument("--forms", nargs="+", choices=["map", "posterior"], default=["map", "posterior"])
    ap.add_argument("--tokens", type=token_law_arg, default="uniform",
                    help="token law: uniform (default) or zipf:S (i.i.d.; p_v ~ (v+1)^-S)")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--exact", nargs="+", default=[], metavar="DIR",
                    help="scripts/free_energy.py output folders: their exact-posterior P* beside the theory's")
    return ap


def main(argv=None):
    ap = parser()
    a = ap.parse_args(argv)
    if not a.tokens.iid and a.forms != ["map"]:
        ap.error(f"--tokens {a.tokens.spec}: a Markov law has only the softmax MAP form here: add --forms map")
    exact = {}
    for d in a.exact:
        try:
            summ = read_json(os.path.join(d, "summary.json"))
            L, V = summ["config"]["L"], summ["config"]["V"]
        except (OSError, ValueError, KeyError, TypeError) as e:
            ap.error(f"--exact {d}: no readable scripts/free_energy.py summary.json there ({e})")
        if summ.get("tokens", "uniform") != a.tokens.spec:
            ap.error(f"--exact {d} holds tokens {summ.get('tokens', 'uniform')}, not --tokens {a.tokens.spec}")
        if (L, V) not in a.LV:
            ap.error(f"--exact {d} holds L={L}, V={V}, not one of --LV")
        exact[(L, V)] = summ
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
        if (L, V) in exact:
            e = exact[(L, V)]
            runs = list(e.get("per_seed", {}).values())
            lo = [r.get("spinodal_low") for r in runs]
            hi = [r.get("spinodal_high") for r in runs]
            lo = "-" if not lo or None in lo else f"{min(lo):.0f}"
            hi = "(past the scan)" if not hi or None in hi else f"{max(hi):.0f}"
            rows.append({"exact": {k: e.get(k) for k in ("P_star", "P_star_err", "barrier_at_P_star", "seeds")}})
            print(f"| {L} | {V} | exact posterior | {fmt(e.get('P_star'))} ± {fmt(e.get('P_star_err'))} | "
                  f"{lo}-{hi} (two minima) | - | - | - |", flush=True)
    if a.json:
        write_json(a.json, rows)


if __name__ == "__main__":
    main()
