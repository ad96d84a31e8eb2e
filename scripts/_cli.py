"""argparse argument types shared by the scripts (kept out of the copyjax package so that a
bad option is refused before JAX is imported): each raises an ``ArgumentTypeError`` naming
the option, and argparse exits with status 2."""
from __future__ import annotations

import argparse
import math

# the SGLD starts the scripts accept: copyjax.schema.SGLD_STARTS, named here so that options
# are checked without importing JAX (tests/test_phase_diagram.py checks they are the same)
SGLD_STARTS = ("prior", "exact", "copy")


def int_at_least(name: str, minimum: int):
    def conv(s):
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, got {s!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be >= {minimum}, got {v}")
        return v
    return conv


def positive_int(name: str):
    return int_at_least(name, 1)


def nonneg_int(name: str):
    return int_at_least(name, 0)


def float_in(name: str, lo: float, hi: float, why: str = ""):
    """A finite number in (lo, hi]; the error names the option, the range and ``why``."""
    def conv(s):
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {s!r}") from None
        if not (math.isfinite(v) and lo < v <= hi):
            raise argparse.ArgumentTypeError(f"{name} must be in ({lo:g}, {hi:g}]{why}, got {s!r}")
        return v
    return conv


def positive_float(name: str):
    def conv(s):
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, got {s!r}") from None
        if not (math.isfinite(v) and v > 0):
            raise argparse.ArgumentTypeError(f"{name} must be a finite number > 0, got {s!r}")
        return v
    return conv


def lv_pair(s):
    """``"L,V"`` -> ``(L, V)`` with both >= 2 (the ``--LV`` option)."""
    try:
        L, V = (int(x) for x in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--LV takes L,V pairs like 64,32, got {s!r}") from None
    if L < 2 or V < 2:
        raise argparse.ArgumentTypeError(f"--LV needs L >= 2 and V >= 2, got {s!r}")
    return L, V


def mask_arg(s):
    """``--mask full | causal | window:W`` (W >= 1) -> the spec, checked by ``copyjax.specs``
    without importing JAX (``copyjax.masks.get`` builds the mask from it)."""
    from copyjax import specs

    try:
        name, _ = specs.mask_spec(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--{e}") from None
    if name == "stack":  # an architecture over the mask: its own options where a script takes it
        raise argparse.ArgumentTypeError(f"--mask {s!r}: --mask takes a plain mask; two layers and shift k are "
                                         "--layers / --shift / --no-residual (phase_diagram.py, free_energy.py, "
                                         "deeper.py) or copyjax.masks.get(...) in Python")
    return s.strip()


def add_stack_options(ap, first_layer: bool = False) -> None:
    """``--layers``, ``--shift``, ``--no-residual`` (and with ``first_layer``, ``--first-layer``):
    an architecture over ``--mask`` (``copyjax.masks.stack``); ``stack_mask`` turns them into the
    mask spec."""
    ap.add_argument("--layers", type=int, choices=[1, 2], default=1,
                    help="attention layers (copyjax.masks.stack): 2 gives h = A_2 (x + A_1 x) and the exact posterior "
                         "of (G_1, G_2) with each layer's order parameters; no reduced theory")
    ap.add_argument("--shift", type=positive_int("--shift"), default=1,
                    help="the target is the token k back, y_l = x_{l-k} (1: the paper's copy task)")
    ap.add_argument("--no-residual", action="store_true", help="with --layers 2: h = A_2 A_1 x (no residual stream)")
    if first_layer:
        ap.add_argument("--first-layer", choices=["free", "uniform"], default="free",
                        help="with --layers 2: layer 1 a parameter, or frozen at uniform pooling (A_eff = A_2 (I + U): "
                             "the residual stream's pooled term without layer 1's freedom)")


def stack_mask(ap, a) -> str:
    """The mask spec of ``--mask`` with ``add_stack_options``' architecture over it."""
    from copyjax.specs import StackSpec

    try:
        spec = StackSpec(a.mask, a.layers, not a.no_residual, a.shift, getattr(a, "first_layer", "free")).checked()
    except ValueError as e:  # the spec's own rule, in the options' names
        flags = {"residual=no": "--no-residual", "first": "--first-layer", "layers": "--layers", "shift": "--shift"}
        ap.error(f"{next((f for k, f in flags.items() if str(e).startswith(k)), '--mask')}: {e}")
    if a.layers == 1 and a.shift == 1:
        return a.mask
    return spec.spec


def token_law_arg(s):
    """``--tokens uniform | zipf:S | markov:Q`` -> ``copyjax.specs.TokenLaw`` (zipf:0 and
    markov:0 are uniform), parsed without importing JAX."""
    from copyjax import specs

    try:
        return specs.token_law(s)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--{e}") from None


def add_distributed_options(ap: argparse.ArgumentParser) -> None:
    """Many hosts (``copyjax.distributed``): ``--coordinator-address HOST:PORT --num-processes N
    --process-id I`` (the names of ``jax.distributed.initialize``'s arguments), or
    ``--distributed auto`` (JAX's cluster detection: SLURM, Open MPI); ``--distributed-timeout``."""
    g = ap.add_argument_group("many hosts (jax.distributed: one process per host; docs/sampling.md, 'Many hosts')")
    g.add_argument("--coordinator-address", metavar="HOST:PORT", help="process 0's address, the same in every process")
    g.add_argument("--num-processes", type=positive_int("--num-processes"), help="processes in the run")
    g.add_argument("--process-id", type=nonneg_int("--process-id"), help="this process, in [0, --num-processes)")
    g.add_argument("--distributed", choices=["auto"], help="auto: JAX's cluster detection (SLURM, Open MPI)")
    g.add_argument("--distributed-timeout", type=positive_int("--distributed-timeout"), default=300,
                   help="seconds for every process to reach the coordinator (then an error, not a hang)")


def start_distributed(ap: argparse.ArgumentParser, args) -> bool:
    """Start ``jax.distributed`` from ``add_distributed_options``' options (call before any
    other JAX call); a bad combination is an argument error naming the option. Returns whether
    the run spans several processes."""
    given = {"--coordinator-address": args.coordinator_address, "--num-processes": args.num_processes,
             "--process-id": args.process_id}
    import jax

    from copyjax import distributed

    if jax.distributed.is_initialized():  # started by the caller (leaderboard.py runs bench_samplers.py in-process)
        return True
    if args.distributed == "auto":
        if any(v is not None for v in given.values()):
            ap.error(f"--distributed auto detects {', '.join(given)}; give those or --distributed auto, not both")
        distributed.initialize_auto(args.distributed_timeout)
        return True
    if all(v is None for v in given.values()):
        return False
    if missing := [k for k, v in given.items() if v is None]:
        ap.error(f"{', '.join(missing)}: --coordinator-address, --num-processes and --process-id go together")
    if args.process_id >= args.num_processes:
        ap.error(f"--process-id must be in [0, --num-processes) = [0, {args.num_processes}), got {args.process_id}")
    try:
        distributed.initialize(args.coordinator_address, args.num_processes, args.process_id,
                               args.distributed_timeout)
    except (ValueError, TimeoutError) as e:
        ap.error(f"--coordinator-address: {e}" if "coordinator" in str(e) else str(e))
    return True


def add_compile_cache_option(ap: argparse.ArgumentParser) -> None:
    """``--compile-cache DIR`` / ``--no-compile-cache`` (see ``enable_compile_cache``)."""
    ap.add_argument("--compile-cache", metavar="DIR",
                    help="JAX's persistent compilation cache: a second run with the same shapes loads "
                         "its compiled code instead of compiling (default: $COPYJAX_COMPILE_CACHE or "
                         "~/.cache/copyjax/jax)")
    ap.add_argument("--no-compile-cache", action="store_true", help="compile everything afresh")


def enable_compile_cache(args) -> str | None:
    """Point JAX's persistent compilation cache at ``args.compile_cache`` (call before the
    first compilation). Every compilation that takes 0.2 s or more is stored (JAX's default
    threshold, 1 s, would leave most of the chains' kernels at L = 64 out;
    ``$COPYJAX_COMPILE_CACHE_MIN_SECS`` sets another). Returns the directory, or None with
    ``--no-compile-cache``."""
    if args.no_compile_cache:
        return None
    import os

    import jax

    path = args.compile_cache or os.environ.get("COPYJAX_COMPILE_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "copyjax", "jax")
    jax.config.update("jax_compilation_cache_dir", path)
    jax.config.update("jax_persistent_cache_min_compile_time_secs",
                      float(os.environ.get("COPYJAX_COMPILE_CACHE_MIN_SECS", 0.2)))
    return path
