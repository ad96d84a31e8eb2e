"""The text forms of the plug-in axes a command line names: token laws (``--tokens``) and
attention masks (``--mask``). Parsed and checked here, without JAX (``import copyjax`` loads
nothing eagerly), so a script refuses a bad option before JAX loads; ``copyjax.tokens`` and
``copyjax.masks`` build the plug-ins from what this module returns.

Each registry is the one list of its axis:

* ``TOKEN_LAWS``: law kind -> the check of its parameter (``None``: the law takes none);
  ``copyjax.tokens.LAWS`` holds each law's sampler and moments under the same names.
* ``MASKS``: mask name -> ``"module:attribute"`` of the ``Mask``; ``MASK_FAMILIES``: family
  name -> ``("module:class", what its parameter is, its check)`` for ``family:param`` specs.
  A new mask is its module and one line here.
"""
from __future__ import annotations

import math
import numbers
from typing import NamedTuple


def _zipf_exponent(v: float) -> str | None:
    return None if math.isfinite(v) and v >= 0 else f"the Zipf exponent S must be finite and >= 0, got {v}"


def _stay_probability(v: float) -> str | None:
    return None if 0 <= v < 1 else f"the Markov stay probability Q must be in [0, 1), got {v}"


# kind -> check of its parameter (an error text, or None when it is allowed); None: no parameter
TOKEN_LAWS = {"uniform": None, "zipf": _zipf_exponent, "markov": _stay_probability}
TOKEN_FORMS = "'uniform', 'zipf:S' (S >= 0) or 'markov:Q' (0 <= Q < 1)"


class TokenLaw(NamedTuple):
    """``kind`` in ``TOKEN_LAWS``; ``param``: the Zipf exponent S (>= 0) or the Markov stay
    probability Q (in [0, 1)); 0 for uniform. Hashable: it keys caches and is a static argument."""

    kind: str = "uniform"
    param: float = 0.0

    @property
    def spec(self) -> str:
        """The law as written on the command line: ``uniform``, ``zipf:1``, ``markov:0.3``."""
        return "uniform" if self.kind == "uniform" else f"{self.kind}:{self.param:g}"

    @property
    def iid(self) -> bool:
        """Tokens independent across positions (the four-scalar reduction holds)."""
        return self.kind != "markov"


UNIFORM = TokenLaw()


def token_law(spec: "str | TokenLaw | None") -> TokenLaw:
    """Parse ``"uniform" | "zipf:S" | "markov:Q"`` (or pass a ``TokenLaw``, or anything with
    its ``kind`` and ``param``, through; None is uniform). A law whose parameter is 0 is the
    uniform law (``zipf:0``, ``markov:0``). ``ValueError`` naming ``tokens`` and the forms."""
    if spec is None:
        return UNIFORM
    if hasattr(spec, "kind") and hasattr(spec, "param"):
        kind, param = spec.kind, float(spec.param)
    else:
        if not isinstance(spec, str):
            raise ValueError(f"tokens must be {TOKEN_FORMS}, got {spec!r}")
        kind, _, arg = spec.strip().partition(":")
        if TOKEN_LAWS.get(kind, 0) is None and not arg:
            return UNIFORM
        if not TOKEN_LAWS.get(kind) or not arg:
            raise ValueError(f"tokens must be {TOKEN_FORMS}, got {spec!r}")
        try:
            param = float(arg)
        except ValueError:
            raise ValueError(f"tokens: the parameter of {kind!r} must be a number, got {arg!r}") from None
    if kind not in TOKEN_LAWS:
        raise ValueError(f"tokens: kind must be one of {tuple(TOKEN_LAWS)}, got {kind!r}")
    check = TOKEN_LAWS[kind]
    why = check(param) if check else None
    if why:
        raise ValueError(f"tokens: {why}")
    if check is None or param == 0:
        return UNIFORM
    return TokenLaw(kind, param)


def _width(param: str) -> int:
    try:
        w = int(param)
    except ValueError:
        raise ValueError(f"mask 'window:w' needs an integer width w >= 1, got {param!r}") from None
    if w < 1:
        raise ValueError(f"mask 'window:w' needs an integer width w >= 1, got {param!r}")
    return w


MASKS = {"full": "copyjax.masks.full:FULL", "causal": "copyjax.masks.causal:CAUSAL"}
MASK_FAMILIES = {"window": ("copyjax.masks.window:Window", "an integer width w >= 1", _width)}


