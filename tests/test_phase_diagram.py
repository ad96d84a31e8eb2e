import dataclasses
import json
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from _cli_errors import assert_cli_error
from _no_extras import script_argv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "scripts", "phase_diagram.py")
TINY = ["--L", "4", "--V", "3", "--P", "20", "60", "--chains", "2", "--steps", "20",
        "--adam-seeds", "2", "--adam-steps", "20", "--op-chains", "2", "--op-draws", "10",
        "--exact-chains", "4", "--exact-steps", "60", "--exact-warmup", "20", "--no-progress"]


def run(args, **kw):
    """The main job as a user with ``pip install -e .`` alone runs it: optional packages hidden
    (tests/_no_extras.py), so an optional import on its path fails every end-to-end test."""
    env = dict(os.environ, XLA_FLAGS="")
    return subprocess.run(script_argv("phase_diagram.py", args), capture_output=True, text=True,
                          env=env, timeout=900, **kw)


def strip(points):
    return [{k: v for k, v in p.items() if k not in ("wall_s", "wall_s_by_part")} for p in points]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("pd"))
    r = run(TINY + ["--activation", "softmax", "--out", out])
    assert r.returncode == 0, r.stderr[-3000:]
    return out, r


@pytest.mark.slow
def test_end_to_end_writes_results_and_plots(first_run):
    out, r = first_run
    for name in ("results.json", "results.npz", "summary.csv", "config.json",
                 "order_parameters.png", "order_parameters.pdf", "loss.png", "histograms.png",
                 "adam_curves.png", "coverage.png"):
        assert os.path.getsize(os.path.join(out, name)) > 0, name
    res = json.loads(Path(os.path.join(out, "results.json")).read_text())
    assert [p["P"] for p in res["points"]] == [20, 60]
    p = res["points"][0]
    assert set(p) >= {"theory_map", "theory_posterior", "sgld_prior", "sgld_exact", "adam_global",
                      "theory_posterior_sampled", "exact"}
    assert "sgld_copy" not in p  # not a default start
    # on by default, but only where the exact start families disagree
    assert ("exact_free_energy" in p) == p["exact"]["branches_disagree"]
    assert p["exact"]["cG"]["n_chains"] == 4 and p["theory_posterior_sampled"]["cG"]["n_chains"] == 2
    assert p["exact"]["cG"]["prior"]["n_chains"] == 2 and p["exact"]["cG"]["copy"]["n_chains"] == 2
    assert len(p["exact"]["acceptance"]) == 4 and isinstance(p["exact"]["branches_disagree"], bool)
    assert p["sgld_prior"]["cG"]["n_chains"] == 2
    z = np.load(os.path.join(out, "results.npz"))
    assert z["softmax_P20_sgld_prior_cG"].shape == (2, 10)  # (chain, draw)
    # 40 MALA steps after the burn-in of 20, thin 1
    assert z["softmax_P20_op_cG"].shape == (2, 10) and z["softmax_P20_exact_cG"].shape == (4, 40)
    assert z["softmax_P20_exact_start"].tolist() == [0, 0, 1, 1]
    assert "P=" in r.stdout and "softmax theory" in r.stdout and "exact" in r.stdout
    import csv

    rows = list(csv.DictReader(Path(os.path.join(out, "summary.csv")).read_text().splitlines()))
    from copyjax.point import csv_columns

    assert tuple(rows[0]) == csv_columns() and len(rows) == 2
    assert rows[0]["exact_branches_disagree"] in ("true", "false")
    if rows[0]["exact_branches_disagree"] == "false":
        assert abs(float(rows[0]["exact_cG"]) - p["exact"]["cG"]["mean"]) < 1e-12


@pytest.mark.slow
def test_resume_after_interruption_gives_identical_results(first_run):
    out, _ = first_run
    before = json.loads(Path(os.path.join(out, "results.json")).read_text())
    # a run killed while computing point 1 leaves no summary for it
    os.unlink(os.path.join(out, "points", "softmax_001.json"))
    r = run(TINY + ["--activation", "softmax", "--out", out])
    assert r.returncode == 0, r.stderr[-3000:]
    after = json.loads(Path(os.path.join(out, "results.json")).read_text())
    assert after["points_reused"] == 1
    assert strip(after["points"]) == strip(before["points"])


@pytest.mark.slow
def test_mismatched_out_is_refused(first_run):
    out, _ = first_run
    r = run(TINY + ["--activation", "softmax", "--out", out, "--seed", "3"])
    assert_cli_error(r, "different configuration")


