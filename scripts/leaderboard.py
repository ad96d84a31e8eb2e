"""Regenerate the sampler leaderboard: every sampler against the exact posterior on a grid of tasks.

    python scripts/leaderboard.py --out runs/leaderboard          # the grid of docs/leaderboard.md

For each L (--L), activation (--activations) and regime (--regimes: ``below`` at half the
reduced theory's lower edge of the transition, ``above`` at 1.5 times its upper edge; softmax:
the MAP form's spinodals, or its steepest point where it has no two minima; linear: the onset
P_1 and the crossover P_x; ``inside``, softmax only, at the posterior form's equal-mass P*,
scored against the two-phase reference: phase weights from the free energy, --phase-steps x
--phase-chains umbrella steps per window), ``scripts/bench_samplers.py`` scores every sampler (--samplers,
default the whole registry) at --step-factors x eps0 with an equal wall budget per run
(--budget-seconds of sampling, compilation and tuning not counted) in
OUT/L{L}_V{V}_{activation}_{regime}_data{data seed}/.
The tables go into --doc (default docs/leaderboard.md) between the lines
``<!-- leaderboard:begin -->`` and ``<!-- leaderboard:end -->`` (appended if absent), and into
OUT/leaderboard.md, rewritten after every task (tasks still to run are listed as pending). The
tasks of --doc's section that a run does not include are kept as they were, so a run of one
task (``--L 64 --activations linear``) adds or replaces that task alone; each task's table says
which command ran it.
Every task resumes from its saved rows, so an interrupted run continues where it stopped.
Linear attention has no ``inside`` task (its transition is continuous: no coexistence window).
"""
import argparse
import os
import re
import sys
import time
from pathlib import Path

from _cli import add_distributed_options, int_at_least, nonneg_int, positive_float, start_distributed

BEGIN, END = "<!-- leaderboard:begin -->", "<!-- leaderboard:end -->"


def parser():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--L", type=int_at_least("--L", 2), nargs="+", default=[16, 32, 64])
    ap.add_argument("--V", type=int_at_least("--V", 2), default=32)
    ap.add_argument("--activations", nargs="+", choices=["softmax", "linear"], default=["softmax", "linear"])
    ap.add_argument("--regimes", nargs="+", choices=["below", "inside", "above"], default=["below", "inside", "above"])
    ap.add_argument("--samplers", nargs="+", help="registry names or module:function paths (default: the registry's "
                    "full-batch samplers, and its minibatch ones with --batch-size)")
    ap.add_argument("--batch-size", type=int_at_least("--batch-size", 1),
                    help="sequences per gradient estimate of the minibatch samplers")
    ap.add_argument("--step-factors", type=positive_float("--step-factors"), nargs="+", default=[0.25, 1.0, 4.0],
                    help="step sizes as multiples of eps0 = 0.05 / lambda_W (default 0.25 1 4)")
    ap.add_argument("--budget-seconds", type=positive_float("--budget-seconds"), default=20.0,
                    help="sampling seconds per run, the same for every sampler and step (default 20)")
    ap.add_argument("--chains", type=int_at_least("--chains", 4), default=64)
    ap.add_argument("--thin", type=int_at_least("--thin", 1), default=10)
    ap.add_argument("--ref-chains", type=int_at_least("--ref-chains", 4), default=32)
    ap.add_argument("--ref-steps", type=int_at_least("--ref-steps", 30), default=6000,
                    help="steps of each exact reference chain (default 6000: at 1500 the L = 16 softmax task below the "
                         "transition failed the gate, R-hat 1.010)")
    ap.add_argument("--phase-steps", type=int_at_least("--phase-steps", 30), default=1800,
                    help="inside tasks: umbrella steps per window of the phase weights (default 1800)")
    ap.add_argument("--phase-chains", type=int_at_least("--phase-chains", 1), default=4,
                    help="inside tasks: umbrella chains per window of the phase weights (default 4)")
    ap.add_argument("--data-seed", type=nonneg_int("--data-seed"), default=0)
    ap.add_argument("--seed", type=nonneg_int("--seed"), default=0)
    ap.add_argument("--cache-dir", help="where exact references are cached (default ~/.cache/copyjax/bench)")
    ap.add_argument("--out", default="runs/leaderboard")
    ap.add_argument("--doc", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                  "docs", "leaderboard.md"),
                    help="markdown file whose generated section is replaced (default docs/leaderboard.md)")
    ap.add_argument("--no-progress", action="store_true")
    add_distributed_options(ap)
    return ap


