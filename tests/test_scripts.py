"""The scripts other than the main job: bad arguments exit with status 2 and an error line
naming the option, before any computation; each script the README lists runs end to end at a
tiny size, its outputs read back."""
import json
import os
from pathlib import Path
import subprocess
import sys

import numpy as np
import pytest

from _cli_errors import assert_cli_error

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(script, args, env=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), *args],
                          capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("script, args, word", [
    ("theory_figures.py", ["--L", "1"], "--L"),
    ("theory_figures.py", ["--chains", "0"], "--chains"),
    ("theory_figures.py", ["--seed", "-1"], "--seed"),
    ("theory_figures.py", ["--curve-points", "1"], "--curve-points must be >= 2"),
    ("theory_figures.py", ["--replot", "--out", "/nonexistent/dir"], "--out"),
    ("validate_theory.py", ["--LV", "16"], "--LV"),
    ("validate_theory.py", ["--LV", "1,8"], "--LV"),
    ("validate_theory.py", ["--steps", "10", "--thin", "10"], "--steps"),
    ("validate_theory.py", ["--n-P", "0"], "--n-P"),
    ("scaling.py", ["--Ls", "1", "8"], "--Ls"),
    ("scaling.py", ["--g-prior", "huge"], "--g-prior"),
    ("free_energy.py", ["--no-theory"], "--no-theory"),
    ("free_energy.py", ["--steps", "10"], "--steps"),
    ("free_energy.py", ["--kappa", "0"], "--kappa"),
    ("free_energy.py", ["--spacing", "-0.1"], "--spacing"),
    ("free_energy.py", ["--seeds", "-1"], "--seeds"),
    ("free_energy.py", ["--L", "3"], "--L must be >= 4"),
    ("free_energy.py", ["--activation", "relu"], "--activation"),
    ("transitions.py", ["--LV", "64"], "--LV takes L,V pairs"),
    ("transitions.py", ["--LV", "1,8"], "--LV needs L >= 2"),
    ("transitions.py", ["--forms", "mean_field"], "--forms"),
    ("transitions.py", ["--tokens", "markov:0.3"], "--forms map"),
    ("transitions.py", ["--tokens", "zipf:-1"], "--tokens"),
    ("transitions.py", ["--exact", "/nonexistent"], "--exact /nonexistent: no readable"),
    ("free_energy.py", ["--tokens", "markov:0.3"], "--tokens"),
    ("free_energy.py", ["--tokens", "gauss"], "--tokens"),
    ("free_energy.py", ["--activation", "linear", "--layers", "2", "--P", "100", "--no-theory"], "--layers / --shift"),
    ("free_energy.py", ["--activation", "linear", "--mask", "causal", "--P", "100", "--no-theory"], "--mask"),
    ("demo.py", ["--L", "1"], "--L must be >= 2"),
    ("demo.py", ["--Ps", "0"], "--Ps must be >= 1"),
    ("demo.py", ["--seed", "-2"], "--seed must be >= 0"),
    ("bench_samplers.py", ["--L", "1"], "--L must be >= 2"),
    ("bench_samplers.py", ["--P", "0"], "--P must be >= 1"),
    ("bench_samplers.py", ["--step-size", "0"], "--step-size must be a finite number > 0"),
    ("bench_samplers.py", ["--chains", "2"], "--chains must be >= 4"),
    ("bench_samplers.py", ["--num-steps", "40", "--thin", "10"], "--num-steps / --thin must be >= 9"),
    ("bench_samplers.py", ["--activation", "relu"], "--activation"),
    ("bench_samplers.py", ["--data-seed", "-1"], "--data-seed must be >= 0"),
    ("bench_samplers.py", ["--num-steps", "300", "--budget-seconds", "5"], "exclude each other"),
    ("bench_samplers.py", ["--budget-seconds", "0"], "--budget-seconds must be a finite number > 0"),
    ("bench_samplers.py", ["--samplers", "sgld_mb"], "--batch-size: the minibatch samplers sgld_mb need one"),
    ("bench_samplers.py", ["--samplers", "sgld_mb", "--batch-size", "300"], "--batch-size must be in [1, P]"),
    ("bench_samplers.py", ["--step-size", "1e-3", "--step-factors", "1"], "exclude each other"),
    ("leaderboard.py", ["--L", "1"], "--L must be >= 2"),
    ("leaderboard.py", ["--budget-seconds", "-1"], "--budget-seconds must be a finite number > 0"),
    ("leaderboard.py", ["--regimes", "middle"], "--regimes"),
    ("leaderboard.py", ["--phase-chains", "0"], "--phase-chains must be >= 1"),
    ("bench_samplers.py", ["--phase-steps", "10"], "--phase-steps must be >= 30"),
    ("leaderboard.py", ["--samplers", "nope"], "--samplers"),
    ("leaderboard.py", ["--samplers", "sgld_mb"], "--batch-size"),
    ("llc.py", ["--P", "1"], "--P must be >= 2"),
    ("llc.py", ["--gamma", "0"], "--gamma must be a finite number > 0"),
    ("llc.py", ["--nbeta", "-3"], "--nbeta must be a finite number > 0"),
    ("llc.py", ["--chains", "1"], "--chains must be >= 2"),
    ("llc.py", ["--steps", "10"], "--steps must be >= 30"),
    ("llc.py", ["--activation", "relu"], "--activation"),
    ("llc.py", ["--L", "1"], "--L must be >= 2"),
])
def test_bad_arguments_exit_2(script, args, word, tmp_path):
    has_out = script in ("theory_figures.py", "validate_theory.py", "scaling.py", "free_energy.py", "bench_samplers.py",
                         "llc.py", "leaderboard.py")
    r = run(script, args if "--out" in args or not has_out else args + ["--out", str(tmp_path)])
    assert_cli_error(r, word)