@pytest.mark.slow
def test_the_main_job_runs_two_layers_on_the_shift_two_target(tmp_path):
    """``--layers 2 --shift 2 --quick``: the exact posterior of (G_1, G_2), SGLD and Adam on the
    two-layer network, each layer's order parameters in the points, the CSV, the report and
    their figure; the exact chains' per-layer means in the points and the CSV are the saved
    draws' (the summary's path against the arrays'). What the two layers do is measured by
    scripts/deeper.py (docs/deeper.md)."""
    import csv

    out = str(tmp_path / "two")
    r = run(["--L", "6", "--V", "4", "--quick", "--activation", "softmax", "--layers", "2", "--shift", "2",
             "--n-P", "2", "--no-progress", "--out", out])
    assert r.returncode == 0, r.stderr[-3000:]
    cfg = json.loads(Path(out, "config.json").read_text())
    assert cfg["mask"] == "full+layers=2+shift=2" and cfg["op_chains"] == 0
    assert "mask full+layers=2+shift=2" in r.stdout and "layers 1: I" in r.stdout
    assert Path(out, "layers.png").is_file()
    res = json.loads(Path(out, "results.json").read_text())
    arrays = np.load(Path(out, "results.npz"))
    with open(Path(out, "summary.csv")) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(res["points"]) == 2
    for pt, row in zip(res["points"], rows):
        lay = pt["exact"]["layers"]
        assert sorted(lay) == sorted(f"A{i}_{n}" for i in (1, 2) for n in ("I", "S", "S2"))
        a = arrays[f"softmax_P{pt['P']}_exact_A2_S2"]
        assert a.ndim == 2 and abs(lay["A2_S2"]["mean"] - a.mean()) < 1e-9
        assert abs(float(row["exact_A2_S2"]) - a.mean()) < 1e-9
        assert row["sgld_prior_cG"] != "" and row["adam_cG"] != "" and row["theory_cG"] == ""


@pytest.mark.parametrize("args, word", [
    (["--L", "1"], "--L"), (["--V", "0"], "--V"), (["--L", "4.5"], "--L"),
    (["--seed", "-1"], "--seed"), (["--quick", "--full"], "--quick"),
    (["--P-min", "100", "--P-max", "10"], "--P-min"), (["--P", "0"], "--P"),
    (["--steps", "0"], "--steps"), (["--step-size", "-1"], "--step-size"),
    (["--exact-chains", "2"], "--exact-chains"), (["--exact-chains", "-1"], "--exact-chains"),
    (["--exact-steps", "10"], "--exact-steps"), (["--exact-chains", "0", "--sgld-starts", "exact"], "--sgld-starts"),
    (["--op-chains", "-2"], "--op-chains"),
    (["--exact-chains", "0", "--free-energy"], "--free-energy"),
    (["--free-energy-steps", "10"], "--free-energy-steps"),
    (["--adam-lr", "0"], "--adam-lr"), (["--adam-lr", "inf"], "> 0"), (["--beta", "-1"], "--beta"),
    (["--sigma-w2", "0"], "--sigma-w2"), (["--sigma-g2", "nan"], "--sigma-g2"),
    (["--batch-layout", "diagonal"], "--batch-layout"), (["--batch", "-3"], "--batch"),
    (["--n-P", "0"], "--n-P"), (["--adam-seeds", "-1"], "--adam-seeds"), (["--L", "1"], ">= 2"),
    (["--tokens", "markov:0.3"], "--tokens"), (["--tokens", "zipf:-2"], "--tokens"),
    (["--mask", "upper"], "--mask"), (["--mask", "window:0"], "--mask"),
    (["--mask", "full+layers=2"], "--mask"), (["--layers", "3"], "--layers"), (["--shift", "0"], "--shift"),
    (["--no-residual"], "--no-residual"), (["--layers", "2", "--llc-steps", "60"], "--llc-steps"),
    # run() hides the optional packages, as in a venv without the arviz extra
    (["--netcdf"], "pip install 'copyjax[arviz]'"),
])
def test_bad_arguments_exit_2_with_message(args, word, tmp_path):
    r = run(args + ["--out", str(tmp_path)])
    assert_cli_error(r, word)