def regime_P(L, V, activation, regime) -> int | None:
    """The task's P: ``below`` / ``inside`` / ``above`` the reduced theory's transition (the
    module docstring); None for ``inside`` where there is no coexistence (linear attention)."""
    import copyjax as cj

    if regime == "inside":
        if activation != "softmax":
            return None
        P = cj.theory.transition_points(L, V, activation, form="posterior").P_star
        return None if P is None else int(round(P))
    t = cj.theory.transition_points(L, V, activation, form="map")
    if activation == "softmax":
        lo, hi = t.P_spinodal_low or t.P_steepest, t.P_spinodal_high or t.P_steepest
    else:
        lo, hi = t.P_onset, max(t.P_onset, t.P_cross or t.P_onset)
    return int(round(0.5 * lo if regime == "below" else 1.5 * hi))


def main(argv=None):
    a = parser().parse_args(argv)
    sys.path.insert(0, os.getcwd())  # a user's module:function from the working directory
    start_distributed(parser(), a)  # before any other JAX call; bench_samplers.py runs in this process
    import jax

    jax.config.update("jax_enable_x64", True)
    import bench_samplers
    from copyjax import bench, results

    samplers = a.samplers or [k for k in bench.SAMPLERS if a.batch_size or k in bench.FULL_BATCH]
    for s in samplers:
        try:
            minibatch = bench.is_minibatch(bench.resolve(s)[1])
        except ValueError as e:
            parser().error(f"--samplers: {e}")
        if minibatch and a.batch_size is None:
            parser().error(f"--batch-size: the minibatch sampler {s} needs one")
    t0 = time.perf_counter()
    cmd = " ".join(["python scripts/leaderboard.py", *(sys.argv[1:] if argv is None else argv)])
    grid = [{"L": L, "V": a.V, "activation": act, "regime": regime, "P": regime_P(L, a.V, act, regime),
             "report": None, "done": False, "cmd": cmd, "minutes": None}
            for L in a.L for act in a.activations for regime in a.regimes]
    for t in grid:  # the step sizes' unit, the task's own (bench_samplers runs the same)
        t["eps0"] = None if t["P"] is None else bench.Task(t["L"], t["V"], t["activation"], t["P"], a.data_seed).eps0
    for t in grid:
        if t["P"] is None:
            print(f"== L={t['L']} {t['activation']} inside: no coexistence window (a continuous transition), "
                  "no task", flush=True)
    grid = [t for t in grid if t["P"] is not None]
    for t in grid:
        out = os.path.join(a.out, task_folder(t, a.data_seed))
        print(f"== L={t['L']} V={a.V} {t['activation']} {t['regime']} the transition: P={t['P']} -> {out}",
              flush=True)
        bargs = ["--L", str(t["L"]), "--V", str(a.V), "--activation", t["activation"], "--P", str(t["P"]),
                 "--data-seed", str(a.data_seed), "--samplers", *samplers, "--budget-seconds",
                 str(a.budget_seconds), "--chains", str(a.chains), "--thin", str(a.thin),
                 "--ref-chains", str(a.ref_chains), "--ref-steps", str(a.ref_steps), "--seed", str(a.seed),
                 "--step-factors", *(f"{f:g}" for f in a.step_factors), "--out", out]
        bargs += ["--cache-dir", a.cache_dir] if a.cache_dir else []
        bargs += ["--batch-size", str(a.batch_size)] if a.batch_size else []
        bargs += ["--no-progress"] if a.no_progress else []
        if t["regime"] == "inside":
            bargs += ["--phase-weights", "--phase-steps", str(a.phase_steps), "--phase-chains", str(a.phase_chains)]
        t1 = time.perf_counter()
        try:
            bench_samplers.main(bargs)
            t["report"] = results.read_json(os.path.join(out, "report.json"))
        except SystemExit as e:  # bench_samplers refused the task
            if e.code not in (0, None):
                t["report"] = None
            else:
                raise
        t["done"], t["minutes"] = True, (time.perf_counter() - t1) / 60
        # the section after every task: an interrupted run leaves a consistent page (tasks to come: pending)
        # tasks of --doc's section that this run does not redo stay as they are written there now
        kept = {k: v for k, v in read_section(a.doc).items() if k not in {key(u) for u in grid}}
        text = section(grid, a, cmd, kept)
        results.atomic_write_bytes(os.path.join(a.out, "leaderboard.md"), section(grid, a, cmd).encode())
        write_section(a.doc, text)
    print(f"leaderboard ({(time.perf_counter() - t0) / 60:.1f} min) in {a.out}/leaderboard.md and {a.doc}", flush=True)
    return grid