@pytest.mark.parametrize("act, keys", [
    ("softmax", {"P_star", "P_star_err", "theory_P_star", "barrier_at_P_star", "per_seed", "points"}),
    ("linear", {"theory_P_onset", "theory_P_cross", "per_seed", "points"}),
])
@pytest.mark.slow
def test_free_energy_script_end_to_end_and_resume(act, keys, tmp_path):
    """scripts/free_energy.py at L = 4, V = 3: summary.json with the documented keys, the
    figure, and a second run that reuses every saved point (no new sampling)."""
    import json

    args = ["--L", "4", "--V", "3", "--activation", act, "--P", "30", "60", "--steps", "60",
            "--spacing", "0.3", "--no-theory", "--no-progress", "--out", str(tmp_path)]
    r = run("free_energy.py", args)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(Path(tmp_path / "summary.json").read_text())
    assert keys <= set(s) and [p["P"] for p in s["points"]] == [30, 60]
    w = s["points"][0]["family_weights" if act == "linear" else "weights"]
    assert sum(w) == pytest.approx(1.0, abs=1e-6)
    assert (tmp_path / "free_energy.png").stat().st_size > 0
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()}
    r2 = run("free_energy.py", args)
    assert r2.returncode == 0, r2.stderr[-2000:]
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()} == before


