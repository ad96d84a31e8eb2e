"""The defaults the docs cite are the code's defaults (docs/phase_diagram.md once said 32
exact chains while the code ran 16; docs/sampling.md cited exact steps the code no longer
used). Reads the option table of docs/phase_diagram.md and the README's quick start."""
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _table_defaults():
    rows = {}
    for line in (ROOT / "docs" / "phase_diagram.md").read_text().splitlines():
        m = re.match(r"\| (`--[^|]+) \| ([^|]*) \|", line)
        if m:
            opts = re.findall(r"`(--[a-zA-Z0-9-]+)", m.group(1))
            rows[tuple(opts)] = m.group(2).strip()
    return rows


def test_phase_diagram_option_table_matches_the_code():
    sys.path.insert(0, str(ROOT / "scripts"))
    import phase_diagram as pd
    from copyjax.point.exact_chains import DEFAULT_EXACT_STEPS

    d = pd.PRESETS["default"]
    ap = pd.parser()
    default = lambda opt: ap.get_default(opt.lstrip("-").replace("-", "_"))
    t = _table_defaults()
    assert t[("--L", "--V")] == f"{default('--L')}, {default('--V')}"
    assert t[("--chains",)] == str(d["chains"]) and t[("--steps",)] == str(d["steps"])
    assert t[("--adam-seeds", "--adam-steps", "--adam-lr")] == f"{d['adam_seeds']}, {d['adam_steps']}, {default('--adam-lr'):g}"
    assert t[("--op-chains", "--op-draws")] == f"{d['op_chains']}, {d['op_draws']}"
    assert t[("--exact-chains", "--exact-steps")] == (f"{d['exact_chains']}; {DEFAULT_EXACT_STEPS['softmax']} softmax, "
                                                     f"{DEFAULT_EXACT_STEPS['linear']} linear")
    assert t[("--P-min", "--P-max", "--n-P")] == f"from theory, {d['n_P']}"
    assert t[("--no-free-energy", "--free-energy-steps")] == f"on, {pd.DEFAULT_FREE_ENERGY_STEPS}"
    assert t[("--seed",)] == str(default("--seed"))
    assert t[("--exact-map-steps",)] == str(default("--exact-map-steps"))
    assert t[("--llc-steps", "--llc-gamma")] == f"{default('--llc-steps')}, {default('--llc-gamma'):g}"
    assert "default 32" not in (ROOT / "docs" / "phase_diagram.md").read_text()


def test_summary_csv_table_lists_the_columns_in_the_writers_order():
    # the table of docs/phase_diagram.md, "Outputs and resuming", is what copyjax.point writes
    from copyjax.point import csv_columns

    text = (ROOT / "docs" / "phase_diagram.md").read_text().split("| column | meaning |", 1)[1].split("\n\n", 1)[0]
    listed = [c for line in text.splitlines()[2:] for c in re.findall(r"`([a-zA-Z0-9_]+)`", line.split("|")[1])]
    assert listed == list(csv_columns())


def test_readme_quick_start_is_two_commands_and_ci_runs_the_second():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```bash", 1)[1].split("```", 1)[0].strip().splitlines()
    assert block == ["pip install -e . && python scripts/phase_diagram.py --L 64 --V 32",
                     "pip install -e '.[test]' && python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q -e '.[test]'" in ci and "python3 -m pytest" in ci
    assert "pip install -q -e ." in ci  # the first command's install, without extras


def test_the_roofline_table_quotes_its_json():
    """docs/benchmarks.md's roofline table (chain-steps/s and % of the matmul at 256 / 1024 /
    4096 chains, MFLOP per chain-step, the machine's limits) is the saved run's JSON next to its
    figure, rounded as printed: a rerun that changes the JSON without the page fails here."""
    import json
    import re

    res = json.loads((ROOT / "docs" / "figures" / "roofline_cpu_L64_V32.json").read_text())
    page = (ROOT / "docs" / "benchmarks.md").read_text().split("## Roofline", 1)[1].split("\n## ", 1)[0]
    names = {"exact action": "action", "MALA step": "mala", "umbrella window": "umbrella",
             "network SGLD, full": "sgld", "network SGLD, mini": "sgld_mb"}
    rows = [ln for ln in page.splitlines() if ln.startswith("| ") and "chain-steps" not in ln and "---" not in ln]
    assert len(rows) == len(names)
    for ln in rows:
        kernel = next(v for k, v in names.items() if k in ln)
        by_n = {r["chains"]: r for r in res["rows"] if r["kernel"] == kernel}
        cells = [c.strip() for c in ln.strip("|").split("|")]
        assert float(cells[1]) == pytest.approx(by_n[1024]["flops_per_chain_step"] / 1e6, abs=0.05)
        assert float(re.match(r"[\d.]+", cells[2]).group()) == pytest.approx(by_n[1024]["intensity"], abs=0.05)
        rates = [int(x) for x in cells[3].split(" / ")]
        fracs = [int(x) for x in cells[4].split(" / ")]
        assert rates == [round(by_n[n]["chain_steps_per_s"]) for n in (256, 1024, 4096)], (kernel, rates)
        assert fracs == [round(100 * by_n[n]["frac_matmul"]) for n in (256, 1024, 4096)], (kernel, fracs)
    lim = res["limits"]
    assert f"at {lim['matmul_flops'] / 1e9:.0f} GFLOP/s" in page and f"at {lim['bandwidth'] / 1e9:.1f} GB/s" in page


def test_the_skinny_gemm_tables_quote_their_json():
    """docs/benchmarks.md's two skinny-GEMM tables are the saved run's JSON, rounded as printed."""
    import json

    res = json.loads((ROOT / "docs" / "figures" / "skinny_gemm_cpu_L64_V32.json").read_text())
    page = (ROOT / "docs" / "benchmarks.md").read_text().split("## The main job's batch", 1)[1].split("\n## ", 1)[0]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in page.splitlines()
            if ln.startswith("| ") and "---" not in ln and "rows of X" not in ln and "chains |" not in ln]
    gemm, action = rows[:len(res["gemm"])], rows[len(res["gemm"]):]
    assert [[int(r[0]), float(r[1]), int(r[2]), float(r[3]), int(r[4])] for r in gemm] == [
        [g["rows"], round(g["ms_C"], 2), round(g["gflops_C"]), round(g["ms_Ct"], 2), round(g["gflops_Ct"])]
        for g in res["gemm"]]
    assert [[int(r[0]), float(r[1]), float(r[2])] for r in action] == [
        [a["chains"], round(a["ms"], 2), round(a["ms_per_chain"], 2)] for a in res["action"]]