ACTIVATIONS, REGIMES = ("softmax", "linear"), ("below", "inside", "above")


def task_folder(t, data_seed: int) -> str:
    """A task's folder under --out, named by everything that picks its data: L, V, activation,
    regime (which sets P) and the data seed (the rows inside are keyed to the rest)."""
    return f"L{t['L']}_V{t['V']}_{t['activation']}_{t['regime']}_data{data_seed}"


def key(t) -> tuple:
    """A task's place in the page: (L, V, activation, regime)."""
    return int(t["L"]), int(t["V"]), t["activation"], t["regime"]


def _order(k):
    L, V, act, regime = k
    return L, V, ACTIVATIONS.index(act), REGIMES.index(regime)


_ROW = re.compile(r"^\| (\d+) \| (\w+) \| (\w+) \| (\d+) \| ")
_HEAD = re.compile(r"^#### L = (\d+), V = (\d+), (\w+), P = (\d+) \((\w+) the transition\)")


def read_section(path) -> dict:
    """The finished tasks of ``path``'s generated section: ``key -> {"row": summary line,
    "block": the task's table with its heading}`` (pending and refused tasks have no table and
    are not kept: a run lists them itself)."""
    return read_section_text(Path(path).read_text() if os.path.exists(path) else "")


def read_section_text(text) -> dict:
    """``read_section`` of a text."""
    if BEGIN not in text or END not in text:
        return {}
    body = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    parts = re.split(r"\n(?=#### )", body)
    blocks = {}
    for part in parts[1:]:
        m = _HEAD.match(part)
        if m:
            blocks[(int(m[1]), int(m[2]), m[3], m[5])] = part.strip("\n")
    rows = {}
    for line in parts[0].splitlines():
        m = _ROW.match(line)
        for k in blocks:
            if m and (int(m[1]), m[2], m[3]) == (k[0], k[2], k[3]):
                rows[k] = line
    return {k: {"row": rows[k], "block": blocks[k]} for k in blocks if k in rows}