@pytest.mark.slow
def test_free_energy_scan_script_end_to_end_and_resume(tmp_path):
    """scripts/free_energy.py --scan at L = 4, V = 3: one tempered run, summary.json with the
    per-P keys plus method "scan", n_umbrella_runs 1 and seconds, the log-odds across the scan,
    the figure; a rerun reuses the saved scan; --scan with linear or a bad range is refused."""
    import json

    args = ["--L", "4", "--V", "3", "--scan", "20", "40", "--P0", "30", "--temper-spacing", "0.3", "--steps", "60",
            "--spacing", "0.3", "--bootstrap", "3", "--no-theory", "--no-progress", "--out", str(tmp_path)]
    r = run("free_energy.py", args)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads(Path(tmp_path / "summary.json").read_text())
    assert {"P_star", "P_star_err", "theory_P_star", "barrier_at_P_star", "method", "n_umbrella_runs",
            "seconds"} <= set(s)
    assert s["method"] == "scan" and s["n_umbrella_runs"] == 1 and s["seconds"] > 0
    c = s["scan"]["0"]
    assert c["P"][0] == pytest.approx(20) and c["P"][-1] == pytest.approx(40) and len(c["log_ratio"]) == len(c["P"])
    import numpy as np

    temps = np.array(s["per_seed"]["0"]["temps"])  # sampled tempers: even in log t, at most 0.3 apart
    assert temps[0] * 30 == pytest.approx(20) and temps[-1] * 30 == pytest.approx(40)
    assert np.allclose(np.diff(np.log(temps)), np.log(2) / (len(temps) - 1)) and np.log(2) / (len(temps) - 1) <= 0.3
    ov = s["per_seed"]["0"]["mbar_weakest_overlap"]  # MBAR's weakest link, flagged in the output
    assert 0 < ov <= 1 and s["per_seed"]["0"]["mbar_overlap_ok"] == (ov >= 0.03)
    assert (tmp_path / "free_energy.png").stat().st_size > 0
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()}
    assert run("free_energy.py", args).returncode == 0
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "points").iterdir()} == before
    assert_cli_error(run("free_energy.py", ["--activation", "linear", "--scan"]), "--scan is for softmax")
    assert_cli_error(run("free_energy.py", ["--scan", "40", "20"]), "P_lo < P_hi")


def test_free_energy_vs_L_reads_summaries(tmp_path):
    """scripts/free_energy_vs_L.py: the table (mean, error of the mean and sd over seeds), the
    fits of P*(L) and of the barrier, the JSON table and the figure from summary.json files
    (per-P and scan runs); a missing folder is an argument error."""
    import json

    runs = ((16, None, "per-P", [(1460.0, 6.0, float("nan"))]), (32, 2461.0, "per-P", [(2467.0, 5.0, 20.8), (2480.0, 7.0, 22.0)]),
            (64, 4225.0, "scan", [(4215.0, 2.0, 85.0), (4235.0, 2.0, 88.0)]))
    for L, th, method, ps in runs:
        d = tmp_path / f"fe{L}"
        d.mkdir()
        (d / "summary.json").write_text(json.dumps({"config": {"L": L, "V": 32, "activation": "softmax"}, "theory_P_star": th,
                   "method": method, "per_seed": {str(i): {"P_star": p, "P_star_err": e, "barrier_at_P_star": b,
                                                           "spinodal_low": 3700.0, "spinodal_high": None}
                                                  for i, (p, e, b) in enumerate(ps)}}))
    r = run("free_energy_vs_L.py", [str(tmp_path / f"fe{L}") for L in (32, 16, 64)] + ["--out", str(tmp_path / "fig")])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "2474 +- 6" in r.stdout and "(sd 9)" in r.stdout and "3700 / >edge" in r.stdout
    t = json.loads((tmp_path / "fig.json").read_text())
    # two L >= 32: the power law through 2473.5 and 4225 exactly
    assert t["fits"]["power"]["alpha"] == pytest.approx(np.log2(4225 / 2473.5))
    assert [row["L"] for row in t["rows"]] == [16, 32, 64] and (tmp_path / "fig.png").stat().st_size > 0
    r = run("free_energy_vs_L.py", [str(tmp_path / "nothing"), "--out", str(tmp_path / "fig")])
    assert_cli_error(r, "summary.json")