def test_the_scan_error_table_quotes_its_json():
    """docs/benchmarks.md's table of the scan's reported errors against the spread of repeats is
    the saved runs' JSON (benchmarks/scan_error.py), rounded as printed, the spread recomputed
    from the runs' own P*."""
    import json

    import numpy as np

    page = (ROOT / "docs" / "benchmarks.md").read_text().split("## Is the scan's error its Monte Carlo error?", 1)[1]
    rows = {int(r[0]): r for r in ([c.strip() for c in ln.strip("|").split("|")] for ln in page.splitlines()
                                    if re.match(r"\| \d+ \| \d+ \|", ln))}
    for steps in (300, 900):
        res = json.loads((ROOT / "docs" / "figures" / f"scan_error_L16_V8_steps{steps}.json").read_text())
        P = np.array([r["P_star"] for r in res["runs"]])
        assert res["steps"] == steps and np.std(P, ddof=1) == pytest.approx(res["P_star_sd"])
        m, b = res["err_mbar"], res["boot_sd"]
        want = [str(steps), str(res["repeats"]), f"{res['P_star_mean']:.1f}", f"{res['P_star_sd']:.2f}",
                f"{m['mean_reported']:.2f}", f"{m['ratio']:.2f} ({m['interval90'][0]:.2f}-{m['interval90'][1]:.2f})",
                f"{b['mean_reported']:.2f}", f"{b['ratio']:.2f} ({b['interval90'][0]:.2f}-{b['interval90'][1]:.2f})"]
        assert rows[steps] == want, (rows[steps], want)


def test_the_scan_against_per_p_table_quotes_its_json():
    """docs/benchmarks.md's scan-against-per-P table (benchmarks/scan_error.py --per-p) is the
    saved JSON, rounded as printed; its efficiencies recomputed from the JSON's own times and
    spreads (time x sd^2, per-P over scan)."""
    import json

    page = (ROOT / "docs" / "benchmarks.md").read_text().split("**Against the per-P method, from the spreads.**", 1)[1]
    for name, head in (("scan_error_L16_V8_steps900_perP", "| 16 | 8 |"), ("scan_error_L32_V32_steps900_perP", "| 32 | 32 |")):
        row = next([c.strip() for c in ln.strip("|").split("|")] for ln in page.splitlines() if ln.startswith(head))
        d = json.loads((ROOT / "docs" / "figures" / f"{name}.json").read_text())
        p = d["per_p"]
        eff = (p["seconds"] * p["P_star_sd"] ** 2) / (d["seconds"] * d["P_star_sd"] ** 2)
        assert eff == pytest.approx(p["efficiency_from_spreads"])
        want = [str(d["L"]), str(d["V"]), str(d["repeats"]),
                f"{d['P_star_sd']:.2f} ({d['err_mbar']['mean_reported']:.2f} / {d['boot_sd']['mean_reported']:.2f})",
                f"{d['seconds'] / d['repeats']:.1f}", f"{p['P_star_sd']:.2f} ({p['err_mbar']['mean_reported']:.2f})",
                f"{p['seconds'] / d['repeats']:.1f}", f"{eff:.2f}", f"{p['efficiency_from_reported']:.2f}"]
        assert row == want, (row, want)


def test_the_readme_quotes_the_scan_efficiency_from_the_spreads():
    """The README's scan-against-per-P sentence is the per-P JSON's efficiency from the spreads
    (per-P over scan, time x sd^2): ``1.5x cheaper`` at L = 32 and ``2.4x dearer`` at L = 16."""
    import json
    import re

    text = " ".join((ROOT / "README.md").read_text().split())
    eff = {L: json.loads((ROOT / "docs" / "figures" / f"scan_error_L{L}_V{V}_steps900_perP.json").read_text())
           ["per_p"]["efficiency_from_spreads"] for L, V in ((16, 8), (32, 32))}
    m = re.search(r"the scan is (\d+\.\d)x cheaper at L = 32, V = 32 and (\d+\.\d)x dearer at L = 16, V = 8", text)
    assert m, "the README's scan sentence is gone or reworded"
    assert (m[1], m[2]) == (f"{eff[32]:.1f}", f"{1 / eff[16]:.1f}"), (m.groups(), eff)
