"""Bad input, fuzzed (hypothesis): every script's parser and the public entry points take
out-of-range, NaN, infinite, wrong-shape and wrong-type arguments and answer with an error that
names the argument, before any long computation; never a traceback of another kind, a NaN
result or a hang. Each property is checked on ``EXAMPLES`` drawn cases (fixed seed: the same
cases on every run; ``derandomize``), counted in docs/testing.md."""
import argparse
import contextlib
import importlib.util
import io
import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import copyjax as cj
from copyjax import exact_posterior, mbar

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = 60
fuzz = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])

# strings a user might type for a number: out of range, non-finite, not a number at all
BAD_NUMBER_TEXT = st.one_of(
    st.integers(-10**12, 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "-0", "0", "", " ", "1,2", "0x10", "one", "1.5.2", "None"]),
    st.text(max_size=6),
)
NASTY = ["nan", "inf", "-inf", "1e400", "-1", "0", "", "one"]


def _script(name):
    import sys

    if str(ROOT / "scripts") not in sys.path:
        sys.path.insert(0, str(ROOT / "scripts"))  # the scripts import their shared _cli module
    spec = importlib.util.spec_from_file_location(f"_fuzzed_{name}", ROOT / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


SCRIPTS = sorted(p.stem for p in (ROOT / "scripts").glob("*.py") if not p.stem.startswith("_"))
NOTHING_TO_CONVERT = {"free_energy_vs_L"}  # folders and paths only


def _typed_options(ap: argparse.ArgumentParser):
    """The options that convert their value (a ``type`` or ``choices``): (flag, nargs)."""
    out = []
    for act in ap._actions:
        if act.option_strings and (act.type is not None or act.choices is not None) and act.nargs != 0:
            out.append((act.option_strings[-1], act))
    return out


@pytest.mark.parametrize("script", [s for s in SCRIPTS if s not in NOTHING_TO_CONVERT])
def test_every_option_refuses_bad_text_naming_itself(script):
    """For each option of the script that converts its value: a fuzzed value either parses to
    a finite, in-choices value or exits with status 2 and a message naming the option (argparse's
    ``error``), never another exception and never a NaN/inf accepted as a number."""
    ap = _script(script).parser()
    options = _typed_options(ap)
    assert options, script

    def check_one(option, text):
        flag, act = option
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                ns = ap.parse_args([f"{flag}={text}"])  # "=": a value that starts with "-" stays a value
        except SystemExit as e:
            assert e.code == 2 and flag.lstrip("-").split("-")[0] in err.getvalue(), (flag, text, err.getvalue())
            return
        v = getattr(ns, act.dest)
        for x in v if isinstance(v, list) else [v]:
            if isinstance(x, float):
                assert math.isfinite(x), (flag, text, x)
            if act.choices is not None:
                assert x in act.choices, (flag, text, x)

    for option in options:  # every option against the classic offenders, then random text
        for text in NASTY:
            check_one(option, text)
    fuzz(given(st.sampled_from(options), BAD_NUMBER_TEXT)(check_one))()


def _names(err: BaseException, *names) -> bool:
    return any(n in str(err) for n in names)


BAD_SIZES = st.one_of(st.integers(-5, 1), st.floats(allow_nan=True, allow_infinity=True),
                      st.sampled_from([None, "8", [8], 2.5, True]))


@fuzz
@given(which=st.sampled_from(["P", "L", "V"]), bad=BAD_SIZES)
def test_sample_tokens_names_the_bad_size(which, bad):
    args = {"P": 4, "L": 4, "V": 3}
    args[which] = bad
    if which == "P" and isinstance(bad, int) and not isinstance(bad, bool) and bad >= 1:
        return  # a valid P (the strategy's range includes 1)
    with pytest.raises((ValueError, TypeError)) as e:
        cj.sample_tokens(jax.random.key(0), args["P"], args["L"], args["V"])
    assert _names(e.value, which), (which, bad, e.value)


@fuzz
@given(shape=st.sampled_from([(0, 4), (3,), (3, 1), (2, 3, 4)]), V=st.integers(-2, 6),
       kind=st.sampled_from(["int", "float", "nan", "out of range"]))
def test_sufficient_stats_names_bad_tokens_or_V(shape, V, kind):
    rng = np.random.default_rng(0)
    good_shape = (5, 4)
    tokens = rng.integers(0, 3, size=good_shape if kind == "out of range" else shape)
    if kind == "float":
        tokens = tokens.astype(float) + 0.5
    elif kind == "nan":
        tokens = np.full(shape, np.nan)
    elif kind == "out of range":
        tokens[0, 0] = max(V, 2) + 1
    with pytest.raises(ValueError) as e:
        cj.sufficient_stats(jnp.asarray(tokens), V)
    assert _names(e.value, "tokens", "V"), e.value


STATS = cj.sufficient_stats(jnp.asarray(np.random.default_rng(1).integers(0, 3, (20, 4))), 3)
HYPER = cj.default_hyper("softmax", 4)


@fuzz
@given(shape=st.lists(st.integers(0, 5), min_size=0, max_size=3).map(tuple).filter(lambda s: s != (4, 4)),
       activation=st.sampled_from(["softmax", "linear", "relu", "", "SOFTMAX", None]))
def test_exact_action_names_bad_G_or_activation(shape, activation):
    with pytest.raises(ValueError) as e:
        cj.exact_action(jnp.zeros(shape), STATS, HYPER, activation)
    assert _names(e.value, "G", "activation", "stats"), (shape, activation, e.value)  # stats: G's L disagrees


@fuzz
@given(arg=st.sampled_from(["n_chains", "num_steps", "warmup_steps", "burn_in", "step_size"]),
       bad=st.one_of(st.integers(-3, 1), st.floats(allow_nan=True, allow_infinity=True).filter(
           lambda x: not (math.isfinite(x) and x > 0)), st.sampled_from([None, "4", 2.5])))
def test_sample_exact_posterior_names_the_bad_setting_before_sampling(arg, bad):
    """Every bad setting is refused before a step is taken (the settings are small, so a
    missed check would show as a finished run, not as a hang)."""
    kw = {"n_chains": 2, "num_steps": 6, "warmup_steps": 0}
    if arg == "warmup_steps" and isinstance(bad, int) and bad >= 0:
        return  # 0 and 1 are valid warm-ups
    if arg == "burn_in" and isinstance(bad, int) and 1 <= bad < 6:
        return
    if arg in ("n_chains", "num_steps") and bad is None:
        return  # None is not among these settings' defaults-by-None; argument required
    if arg in ("step_size", "warmup_steps", "burn_in") and bad is None:
        return  # None: the default
    kw[arg] = bad
    with pytest.raises((ValueError, TypeError)) as e:
        exact_posterior.sample_exact_posterior(jax.random.key(0), STATS, HYPER, "softmax", **kw)
    assert _names(e.value, arg), (arg, bad, e.value)


@fuzz
@given(name=st.sampled_from(["beta", "sigma_w2", "sigma_g2"]),
       bad=st.one_of(st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not (math.isfinite(x) and x > 0)),
                     st.sampled_from(["1", b"1", 1j])))  # None is allowed: JAX's pytree placeholders
def test_hyper_names_a_bad_parameter(name, bad):
    with pytest.raises((ValueError, TypeError)) as e:
        cj.Hyper(**{name: bad})
    assert _names(e.value, name), (name, bad, e.value)


@fuzz
@given(kind=st.sampled_from(["nan", "shape", "counts", "float32"]), K=st.integers(1, 4))
def test_mbar_refuses_nan_energies_bad_shapes_and_counts(kind, K):
    u = np.random.default_rng(K).normal(size=(K, 3 * K))
    N_k = np.full(K, 3)
    if kind == "nan":
        u[-1, 0] = np.nan
    elif kind == "shape":
        u = u[0]
    elif kind == "counts":
        N_k[0] += 1
    elif kind == "float32":
        u = u.astype(np.float32)
    with pytest.raises(ValueError) as e:
        mbar.solve(jnp.asarray(u), jnp.asarray(N_k))
    assert _names(e.value, "u_kn", "N_k", "float64"), (kind, e.value)