def test_token_laws_table_and_figure(tmp_path):
    """scripts/token_laws.py: theory P* from transitions JSON and exact P* from free-energy
    summaries, by law, at one (L, V); other sizes skipped; nothing to show is an argument error."""
    import json

    tr = tmp_path / "tr.json"
    tr.write_text(json.dumps([{"softmax": {"L": 8, "V": 4, "form": f, "P_star": p, "tokens": "zipf:1"}, "linear": None}
                              for f, p in (("map", 100.0), ("posterior", 120.0))]
                             + [{"softmax": {"L": 16, "V": 4, "form": "map", "P_star": 1.0, "tokens": "zipf:1"}, "linear": None}]))
    for name, tok, P in (("z", "zipf:1", 126.0), ("u", None, 150.0)):
        d = tmp_path / name
        d.mkdir()
        summ = {"config": {"L": 8, "V": 4, "activation": "softmax"}, "P_star": P, "P_star_err": 3.0, "method": "scan",
                "per_seed": {"0": {"barrier_at_P_star": 2.5}}}
        if tok:
            summ["tokens"] = tok
        (d / "summary.json").write_text(json.dumps(summ))
    r = run("token_laws.py", ["--L", "8", "--V", "4", "--runs", str(tmp_path / "z"), str(tmp_path / "u"),
                              "--transitions", str(tr), "--out", str(tmp_path / "fig")])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| zipf:1 | 100 | 120 | 126 ± 3 | +5.00% | 2.5 |" in r.stdout and "| uniform | - | - | 150 ± 3 |" in r.stdout
    assert (tmp_path / "fig.png").stat().st_size > 0
    assert_cli_error(run("token_laws.py", ["--L", "9", "--V", "4", "--transitions", str(tr), "--out", str(tmp_path / "f")]),
                     "nothing at L=9")


@pytest.mark.slow
def test_causal_script_end_to_end(tmp_path):
    """scripts/causal.py at L = 6, V = 3: the table, causal_map.json (per-row a_G from both
    starts, the global one; with --exact-chains the exact posterior's per P) and the figure; a
    too small --L or --exact-chains is an argument error."""
    r = run("causal.py", ["--L", "6", "--V", "3", "--P", "30", "300", "--steps", "100", "--exact-chains", "4",
                          "--exact-steps", "300", "--out", str(tmp_path)])
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads((tmp_path / "causal_map.json").read_text())
    assert [row["P"] for row in out["rows"]] == [30, 300]
    assert all(len(row["aG_rows"]["pool"]) == 5 and row["global"] in ("pool", "copy") for row in out["rows"])
    assert np.mean(out["rows"][1]["aG_rows"]["pool"]) > np.mean(out["rows"][0]["aG_rows"]["pool"])  # more data, more copy
    assert (tmp_path / "causal_map.png").stat().st_size > 0
    ex = [row["exact"] for row in out["rows"]]
    assert set(ex[0]["by_start"]) == {"pool", "copy"}
    assert ex[1]["mean"] > ex[0]["mean"] and "exact posterior (MALA, 4 x 300): mean a_G " in r.stdout
    assert_cli_error(run("causal.py", ["--L", "2", "--P", "10", "--out", str(tmp_path)]), "--L")
    assert_cli_error(run("causal.py", ["--P", "10", "--exact-chains", "1", "--out", str(tmp_path)]), "--exact-chains")


@pytest.mark.slow
def test_causal_script_linear(tmp_path):
    """scripts/causal.py --activation linear at L = 6, V = 3: the onset of the causal MAP form
    beside the full mask's, the exact posterior's |c_G| and c_1, in causal_map.json."""
    r = run("causal.py", ["--L", "6", "--V", "3", "--activation", "linear", "--P", "30", "300", "--steps", "100",
                          "--exact-chains", "4", "--exact-steps", "120", "--out", str(tmp_path)])
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads((tmp_path / "causal_map.json").read_text())
    o = out["onset"]
    assert o["P_onset"] > 0 and o["full_mask_P_onset"] > 0 and len(o["cG_rows"]) == 5
    assert "onset of the causal MAP form" in r.stdout and "mean |c_G|" in r.stdout
    assert all({"mean", "c1", "by_start"} <= set(row["exact"]) for row in out["rows"])


