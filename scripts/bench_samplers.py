"""Score samplers against the exact posterior of the copy order parameter (copyjax.bench).

    python scripts/bench_samplers.py --L 4 --V 3 --activation softmax --P 200 \
        --samplers mala sgld mymodule:build --out runs/bench

A sampler is a registry name (copyjax.bench.SAMPLERS: mala, barker, sgld, psgld, sghmc, sgnht,
nuts, mclmc; the minibatch sgld_mb, psgld_mb, sghmc_mb, sgnht_mb) or an import
path ``module:function`` to ``build(logdensity_fn, step_size) -> blackjax.SamplingAlgorithm``
on the position {"W": (V, V), "G": (L, L)} (a module on PYTHONPATH or in the working
directory). A minibatch sampler is ``build(logdensity_fn, grad_estimator, step_size)``:
``grad_estimator(rng_key, position)`` is the unbiased estimate of the log posterior's gradient
on --batch-size sequences drawn from the key (copyjax's one-hot-free estimator). Without --step-size each sampler runs at 0.25, 1 and 4 times (--step-factors) eps0 = 0.05 / lambda_W,
lambda_W = beta P / V + V / sigma_w2 the largest curvature of -log p (in W): the step at which
an explicit Langevin step is stable in the stiffest direction, bracketed by a factor 4 each way.
--budget-seconds gives every sampler and step size the same sampling time instead of the same
number of steps.

Writes DIR/report.json ({"task": ..., "reference": ..., "rows": [...]}, one row per sampler and
step size: verdict (agrees, disagrees or inconclusive) and verdict_reason, bias_z, sd_ratio, w1,
ks, ... and prior_* for the run from prior starts; the reference's gate: R-hat < 1.01, bulk and
tail ESS >= 400, or every verdict is inconclusive), DIR/report.md (a table) and
DIR/bias_vs_step.png (bias and time to equilibrium against step size; two-phase: the copy
weight too); each row is saved as it finishes (DIR/rows/, keyed to the task, the sampler (an
import path's source file by its digest), every run setting and the reference's settings), so
an interrupted run resumes and a row is reused only for the same run. A DIR that holds another
task's report is refused. The exact reference is cached in ~/.cache/copyjax/bench (--cache-dir).

Inside a softmax coexistence window (the exact chains' start families disagree), or anywhere
with --phase-weights, the reference is the mixture of the pooling and copy phases: weights
from the free energy (umbrella sampling + MBAR, --phase-steps x --phase-chains per window),
each phase's statistics from the exact draws on its side; the rows add the copy weight from
exact and from prior starts against the free energy's (part of the verdict), the phase
changes, and agrees_within_phases (each phase right where the sampler visits it).
"""
import argparse
import os
import sys

from _cli import add_distributed_options, int_at_least, nonneg_int, positive_float, positive_int, start_distributed


def parser():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int_at_least("--L", 2), default=4)
    ap.add_argument("--V", type=int_at_least("--V", 2), default=3)
    ap.add_argument("--activation", choices=["softmax", "linear"], default="softmax")
    ap.add_argument("--P", type=positive_int("--P"), default=200)
    ap.add_argument("--data-seed", type=nonneg_int("--data-seed"), default=0)
    ap.add_argument("--samplers", nargs="+", default=["mala", "barker", "sgld", "psgld"],
                    help="registry names or module:function import paths")
    ap.add_argument("--step-size", type=positive_float("--step-size"), nargs="+",
                    help="step sizes (default: 0.25, 1, 4 x eps0 = 0.05 / lambda_W)")
    ap.add_argument("--step-factors", type=positive_float("--step-factors"), nargs="+",
                    help="instead of --step-size: step sizes as multiples of eps0 (default 0.25 1 4)")
    ap.add_argument("--num-steps", type=int_at_least("--num-steps", 30),
                    help="steps per run (default 6000; not with --budget-seconds)")
    ap.add_argument("--budget-seconds", type=positive_float("--budget-seconds"),
                    help="instead of --num-steps: each run takes the steps that fill this many seconds of "
                         "sampling (timed by two pilot runs per sampler and step size): an equal wall budget")
    ap.add_argument("--batch-size", type=positive_int("--batch-size"),
                    help="sequences per gradient estimate of the minibatch samplers (sgld_mb, ..., or a user's "
                         "build(logdensity_fn, grad_estimator, step_size)); they need it, the others ignore it")
    ap.add_argument("--chains", type=int_at_least("--chains", 4), default=256)
    ap.add_argument("--thin", type=positive_int("--thin"), default=10)
    ap.add_argument("--ref-chains", type=int_at_least("--ref-chains", 4), default=32)
    ap.add_argument("--ref-steps", type=int_at_least("--ref-steps", 30), default=1500)
    ap.add_argument("--phase-weights", action="store_true",
                    help="softmax: score against the two-phase reference (phase weights from the free energy, "
                         "copyjax.bench.phases) even where the exact chains' start families agree; it is used "
                         "anyway where they disagree (a coexistence window)")
    ap.add_argument("--phase-steps", type=int_at_least("--phase-steps", 30), default=900,
                    help="umbrella steps per window of the phase weights (default 900)")
    ap.add_argument("--phase-chains", type=positive_int("--phase-chains"), default=1,
                    help="umbrella chains per window of the phase weights (default 1)")
    ap.add_argument("--seed", type=nonneg_int("--seed"), default=0)
    ap.add_argument("--cache-dir", help="where exact references are cached (default ~/.cache/copyjax/bench)")
    ap.add_argument("--out", default="runs/bench")
    ap.add_argument("--no-progress", action="store_true")
    add_distributed_options(ap)
    return ap


