"""copyjax's figures (matplotlib, Agg; PNG and PDF), one module per figure family:
``phase_diagram`` (``scripts/phase_diagram.py``: the shared figures draw each registered
method's layer, ``copyjax.point``), ``theory`` (``scripts/theory_figures.py``) and
``free_energy`` (``scripts/free_energy.py``, ``scripts/free_energy_vs_L.py``)."""
__all__ = ["free_energy", "phase_diagram", "theory"]


def __getattr__(name):
    # the families load on first use: copyjax.point's methods import plots._common, and
    # plots.phase_diagram imports copyjax.point
    if name in __all__:
        import importlib

        return importlib.import_module(f"copyjax.plots.{name}")
    raise AttributeError(f"module 'copyjax.plots' has no attribute {name!r}")