@pytest.mark.slow
def test_compile_cache_second_run_compiles_nothing_new(tmp_path):
    """The scripts enable JAX's persistent compilation cache: a first run fills it, a second
    run of the same shapes (into a fresh --out) adds no entry, i.e. loads every compiled
    function instead of compiling, and gives the same numbers. Every compilation is cached
    here (a threshold of 0 s): at the scripts' 0.2 s a small function whose compile time
    straddles it on a loaded machine was cached by one run and not the other."""
    import json

    env = os.environ | {"COPYJAX_COMPILE_CACHE_MIN_SECS": "0"}
    cache = tmp_path / "cache"
    args = ["--L", "4", "--V", "3", "--P", "30", "--steps", "60", "--spacing", "0.3", "--no-theory",
            "--no-progress", "--compile-cache", str(cache)]
    r = run("free_energy.py", args + ["--out", str(tmp_path / "a")], env)
    assert r.returncode == 0, r.stderr[-2000:]
    first = {p.name for p in cache.iterdir()}
    assert len(first) > 0
    r = run("free_energy.py", args + ["--out", str(tmp_path / "b")], env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert {p.name for p in cache.iterdir()} == first
    pts = [json.loads(Path(tmp_path / d / "summary.json").read_text())["points"] for d in "ab"]
    assert pts[0][0]["log_ratio"] == pts[1][0]["log_ratio"]


# ---------------------------------------------------------------- every README script, end to end
# (validate_theory.py once crashed after its first point, writing typed summaries into
# JSON, while its tests checked only bad arguments). Tiny sizes; outputs read back.


@pytest.mark.slow
def test_transitions_script_end_to_end(tmp_path):
    out = tmp_path / "tp.json"
    r = run("transitions.py", ["--LV", "8,4", "16,8", "--forms", "map", "--json", str(out)])
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads(out.read_text())
    assert len(rows) == 2 and set(rows[0]) == {"softmax", "linear"}
    assert rows[0]["softmax"]["L"] == 8 and rows[1]["linear"]["V"] == 8
    assert rows[0]["linear"]["P_onset"] < rows[1]["linear"]["P_onset"]  # P_1 grows with L and V
    assert "P_onset" in r.stdout or "P_1" in r.stdout
    # another token law: named in the output, and it moves the transition (docs/beyond.md)
    r = run("transitions.py", ["--LV", "16,8", "--forms", "map", "--tokens", "zipf:1", "--json", str(out)])
    assert r.returncode == 0, r.stderr[-2000:]
    z = json.loads(out.read_text())[0]
    assert "tokens: zipf:1" in r.stdout and z["softmax"]["tokens"] == "zipf:1" == z["linear"]["tokens"]
    assert rows[1]["softmax"]["tokens"] == "uniform" and z["softmax"]["P_star"] != rows[1]["softmax"]["P_star"]
    # --exact: a free-energy run's P* beside the theory's, for its (L, V) and law only
    fe = tmp_path / "fe"
    fe.mkdir()
    (fe / "summary.json").write_text(json.dumps({"config": {"L": 16, "V": 8}, "tokens": "zipf:1", "P_star": 301.4,
                                                 "P_star_err": 2.2, "per_seed": {"0": {"spinodal_low": 290.0,
                                                                                       "spinodal_high": None}}}))
    r = run("transitions.py", ["--LV", "16,8", "--forms", "map", "--tokens", "zipf:1", "--exact", str(fe)])
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| 16 | 8 | exact posterior | 301 ± 2 | 290-(past the scan) (two minima) |" in r.stdout
    r = run("transitions.py", ["--LV", "16,8", "--forms", "map", "--exact", str(fe)])
    assert r.returncode == 2 and "holds tokens zipf:1, not --tokens uniform" in r.stderr


@pytest.mark.slow
def test_free_energy_script_takes_a_token_law(tmp_path):
    """--tokens markov:Q: the data of that law (other log-odds than uniform data of the same
    seed), the law in the config (so uniform points are not reused for it) and in summary.json;
    --mask causal likewise (the causal model's density on the same data), and its errors."""
    import json

    args = ["--L", "4", "--V", "3", "--P", "40", "--steps", "60", "--spacing", "0.3", "--no-theory", "--no-progress"]
    for extra, sub in ((["--tokens", "uniform"], "u"), (["--tokens", "markov:0.6"], "m"), (["--mask", "causal"], "c")):
        r = run("free_energy.py", args + extra + ["--out", str(tmp_path / sub)])
        assert r.returncode == 0, r.stderr[-2000:]
    u, m, c = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("u", "m", "c"))
    assert u["tokens"] == "uniform" and "tokens" not in u["config"]
    assert m["tokens"] == "markov:0.6" == m["config"]["tokens"]
    assert m["points"][0]["log_ratio"] != u["points"][0]["log_ratio"]
    # --mask causal: the causal model's windows (another density: other log-odds), named in the config
    assert u["mask"] == "full" and "mask" not in u["config"]
    assert c["mask"] == "causal" == c["config"]["mask"]
    assert c["points"][0]["log_ratio"] != u["points"][0]["log_ratio"]
    for bad, word in ((["--mask", "causal", "--P", "40"], "--no-theory"),
                      (["--mask", "causal", "--activation", "linear", "--no-theory", "--P", "40"], "--activation")):
        r = run("free_energy.py", bad + ["--out", str(tmp_path / "bad")])
        assert r.returncode == 2 and word in r.stderr.strip().splitlines()[-1], r.stderr[-500:]


