"""The call path of P through copyjax: which modules one phase-diagram point enters with P
in hand, and how often the path climbs back up a layer (issue 21's measure of how many
places a change to P's handling touches).

    python benchmarks/call_path.py [--P 37]

Runs one tiny point (L = 4, V = 3, every method on, a few steps) under ``sys.setprofile``
and records each call of a copyjax function that receives P (an argument equal to P, as an
int or a float). Consecutive calls in one module are one *stay*; a *climb* is a call into a
module of a higher layer than the previous call's (the path returned to a module it had
left for a lower one); *checks* counts the calls of ``_checks.check_P``. Layers are those of
docs/api.md, lowest first.
"""
import argparse
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# docs/api.md's layers, lowest first (a module's rank; equal ranks do not climb)
LAYERS = [("_checks", "hyper", "schema", "results"), ("data", "model"), ("network", "order", "minibatch"),
          ("action", "sgmcmc"), ("reduced", "samplers", "mbar"), ("theory", "chains", "training"),
          ("op_posterior", "exact_posterior", "free_energy"), ("problem",), ("experiments", "point")]
RANK = {m: i for i, ms in enumerate(LAYERS) for m in ms}


_PKG = str(ROOT / "copyjax") + "/"
_MODULE = {}  # file name -> copyjax module (None outside copyjax): the hook runs on every call


def module_of(code) -> str | None:
    f = code.co_filename
    if f not in _MODULE:
        p = str(Path(f).resolve())
        first = p[len(_PKG):].split("/")[0] if p.startswith(_PKG) else None
        _MODULE[f] = None if first is None else "copyjax" if first == "__init__.py" else first.removesuffix(".py")
    return _MODULE[f]


def trace_point(P: int):
    import jax

    jax.config.update("jax_enable_x64", True)
    try:
        from copyjax.point import run_point
    except ImportError:  # before the point became components (issue 21)
        from copyjax.experiments import run_point
    cfg = {"L": 4, "V": 3, "activations": ["softmax"], "chains": 2, "steps": 20, "step_size": None, "batch": 0,
           "adam_seeds": 2, "adam_steps": 20, "op_chains": 2, "op_draws": 10, "exact_chains": 4,
           "exact_steps": 60, "exact_warmup": 20, "sgld_starts": ["prior", "exact"], "adam_lr": 2e-2,
           "adam_rtol": 1e-3, "beta": 1.0, "sigma_w2": 1.0, "sigma_g2": {"softmax": 1.0}, "seed": 0,
           "test_P": 50}
    path, checks = [], 0

    def prof(frame, event, arg):
        nonlocal checks
        if event != "call":
            return
        mod = module_of(frame.f_code)
        if mod is None:
            return
        if frame.f_code.co_name == "check_P":
            checks += 1
        info = inspect.getargvalues(frame)
        vals = [info.locals.get(n) for n in info.args] + list(info.locals.get(info.varargs, ()) or ())
        if any(type(v) in (int, float) and v == P for v in vals):
            path.append((mod, frame.f_code.co_name))

    sys.setprofile(prof)
    try:
        run_point(cfg, "softmax", P, 0)
    finally:
        sys.setprofile(None)
    return path, checks


def measure(path):
    stays = [m for i, (m, _) in enumerate(path) if i == 0 or path[i - 1][0] != m]
    climbs = sum(RANK.get(b, 99) > RANK.get(a, 99) for a, b in zip(stays, stays[1:]))
    return len(stays), len(set(stays)), climbs, stays


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--P", type=int, default=37, help="the point's P (an unusual value: calls are matched by it)")
    ap.add_argument("--verbose", action="store_true", help="print the path")
    a = ap.parse_args(argv)
    path, checks = trace_point(a.P)
    n_stays, n_modules, climbs, stays = measure(path)
    if a.verbose:
        print(" -> ".join(stays))
    print(f"P from run_point: {len(path)} calls, {n_stays} stays in {n_modules} modules, {climbs} climbs "
          f"back up a layer, check_P called {checks} times")


if __name__ == "__main__":
    main()