class StackSpec(NamedTuple):
    """The architecture over a mask: ``layers`` attention layers (1 or 2), with the residual
    stream or without (``residual``), trained on the shift-``shift`` target y_l = x_{l-k};
    ``first``: layer 1 a parameter (``"free"``) or frozen at uniform pooling over each row's
    keys (``"uniform"``, an ablation: A_eff = A_2 (I + U), layer 2 the only parameter)."""

    base: str
    layers: int = 1
    residual: bool = True
    shift: int = 1
    first: str = "free"

    def checked(self) -> "StackSpec":
        """This spec if it is one model, else ``ValueError`` naming the option: ``layers`` 1 or 2,
        ``shift`` an integer >= 1, ``first`` free or uniform; ``residual=no`` and
        ``first=uniform`` need two layers (one layer has no residual stream, and a frozen
        layer 1 pools through the residual: without it A_eff = A_2 U pools whatever layer 2
        does). The one place these rules live: the parser, ``masks.Stack`` and the scripts'
        options call it."""
        if not isinstance(self.base, str) or "+" in self.base:
            raise ValueError(f"mask: a stack's base must be a plain mask, got {self.base!r}")
        if self.layers not in (1, 2) or isinstance(self.layers, bool):
            raise ValueError(f"layers must be 1 or 2, got {self.layers!r}")
        if not isinstance(self.shift, numbers.Integral) or isinstance(self.shift, bool) or self.shift < 1:
            raise ValueError(f"shift must be an integer >= 1, got {self.shift!r}")
        if self.first not in ("free", "uniform"):
            raise ValueError(f"first must be 'free' or 'uniform', got {self.first!r}")
        if not self.residual and self.layers != 2:
            raise ValueError("residual=no needs layers=2 (one layer has no residual stream)")
        if self.first == "uniform" and not (self.layers == 2 and self.residual):
            raise ValueError("first='uniform' (layer 1 frozen at uniform pooling) needs layers=2 with the residual "
                             "stream (without it A_eff = A_2 U pools whatever layer 2 does)")
        return self

    @property
    def spec(self) -> str:
        """``base+layers=N+shift=K`` (``+residual=no`` without the residual stream,
        ``+first=uniform`` with layer 1 frozen)."""
        return (f"{self.base}+layers={self.layers}" + ("" if self.residual else "+residual=no")
                + f"+shift={self.shift}" + ("" if self.first == "free" else f"+first={self.first}"))


STACK_FORMS = "MASK+layers=N (N in 1, 2), +shift=K (K >= 1), +residual=yes|no, +first=free|uniform"


def _stack_option(key: str, value: str):
    if key == "layers" and value in ("1", "2"):
        return int(value)
    if key == "shift" and value.isdigit() and int(value) >= 1:
        return int(value)
    if key == "residual" and value in ("yes", "no"):
        return value == "yes"
    if key == "first" and value in ("free", "uniform"):
        return value
    raise ValueError(f"mask: option {key}={value!r} not allowed; the forms are {STACK_FORMS}")


def stack_spec(spec: str) -> StackSpec:
    """Parse ``MASK+layers=2+shift=2+residual=no`` (each option optional, any order): the
    base mask checked by ``mask_spec``; ``ValueError`` naming ``mask`` and the forms."""
    base, *opts = [p.strip() for p in spec.split("+")]
    mask_spec(base)
    kw = {}
    for o in opts:
        key, sep, value = o.partition("=")
        if not sep or key not in ("layers", "shift", "residual", "first") or key in kw:
            raise ValueError(f"mask: option {o!r} not allowed; the forms are {STACK_FORMS}")
        kw[key] = _stack_option(key, value)
    return StackSpec(base, **kw).checked()


def mask_spec(spec: str) -> tuple[str, object]:
    """``(name, param)`` of a mask spec: a name of ``MASKS`` (param None),
    ``family:param`` of ``MASK_FAMILIES`` (param checked and converted), or a mask with an
    architecture over it, ``MASK+layers=N+shift=K`` (name ``"stack"``, param a ``StackSpec``);
    ``ValueError`` naming ``mask`` and the choices otherwise."""
    if isinstance(spec, str) and "+" in spec:
        return "stack", stack_spec(spec)
    if isinstance(spec, str):
        s = spec.strip()
        if s in MASKS:
            return s, None
        name, sep, param = s.partition(":")
        if sep and name in MASK_FAMILIES:
            return name, MASK_FAMILIES[name][2](param)
    raise ValueError(f"mask must be one of {', '.join(MASKS)} or "
                     f"{', '.join(f'{k}:PARAM ({v[1]})' for k, v in MASK_FAMILIES.items())}, "
                     f"optionally with {STACK_FORMS[5:]}, got {spec!r}")


__all__ = ["mask_spec", "MASK_FAMILIES", "MASKS", "stack_spec", "STACK_FORMS", "StackSpec", "token_law", "TOKEN_FORMS", "TOKEN_LAWS", "TokenLaw", "UNIFORM"]