def test_demo_script_end_to_end():
    r = run("demo.py", ["--L", "4", "--V", "3", "--Ps", "20", "80"])
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [ln.split() for ln in r.stdout.splitlines() if ln.split()[:1] in (["softmax"], ["linear"])]
    assert len(rows) == 8  # 2 activations x 2 P x 2 starts
    assert {(a, int(P)) for a, P, *_ in rows} == {(a, P) for a in ("softmax", "linear") for P in (20, 80)}


def test_scaling_script_end_to_end(tmp_path):
    r = run("scaling.py", ["--Ls", "4", "8", "--Vs", "3", "4", "--out", str(tmp_path / "sc")])
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((tmp_path / "sc" / "scaling.json").read_text())
    assert s["form"] == "map" and len(s["rows"]) >= 4 and "linear_P_onset" in s["fits"]
    assert (tmp_path / "sc" / "scaling.png").stat().st_size > 0


@pytest.mark.slow
def test_validate_theory_script_end_to_end(tmp_path):
    r = run("validate_theory.py", ["--LV", "4,3", "--activation", "linear", "--n-P", "1", "--chains", "4",
                                   "--steps", "60", "--thin", "2", "--op-chains", "2", "--out", str(tmp_path)])
    assert r.returncode == 0, r.stderr[-2000:]
    rows = json.loads((tmp_path / "validate.json").read_text())["rows"]
    assert len(rows) == 1 and rows[0]["activation"] == "linear"
    ex = rows[0]["exact"]
    assert ex["n_chains"] == 4 and ex["n_used"] >= 2 and 0.0 <= ex["c1"]["mean"] <= 1.5
    assert set(rows[0]["posterior_form"]) >= {"c1", "cG", "loss", "weights"}
    assert "| 4 | 3 | linear |" in r.stdout


@pytest.mark.slow
def test_theory_figures_script_end_to_end_and_replot(tmp_path):
    out = tmp_path / "tf"
    r = run("theory_figures.py", ["--L", "4", "--V", "3", "--n-P", "3", "--chains", "2", "--draws", "10",
                                  "--softmax-points", "2", "--curve-points", "8", "--out", str(out)])
    assert r.returncode == 0, r.stderr[-2000:]
    t = json.loads((out / "theory.json").read_text())
    assert t["L"] == 4 and len(t["P"]) == 3 and set(t["transitions"]) == {
        f"{a}_{f}" for a in ("softmax", "linear") for f in ("map", "posterior")}
    assert t["susceptibility"]["linear"] and t["versions"]["jax"]
    pngs = {p.name for p in out.glob("*.png")}
    assert {"order_parameters.png", "susceptibility.png", "landscapes.png"} <= pngs
    for p in out.glob("*.png"):
        p.unlink()
    r = run("theory_figures.py", ["--replot", "--out", str(out)])
    assert r.returncode == 0, r.stderr[-2000:]
    assert {p.name for p in out.glob("*.png")} == pngs