def test_options_are_checked_without_importing_jax():
    # the CLI names the SGLD starts itself (so that a bad option costs no JAX import): the
    # same set as copyjax's, and parsing the options imports no JAX
    code = ("import sys; sys.path.insert(0, 'scripts'); import phase_diagram as pd; "
            "pd.build_config(pd.parser().parse_args(['--quick']), pd.parser()); "
            "import _cli; print(sorted(_cli.SGLD_STARTS), 'jax' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    from copyjax.schema import SGLD_STARTS

    assert r.stdout.split() == [*str(sorted(SGLD_STARTS)).split(), "False"], r.stderr[-2000:]


def test_unwritable_out(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run(["--out", str(blocker / "sub")])
    assert_cli_error(r, "--out")


@pytest.mark.slow
def test_free_energy_weighs_the_phases_where_the_start_families_disagree(monkeypatch):
    """With cfg["free_energy"], a softmax point whose exact start families disagree gets the
    umbrella + MBAR estimate on the same data, in the summary, the CSV row and the report line
    (the disagreement is forced here: at L = 4 the families agree)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    from copyjax import exact_posterior, point as PT

    real = exact_posterior.summarize_exact
    monkeypatch.setattr(exact_posterior, "summarize_exact",
                        lambda *a, **k: dataclasses.replace(real(*a, **k), branches_disagree=True))
    cfg = {"L": 4, "V": 3, "chains": 0, "steps": 20, "step_size": None, "batch": None, "adam_seeds": 0,
           "adam_steps": 20, "op_chains": 0, "op_draws": 10, "exact_chains": 4, "exact_steps": 60,
           "exact_warmup": 20, "sgld_starts": ["prior"], "adam_lr": 2e-2, "adam_rtol": 1e-3, "beta": 1.0,
           "sigma_w2": 1.0, "sigma_g2": {"softmax": 1.0, "linear": 0.25}, "seed": 0, "test_P": 200,
           "free_energy": {"steps": 90}}
    s, arrays = PT.run_point(cfg, "softmax", 40, 0)
    fe = s.free_energy
    assert 0.0 <= fe.cG.mean <= 1.0 and fe.cG.mcse > 0 and fe.cG.sd > 0
    assert 0.0 <= fe.copy_weight <= 1.0
    assert arrays["fe_F"].shape == (arrays["fe_edges"].size - 1,)
    row = dict(zip(PT.csv_columns(), PT.csv_row(s)))
    assert row["exact_fe_cG"] == fe.cG.mean and row["exact_fe_copy_weight"] == fe.copy_weight
    # the posterior's a_G is the free energy's where the branches disagree: the result, not a blank
    assert row["exact_cG"] == fe.cG.mean and row["exact_cG_sd"] == fe.cG.sd
    # the typed point survives its JSON (compared as JSON text: NaN != NaN, e.g. no barrier)
    text = json.dumps(s.to_json())
    assert json.dumps(type(s).from_json(json.loads(text)).to_json()) == text
    line = PT.point_line(s)
    assert "exact posterior (free energy) a_G" in line and "copy mass" in line and "TWO BRANCHES" not in line
    assert "start families disagree" in line  # the branches stay, as detail


@pytest.mark.slow
def test_the_main_job_takes_a_token_law(tmp_path):
    """--tokens zipf:1: the data, the theory lines and the points are those of the law (the law in
    config.json and the report line; the theory's P grid marks move), at one tiny point."""
    out = str(tmp_path / "z")
    tiny = TINY[:TINY.index("--P")] + ["--P", "40"] + TINY[TINY.index("--chains"):]
    r = run(tiny + ["--activation", "softmax", "--tokens", "zipf:1", "--out", out])
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(Path(out, "config.json").read_text())["tokens"] == "zipf:1"
    assert "tokens zipf:1" in r.stdout
    res = json.loads(Path(out, "results.json").read_text())
    import copyjax as cj

    assert res["transitions"]["softmax"]["tokens"] == "zipf:1"
    P = np.asarray(res["theory"]["softmax"]["P"])
    zipf = np.asarray(cj.theory_curve(P, 4, 3, "softmax", form="map", tokens="zipf:1")["cG"])
    np.testing.assert_allclose(res["theory"]["softmax"]["cG"], zipf, rtol=1e-12)
    assert np.max(np.abs(zipf - np.asarray(cj.theory_curve(P, 4, 3, "softmax", form="map")["cG"]))) > 1e-3


@pytest.mark.slow
def test_the_main_job_takes_the_causal_mask(tmp_path):
    """--mask causal: every method of the point runs on the causal model (the exact posterior,
    SGLD and Adam on the causal network; no reduced theory and no NUTS in its order-parameter
    space, which are the cyclic model's) and the exact a_G (the row mean of a_G(l)) equals what
    blackjax's fixed-step MALA on the causal marginal (``action.marginal_logdensity(mask=
    "causal")``, whose likelihood tests/test_masks.py checks by brute force) gives on the same
    data within 4 combined MCSE; the full mask's posterior on the same data lies more than 4
    combined MCSE away."""
    import csv

    import blackjax
    import jax
    import jax.numpy as jnp

    from copyjax import exact_posterior as X
    from copyjax.action import marginal_logdensity
    from copyjax.chains import Schedule, run_algorithm, summarize
    from copyjax.masks import CAUSAL
    from copyjax.point.base import Context

    out = str(tmp_path / "c")
    r = run(["--L", "4", "--V", "3", "--P", "60", "--activation", "softmax", "--mask", "causal", "--exact-chains", "8",
             "--exact-steps", "600", "--chains", "4", "--steps", "100", "--adam-seeds", "2", "--adam-steps", "60",
             "--llc-steps", "60", "--no-progress", "--out", out])
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(Path(out, "config.json").read_text())["mask"] == "causal"
    assert "mask causal" in r.stdout
    res = json.loads(Path(out, "results.json").read_text())
    assert res["theory"] == {} and res["transitions"] == {"softmax": {}}
    with open(Path(out, "summary.csv")) as f:
        (row,) = list(csv.DictReader(f))
    assert row["theory_cG"] == row["op_cG"] == ""
    # SGLD and Adam ran, on the causal model (its a_G(l) may dip below 0: less than uniform on the copy key)
    assert -1 < float(row["sgld_prior_cG"]) < 1 and -1 < float(row["adam_cG"]) < 1
    # and the exact LLC, at the causal model's minima (its loss over the loss rows)
    assert any(row.get(f"llc_{ph}") not in (None, "") and np.isfinite(float(row[f"llc_{ph}"])) for ph in ("pooling", "copy"))
    pt = res["points"][0]
    assert pt["exact"]["branches_disagree"] is False
    ex = pt["exact"]["cG"]
    cfg = json.loads(Path(out, "config.json").read_text())
    ctx = Context(cfg, "softmax", 60, 0)
    st = ctx.stats.astype(jnp.float64)
    alg = blackjax.mala(lambda G: marginal_logdensity(G, st, ctx.hyper, "softmax", CAUSAL), 0.05)
    G0 = jax.random.normal(jax.random.key(3), (16, 4, 4), jnp.float64)
    m = run_algorithm(jax.random.key(4), alg, G0, lambda G: {"cG": CAUSAL.order(CAUSAL.attention(G, "softmax"),
                                                                                    "softmax")["cG"]},
                      schedule=Schedule(3000, 1000, 5))
    ref = summarize(m.draws["cG"])
    z = (ex["mean"] - ref.mean) / np.hypot(ex["mcse"], ref.mcse)
    assert abs(z) < 4, (ex, ref)
    # and not the full mask's posterior on those data
    full = summarize(np.asarray(X.sample_exact_posterior(jax.random.key(4), ctx.stats, ctx.hyper, "softmax",
                                                        n_chains=8, num_steps=600).samples.draws["cG"]))
    assert abs(full.mean - ex["mean"]) > 4 * np.hypot(full.mcse, ex["mcse"]), (full, ex)


def test_a_one_point_grid_draws_its_theory_lines():
    """A run of one P (benchmarks/gpu.sh's point) crashed after sampling: the theory lines' grid
    was 60 copies of that P, refused by check_P_grid. The grid now spans a factor 2 either side."""
    import importlib.util

    import copyjax as cj

    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    spec = importlib.util.spec_from_file_location("phase_diagram_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    fine = script.theory_grid(np.array([5095]))
    assert fine[0] == pytest.approx(5095 / 2) and fine[-1] == pytest.approx(2 * 5095)
    assert np.all(np.diff(fine) > 0)
    np.testing.assert_array_equal(script.theory_grid(np.array([20, 60]), 5), np.geomspace(20, 60, 5))
    h = cj.default_hyper("softmax", 4)
    curve = cj.theory_curve(fine, 4, 3, "softmax", h, "map")  # what main() draws from
    assert np.asarray(curve["cG"]).shape == (60,) and np.all(np.isfinite(np.asarray(curve["cG"])))