def main(argv=None):
    a = parser().parse_args(argv)
    if a.num_steps is not None and a.budget_seconds is not None:
        parser().error("--num-steps and --budget-seconds exclude each other")
    if a.step_size is not None and a.step_factors is not None:
        parser().error("--step-size and --step-factors exclude each other")
    if a.budget_seconds is None and a.num_steps is None:
        a.num_steps = 6000
    if a.num_steps is not None and a.num_steps // a.thin < 9:
        parser().error(f"--num-steps / --thin must be >= 9, got {a.num_steps} / {a.thin}")
    sys.path.insert(0, os.getcwd())  # a user's module:function from the working directory
    start_distributed(parser(), a)  # before any other JAX call
    import jax

    jax.config.update("jax_enable_x64", True)

    from copyjax import bench, results

    try:
        specs = [bench.resolve(s) for s in a.samplers]
    except ValueError as e:
        parser().error(f"--samplers: {e}")
    minibatch = [name for name, build in specs if bench.is_minibatch(build)]
    if minibatch and a.batch_size is None:
        parser().error(f"--batch-size: the minibatch samplers {', '.join(minibatch)} need one")
    if a.batch_size is not None and a.batch_size > a.P:
        parser().error(f"--batch-size must be in [1, P] = [1, {a.P}], got {a.batch_size}")
    task = bench.Task(a.L, a.V, a.activation, a.P, a.data_seed).checked()
    old = os.path.join(a.out, "report.json")
    if os.path.exists(old) and results.read_json(old).get("task") != task._asdict():
        parser().error(f"--out {a.out} holds the report of another task ({results.read_json(old).get('task')}); "
                       "use another --out")
    os.makedirs(os.path.join(a.out, "rows"), exist_ok=True)
    print(f"exact reference: L={a.L} V={a.V} {a.activation} P={a.P} data seed {a.data_seed} "
          f"({a.ref_chains} chains x {a.ref_steps} steps, cached)", flush=True)
    if a.phase_weights and a.activation != "softmax":
        parser().error("--phase-weights: softmax only (linear attention has no coexistence window)")
    ref = bench.reference(task, n_chains=a.ref_chains, num_steps=a.ref_steps, cache_dir=a.cache_dir,
                          progress=not a.no_progress, phases=True if a.phase_weights else None,
                          phase_steps=a.phase_steps, phase_chains=a.phase_chains)
    r = ref.summary_cG
    pooled = " pooled over both phases' chains" if ref.phases is not None else ""
    print(f"  c_G{pooled}: mean {r.mean:.4f} +- {r.mcse:.4f}, sd {r.sd:.4f} (R-hat {r.rhat:.3f}, ESS {r.ess:.0f})",
          flush=True)
    g = ref.gate
    within = f" {g['scope']}" if g.get("scope") else ""
    print(f"  reference gate: {'passed' if g['ok'] else 'FAILED'}: {g['reason']} (worst{within}: R-hat of c_G "
          f"{g['rhat']:.3f}, bulk / tail ESS {g['ess_bulk']:.0f} / {g['ess_tail']:.0f})", flush=True)
    if ref.phases is not None:
        ph = ref.phases
        print(f"  two phases (free energy): copy weight {ph.weights[1]:.3f} +- {ph.weights_sd[1]:.3f}; c_G "
              f"{ph.cG[0].mean:.4f} (pooling) / {ph.cG[1].mean:.4f} (copy)", flush=True)
    elif ref.branches_disagree:
        parser().error("--P: the exact chains' start families disagree here (a coexistence window) and the "
                       "reference has no phase weights (linear attention?)")
    eps0 = task.eps0
    steps = a.step_size or [f * eps0 for f in (a.step_factors or (0.25, 1.0, 4.0))]
    rows, reused = [], 0
    ref_settings = {"n_chains": a.ref_chains, "num_steps": a.ref_steps, "phases": True if a.phase_weights else None,
                    "phase_steps": a.phase_steps, "phase_chains": a.phase_chains}
    for name, build in specs:
        for eps in steps:
            batch = a.batch_size if bench.is_minibatch(build) else None
            key = {"task": task._asdict(), "sampler": name, "source": sampler_source(name, build), "step_size": eps,
                   "n_chains": a.chains, "num_steps": a.num_steps, "budget_seconds": a.budget_seconds,
                   "batch_size": batch, "thin": a.thin, "seed": a.seed, "reference": ref_settings,
                   "scores_version": bench.score.SCORES_VERSION, "x64": True}
            path = os.path.join(a.out, "rows", f"{name.replace(':', '__').replace('/', '_')}_{eps:.6g}_"
                                f"{results.config_hash(key)}.json")
            row = results.load_if_same(path, key)
            if row is not None:
                row = rejudge({k: v for k, v in row.items() if k not in ("key", "key_hash")}, ref.gate)  # the criteria may have changed since it was saved
                rows.append(row)
                reused += 1
                print(f"  {name} eps={eps:.3g}: reused ({row['verdict']})", flush=True)
                continue
            s = bench.score_sampler(ref, name, build, eps, n_chains=a.chains, num_steps=a.num_steps, thin=a.thin,
                                    seed=a.seed, progress=not a.no_progress, budget_seconds=a.budget_seconds,
                                    batch_size=batch)
            row = s.row() | {"budget_seconds": a.budget_seconds}
            results.save_with_key(path, key, row)
            # drop this row's compiled programs (no later row reuses them): a long run otherwise
            # accumulates them until LLVM cannot map code for the next one (the leaderboard died
            # so twice, "Cannot allocate memory" with 20 GB free: the process's memory maps)
            jax.clear_caches()
            rows.append(row)
            print(f"  {name} eps={eps:.3g}: {row['verdict'].upper()} ({row['verdict_reason']}; bias_z {row['bias_z']:+.1f}, sd ratio {row['sd_ratio']:.3f}, R-hat {row['rhat']:.3f}, "
                  f"from prior: bias_z {row['prior_bias_z']:+.1f}, equilibrium at step "
                  f"{row['prior_steps_to_equilibrium']})"
                  + ("" if ref.phases is None else
                     f"; copy weight {row['phase_weight']:.2f} / from prior {row['prior_phase_weight']:.2f}, "
                     f"{'right' if row['agrees_within_phases'] else 'WRONG'} within phases"), flush=True)
    results.write_json(os.path.join(a.out, "report.json"), {
        "task": task._asdict(), "reference": {"cG": r.to_json(), "loss": ref.summary_loss.to_json(),
                                              "quantiles": ref.quantiles(), "gate": ref.gate,
                                              "settings": ref_settings,
                                              "phases": None if ref.phases is None else ref.phases.to_json()},
        "eps0": eps0, "rows": rows, "reused_rows": reused})
    write_markdown(os.path.join(a.out, "report.md"), task, ref, rows)
    plot(os.path.join(a.out, "bias_vs_step.png"), rows, ref.phases)
    print(f"report.json, report.md, bias_vs_step.png in {a.out}", flush=True)
    return rows