@pytest.mark.slow
def test_llc_script_end_to_end_resume_and_a_row_recomputed(tmp_path):
    """scripts/llc.py at a tiny size writes llc.json with the documented fields and one
    inputs_<i>.npz per row; a rerun reuses every row; a row recomputed from its npz alone
    (statistics from the tokens, copyjax.llc with another chain key) agrees within 4 combined
    Monte Carlo errors; the same --out with another configuration is refused."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import copyjax as cj
    from copyjax import llc

    out = tmp_path / "llc"
    args = ["--L", "4", "--V", "3", "--P", "60", "200", "--activation", "softmax", "--chains", "4", "--steps", "600",
            "--adam-steps", "200", "--no-progress", "--out", str(out)]
    r = run("llc.py", args)
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads((out / "llc.json").read_text())
    rows = d["rows"]
    assert len(rows) >= 2 and {r["P"] for r in rows} == {60, 200}
    for k in ("activation", "P", "phase", "nbeta", "gamma", "llc_exact", "llc_exact_se", "rhat", "loss_star"):
        assert all(k in row for row in rows), k
    assert (out / "llc.png").exists()
    r2 = run("llc.py", args)
    assert r2.returncode == 0 and "lambda_hat" not in r2.stdout  # nothing recomputed
    assert json.loads((out / "llc.json").read_text())["rows"] == rows

    row = rows[-1]
    z = np.load(out / row["inputs"])
    assert z["tokens"].shape == (row["P"], 4)
    st = cj.sufficient_stats(jnp.asarray(z["tokens"]), 3).astype(jnp.float64)
    again = llc.estimate_llc(jax.random.key(123), st, z["W_star"], z["G_star"], "softmax", nbeta=row["nbeta"],
                             gamma=row["gamma"], n_chains=4, num_steps=1200)
    assert again.loss_star == pytest.approx(row["loss_star"], rel=1e-12)
    assert abs(again.llc - row["llc_exact"]) < 4 * np.hypot(again.llc_se, row["llc_exact_se"]), (again.llc, row)

    r3 = run("llc.py", args[:-1] + [str(out), "--steps", "900"])
    assert_cli_error(r3, "--out")


@pytest.mark.parametrize("args,word", [
    (["--scan", "100", "200", "--no-theory", "--scan-points", "1"], "--scan-points"),  # raised after ~40 s before
    (["--scan", "100", "200", "--no-theory", "--V", "1"], "--V"),
    (["--scan", "100", "200", "--no-theory", "--temper-spacing", "50"], "--temper-spacing"),  # two tempers, no overlap
    (["--scan", "100", "200", "--no-theory", "--first-layer", "uniform"], "--first-layer"),  # one layer: nothing to freeze
    (["--scan", "100", "200", "--no-theory", "--layers", "2", "--no-residual", "--first-layer", "uniform"],
     "--first-layer"),
])
def test_free_energy_refuses_what_cannot_work_before_computing(args, word, tmp_path):
    assert_cli_error(run("free_energy.py", [*args, "--out", str(tmp_path)]), word)


def test_every_script_is_a_main_and_leaves_sys_path_to_the_install():
    """docs/scripts.md's rule for scripts/: each runnable script defines ``main(argv=None)`` and
    calls it under ``if __name__ == "__main__"``; none edits ``sys.path`` except to add the
    working directory (a user's ``module:function`` sampler). Read from the source (ast), so a
    script with module-level work or a path hack fails here, not in a user's hands."""
    import ast

    bad = []
    for p in sorted(Path(ROOT, "scripts").glob("*.py")):
        if p.name.startswith("_"):
            continue
        tree = ast.parse(p.read_text())
        mains = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"]
        if not mains or [a.arg for a in mains[0].args.args] != ["argv"]:
            bad.append((p.name, "no main(argv)"))
        if not any(isinstance(n, ast.FunctionDef) and n.name == "parser" and not n.args.args for n in tree.body):
            bad.append((p.name, "no parser() (tests/test_fuzz.py fuzzes it)"))
        guard = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        if not guard or "main(" not in ast.unparse(guard[0]):
            bad.append((p.name, "no __main__ guard calling main"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("sys.path.insert", "sys.path.append"):
                if "os.getcwd()" not in ast.unparse(node):
                    bad.append((p.name, ast.unparse(node)))
    assert bad == [], bad


@pytest.mark.slow
def test_deeper_script_end_to_end(tmp_path):
    """scripts/deeper.py at L = 4, V = 3: one record per P with the three start families, each
    chain's end circuit, results.json and the figure; a rerun reuses the records, another data
    seed recomputes them."""
    args = ["--L", "4", "--V", "3", "--P", "20", "400", "--chains", "1", "--steps", "90", "--no-progress",
            "--out", str(tmp_path)]
    r = run("deeper.py", args)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["spec"] == "full+layers=2+shift=2" and [p["P"] for p in res["points"]] == [20, 400]
    for p in res["points"]:
        assert list(p["families"]) == ["prior", "one_layer", "composed"]
        assert [f["n"] for f in p["families"].values()] == [2, 1, 1]
        assert all(sum(f["ends"].values()) == f["n"] for f in p["families"].values())
    assert (tmp_path / "layers.png").stat().st_size > 0
    stamp = (tmp_path / "P400.json").stat().st_mtime_ns
    assert run("deeper.py", args).returncode == 0 and (tmp_path / "P400.json").stat().st_mtime_ns == stamp
    assert run("deeper.py", args + ["--data-seed", "1"]).returncode == 0
    assert (tmp_path / "P400.json").stat().st_mtime_ns != stamp
    assert_cli_error(run("deeper.py", ["--L", "2", "--P", "10", "--out", str(tmp_path)]), "--L")
    assert_cli_error(run("deeper.py", ["--shift", "3", "--P", "10", "--out", str(tmp_path)]), "--shift")


def test_deepers_circuit_labels():
    """``deeper.circuit`` labels the stack's own circuits (its ``copy_starts``, with and without
    the residual stream, k = 1 and 2) as theirs and the uniform pattern as pooling; and a
    linear one-layer circuit whose layer 2 puts less than half its weight on x_{l-1} while
    layer 1 scales the residual stream (A1 on x_l -0.21, on x_{l-1} 0.01: measured at L = 16,
    P = 2000) is one head, not composed (the rule before labelled it by A_2's weight > 1/2);
    either sign of a linear copy is a copy."""
    import jax.numpy as jnp

    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        from deeper import circuit
    finally:
        sys.path.pop(0)
    from copyjax import masks

    for k in (1, 2):
        for residual in (True, False):
            m = masks.get(f"full+layers=2+shift={k}" + ("" if residual else "+residual=no"))
            one, comp = m.copy_starts(6, "softmax", 20.0, jnp.float64)
            orders = [m.layer_order(G, "softmax") | m.order(m.attention(G, "softmax"), "softmax")
                      for G in (one, comp, 0 * one)]
            assert [circuit(o, k, residual) for o in orders] == ["one_layer", "composed", "pooling"], (k, residual)
    linear = {"cG": 0.477, "A1_I": -0.21, "A1_S": 0.01, "A1_S2": 0.0, "A2_I": 0.02, "A2_S": 0.39, "A2_S2": 0.0}
    assert circuit(linear, 1) == "one_layer"
    assert circuit(linear | {"A1_S": 0.6, "A2_I": 0.5, "A2_S": 0.1}, 1) == "composed"
    # the other sign family (G_2 -> -G_2: A_eff -> -A_eff) copies all the same
    flipped = linear | {"cG": -0.477, "A2_I": -0.02, "A2_S": -0.39}
    assert circuit(flipped, 1) == "one_layer" and circuit({"cG": -0.72}, 2) == "copy"
    # softmax with the residual stream: c_G of A_eff is on one layer's scale, so a copy phase
    # at L = 32 sits at c_G 0.29 (P = 3000): pooling is below the mask's phase divide (0.064)
    copying = {"cG": 0.288, "A1_I": 0.051, "A1_S": 0.03, "A1_S2": 0.03, "A2_I": 0.013, "A2_S": 0.014, "A2_S2": 0.58}
    divide = masks.get("full+layers=2+shift=2").divide(32)
    assert circuit(copying, 2, True, divide) == "one_layer"
    assert circuit(copying | {"cG": 0.01}, 2, True, divide) == "pooling"