def section(tasks, a, cmd, kept=None) -> str:
    """The generated markdown: a summary line per task, then each task's table. ``kept``
    (``read_section``'s) are earlier runs' tasks, merged in their place as they were."""
    from bench_samplers import table

    kept = kept or {}
    lines = [BEGIN, "", f"Last written by `{cmd}` ({a.chains} chains per run, {a.budget_seconds:g} s of sampling "
             f"per run, step sizes {', '.join(f'{f:g}' for f in a.step_factors)} x eps0). Each task's table names "
             "the command that ran it (its settings) and its minutes; tasks that command did not run are kept "
             "from earlier runs.", "",
             "| L | activation | regime | P | exact c_G (sd) | agree (sampler @ step / eps0) | best ESS/s of those | "
             "inconclusive |",
             "|---:|---|---|---:|---|---|---:|---|"]
    rows, blocks = {}, {}
    for k, v in kept.items():
        rows[k], blocks[k] = v["row"], v["block"]
    for t in tasks:
        k, rep = key(t), t["report"]
        head = f"| {t['L']} | {t['activation']} | {t['regime']} | {t['P']} |"
        if not t.get("done", True):
            rows[k] = f"{head} pending: not run yet (the same command continues) | - | - | - |"
            continue
        if rep is None:
            rows[k] = f"{head} refused by bench_samplers (its log says why) | - | - | - |"
            continue
        r, ph = rep["reference"]["cG"], rep["reference"].get("phases")
        at = lambda ws: ", ".join(f"{w['sampler']} @ {w['step_size'] / t['eps0']:.3g}" for w in ws) or "none"
        ok = [w for w in rep["rows"] if w["agrees_with_exact"]]
        agree = at(ok)
        exact = f"{r['mean']:.4f} ({r['sd']:.4f})"
        if ph is not None:
            exact += f"; copy weight {ph['weights'][1]:.2f} +- {ph['weights_sd'][1]:.2f}"
            agree += "; right within each phase: " + at([w for w in rep["rows"] if w.get("agrees_within_phases")])
        best = f"{max(w['ess_per_s'] for w in ok):.1f}" if ok else "-"
        unsure = at([w for w in rep["rows"] if w.get("verdict") == "inconclusive"])
        if not rep["reference"].get("gate", {}).get("ok", True):
            # a sampler's own failures (non-finite, frozen) still disagree without a reference
            mine = sum(w.get("verdict") == "disagrees" for w in rep["rows"])
            unsure = ("all" if not mine else f"all but {mine} that fail on their own (non-finite or frozen chains)"
                      ) + ": the reference fails its gate"
        rows[k] = f"{head} {exact} | {agree} | {best} | {unsure} |"
        minutes = "" if t.get("minutes") is None else f", {t['minutes']:.1f} min"
        if rep.get("reused_rows"):
            minutes += f" ({rep['reused_rows']} of {len(rep['rows'])} rows reused from an earlier run of it)"
        blocks[k] = "\n".join([f"#### L = {t['L']}, V = {t['V']}, {t['activation']}, P = {t['P']} ({t['regime']} the "
                               f"transition): exact c_G {r['mean']:.4f} +- {r['mcse']:.4f}, sd {r['sd']:.4f}; eps0 = "
                               f"{t['eps0']:.3g}", "", f"Run by `{t.get('cmd', cmd)}`{minutes}.", ""]
                              + ([] if ph is None else [_phase_line(ph), ""])
                              + table(rep["rows"]))
    order = sorted(rows, key=_order)
    lines += [rows[k] for k in order]
    for k in order:
        if k in blocks:
            lines += ["", blocks[k]]
    return "\n".join(lines + ["", END]) + "\n"


def _phase_line(ph) -> str:
    return (f"Two phases, the divide at a_G = {ph['divide']:.3f}: copy weight {ph['weights'][1]:.3f} +- "
            f"{ph['weights_sd'][1]:.3f} (free energy, MBAR; log(copy / pooling) {ph['log_ratio']:+.2f} +- "
            f"{ph['log_ratio_sd']:.2f}); c_G {ph['cG'][0]['mean']:.4f} (sd {ph['cG'][0]['sd']:.4f}) pooling, "
            f"{ph['cG'][1]['mean']:.4f} (sd {ph['cG'][1]['sd']:.4f}) copy; the exact c_G above is their mixture.")


def write_section(path, text):
    """Replace the generated section of ``path`` (between BEGIN and END) by ``text``, or append it."""
    from copyjax.results import atomic_write_bytes

    old = Path(path).read_text() if os.path.exists(path) else ""
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + text.rstrip("\n") + old[old.index(END) + len(END):]
    else:
        new = old + ("\n" if old and not old.endswith("\n") else "") + text
    atomic_write_bytes(path, new.encode())


if __name__ == "__main__":
    main()