def sampler_source(name: str, build) -> str | None:
    """A digest of the source file of an import path's ``build`` (None for registry names,
    which the copyjax version pins): an edited user sampler is a different sampler."""
    import inspect

    from copyjax import results

    if ":" not in name:
        return None
    try:
        return results.file_digest(inspect.getsourcefile(build))
    except (TypeError, OSError):
        return None


def rejudge(row: dict, gate: dict) -> dict:
    """``row`` judged again (``bench.judge``) against the reference's ``gate``."""
    from copyjax import bench

    return row | bench.score.judged(row, gate)


def table(rows) -> list[str]:
    """The markdown table of ``report.json`` rows (also ``scripts/leaderboard.py``'s); two-phase
    rows add the copy weight (z against the free energy's) from exact and from prior starts,
    the phase changes of both runs, and whether each phase is right (per-phase bias z of c_G
    and of the loss, the largest)."""
    num = lambda v, f: "-" if v is None else format(v, f)
    # A diverged-but-finite run (SGHMC at a large step: loss ~ 1e133) in fixed point would
    # print a hundred digits: past 1e4 the magnitude is the information.
    fix = lambda v, f: format(v, "+.1e" if abs(v) >= 1e4 else f)
    two = any(w.get("two_phase") for w in rows)
    lines = ["| sampler | step | steps | wall s | verdict | bias (z) | sd ratio | W1 | loss bias (z) | R-hat | ESS/s | "
             "ESS/grad | from prior: bias (z) | to equilibrium: steps (s) | grads to b^2 < 0.01 |"
             + (" copy weight (z) | from prior (z) | crossings | within phases: max z |" if two else ""),
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|---|" if two else "")]
    for w in rows:
        eq = w["prior_steps_to_equilibrium"]
        eq = "never" if eq is None else f"{eq} ({num(w.get('prior_seconds_to_equilibrium'), '.1f')})"
        name = w["sampler"] if w.get("batch_size") is None else f"{w['sampler']} (B = {w['batch_size']})"
        lines.append(f"| {name} | {w['step_size']:.3g} | {w['num_steps']} | {w['wall_s']:.1f} | "
                     f"{w.get('verdict', 'yes' if w['agrees_with_exact'] else 'no')} | "
                     f"{fix(w['bias'], '+.4f')} ({fix(w['bias_z'], '+.1f')}) | {fix(w['sd_ratio'], '.3f')} +- {fix(w['sd_ratio_se'], '.3f')} | "
                     f"{fix(w['w1'], '.4f')} | {fix(w['loss_bias'], '+.4f')} ({fix(w['loss_bias_z'], '+.1f')}) | "
                     f"{fix(w['rhat'], '.3f')} | {w['ess_per_s']:.1f} | {num(w.get('ess_per_grad'), '.3f')} | "
                     f"{fix(w['prior_bias'], '+.4f')} ({fix(w['prior_bias_z'], '+.1f')}) | {eq} | "
                     f"{_grads(w.get('prior_grads_to_low_bias'))} |" + (_phase_cells(w) if two else ""))
    return lines


def _grads(g) -> str:
    """Full-data gradients to a normalised squared bias below 0.01 from prior starts; 'never'."""
    return "never" if g is None else format(g, ".3g")


def _phase_cells(w) -> str:
    import math

    z = [w.get(f"{k}_{side}", float("nan")) for k in ("bias_z", "loss_bias_z") for side in ("pooling", "copy")]
    worst = "-" if any(map(math.isnan, z)) else f"{max(map(abs, z)):.1f}"
    right = "yes" if w.get("agrees_within_phases") else "no"
    return (f" {w['phase_weight']:.2f} ({w['phase_weight_z']:+.1f}) | {w['prior_phase_weight']:.2f} "
            f"({w['prior_phase_weight_z']:+.1f}) | {w['phase_crossings']} / {w['prior_phase_crossings']} | "
            f"{right} ({worst}) |")


def write_markdown(path, task, ref, rows):
    from copyjax.results import atomic_write_bytes

    r = ref.summary_cG
    lines = [f"# Samplers against the exact posterior: L = {task.L}, V = {task.V}, {task.activation}, P = {task.P}",
             "", f"Exact c_G: mean {r.mean:.4f} +- {r.mcse:.4f}, sd {r.sd:.4f}."]
    if ref.phases is not None:
        ph = ref.phases
        lines += ["", f"Two phases (the divide a_G = {ph.divide:.3f}): copy weight {ph.weights[1]:.3f} +- "
                  f"{ph.weights_sd[1]:.3f} (free energy, MBAR); c_G {ph.cG[0].mean:.4f} (sd {ph.cG[0].sd:.4f}) "
                  f"in the pooling phase, {ph.cG[1].mean:.4f} (sd {ph.cG[1].sd:.4f}) in the copy phase; the exact "
                  "c_G above is their mixture."]
    g = ref.gate
    lines += ["", f"Reference gate (R-hat < 1.01, bulk and tail ESS >= 400 for c_G and the loss): "
              f"{'passed' if g['ok'] else 'FAILED, every verdict inconclusive'}: {g['n_draws']} draws, R-hat "
              f"{g['rhat']:.4f}, ESS bulk {g['ess_bulk']:.0f} / tail {g['ess_tail']:.0f} (loss: R-hat "
              f"{g['loss_rhat']:.4f}, {g['loss_ess_bulk']:.0f} / {g['loss_ess_tail']:.0f})."]
    lines += [""] + table(rows)
    reasons = [f"- {w['sampler']} at {w['step_size']:.3g}: {w['verdict']}: {w['verdict_reason']}" for w in rows
               if w.get("verdict") and w["verdict"] != "agrees"]
    lines += ["", "Why not agrees:", ""] + reasons if reasons else []
    atomic_write_bytes(path, ("\n".join(lines) + "\n").encode())


def plot(path, rows, phases=None):
    """Bias against step size and time to equilibrium; with ``phases`` (a two-phase reference)
    a third panel: each sampler's copy-phase weight from exact (filled) and prior (hollow)
    starts against the free energy's (the band: +- 2 of its errors)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4 if phases is not None else 3, figsize=(20 if phases is not None else 15, 4))
    ax, bx, cx = axes[0], axes[1], axes[-1]
    for name in dict.fromkeys(w["sampler"] for w in rows):
        ws = sorted((w for w in rows if w["sampler"] == name), key=lambda w: w["step_size"])
        line = ax.errorbar([w["step_size"] for w in ws], [w["bias"] for w in ws], [w["mcse"] for w in ws],
                           marker="o", capsize=2, label=name)[0]
        # time to equilibrium from prior starts; a run that never arrives is drawn at its full length, hollow
        eq = [(w["step_size"], w["prior_seconds_to_equilibrium"]) for w in ws
              if w.get("prior_seconds_to_equilibrium") is not None]
        never = [(w["step_size"], w["prior_wall_s"]) for w in ws if w.get("prior_seconds_to_equilibrium") is None]
        if eq:
            bx.plot(*zip(*eq), marker="o", color=line.get_color(), label=name)
        cost = [(w["step_size"], w["prior_grads_to_low_bias"]) for w in ws if w.get("prior_grads_to_low_bias")]
        if cost:
            cx.plot(*zip(*cost), marker="o", color=line.get_color(), label=name)
        if never:
            bx.plot(*zip(*never), ls="none", marker="o", mfc="none", color=line.get_color())
        if phases is not None:
            steps = [w["step_size"] for w in ws]
            axes[2].plot(steps, [w["phase_weight"] for w in ws], marker="o", color=line.get_color(), label=name)
            axes[2].plot(steps, [w["prior_phase_weight"] for w in ws], ls=":", marker="o", mfc="none",
                         color=line.get_color())
    cx.set(xscale="log", yscale="log", xlabel="step size",
           ylabel="full-data gradients from prior starts until\nb^2 of E[c_G], E[c_G^2] stays < 0.01 (none: never)")
    ax.axhline(0, color="k", lw=0.8)
    ax.set(xscale="log", xlabel="step size", ylabel="bias of the mean of c_G (stationary)")
    bx.set(xscale="log", yscale="log", xlabel="step size",
           ylabel="seconds to equilibrium from prior starts\n(hollow: not reached within the run)")
    ax.legend(fontsize=8)
    if phases is not None:
        w, sd = phases.weights[1], phases.weights_sd[1]
        axes[2].axhspan(w - 2 * sd, w + 2 * sd, color="0.85", zorder=0)
        axes[2].axhline(w, color="k", lw=0.8)
        axes[2].set(xscale="log", ylim=(-0.03, 1.03), xlabel="step size",
                    ylabel="copy-phase weight (filled: exact starts,\nhollow: prior starts; band: free energy)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
