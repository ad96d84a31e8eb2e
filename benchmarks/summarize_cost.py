"""What ``chains.summarize`` costs in a fresh process: blackjax's rank-normalised R-hat called
eagerly (op by op: every op compiles for every new shape) against the same function jitted
(one program a shape). Each variant runs in its own interpreter on the same sequence of draw
shapes (the main job's: a few chain counts, a few draw lengths, each met several times) and
its values are compared; the ratio is measured in one run.

    python benchmarks/summarize_cost.py
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r'''
import json, sys, time
from functools import partial
import jax, jax.numpy as jnp, numpy as np, blackjax
shapes, how = json.loads(sys.argv[1]), sys.argv[2]
f = partial(blackjax.rhat, chain_axis=0, sample_axis=1)
f = jax.jit(f) if how == "jit" else f
rng = np.random.default_rng(0)
t0 = time.perf_counter()
vals = [float(f(jnp.asarray(rng.normal(size=s)))) for s in shapes]
print(json.dumps({"seconds": time.perf_counter() - t0, "values": vals}))
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=4, help="how often each shape is met (default 4)")
    a = ap.parse_args(argv)
    if a.repeats < 1:
        ap.error("--repeats: must be >= 1")
    shapes = [s for s in ([4, 40], [8, 40], [16, 180], [32, 180], [8, 200], [16, 200]) for _ in range(a.repeats)]
    out = {}
    for how in ("eager", "jit"):
        r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(shapes), how], capture_output=True, text=True,
                           check=True)
        out[how] = json.loads(r.stdout.strip().splitlines()[-1])
    diff = max(abs(a - b) for a, b in zip(out["eager"]["values"], out["jit"]["values"]))
    print(f"{len(shapes)} calls over {len(set(map(tuple, shapes)))} shapes: eager {out['eager']['seconds']:.2f} s, "
          f"jitted {out['jit']['seconds']:.2f} s, ratio {out['eager']['seconds'] / out['jit']['seconds']:.1f}x; "
          f"largest difference in R-hat {diff:.1e}")


if __name__ == "__main__":
    main()
