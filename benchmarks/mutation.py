"""Mutation testing of one module's functions with cosmic-ray: each mutant in a fresh process.

    pip install cosmic-ray        # in any environment; it only runs the test command
    python benchmarks/mutation.py --module copyjax/bench/score.py \\
        --functions judged clause _sd_clause _two_phase _within_clause _clear_failures _low_ess judge verdict within_phases \\
        --tests tests/test_verdict.py tests/test_bench_phases.py --out runs/mutation/score

cosmic-ray (``cosmic-ray init`` / ``exec``) lists every mutant of --module (operators swapped,
comparisons turned, numbers changed, ``not`` dropped ...); this script keeps those inside
--functions (the others are recorded as skipped), runs each in a fresh interpreter with
``python -m pytest -x -q -n 0 -m 'not slow' TESTS`` from a copy of the working tree (mutmut,
which forks from a process that has imported JAX, hung: docs/testing.md), and prints the
table of docs/testing.md: mutants, killed, survived, and those equivalent by construction (a
mutant inside a type annotation under ``from __future__ import annotations``, never evaluated:
found in the module's syntax tree and recorded without being run), each survivor with its
diff. A rerun continues the same database (--out).
"""
import argparse
import ast
import json
import os
import shutil
import sqlite3
import subprocess
import sys


EQUIVALENT = "inside a type annotation: equivalent, not run"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--module", required=True, help="the module to mutate, a path from the repository root")
    ap.add_argument("--functions", nargs="+", required=True, help="mutate only inside these functions")
    ap.add_argument("--tests", nargs="+", required=True, help="test files run against each mutant")
    ap.add_argument("--out", default="runs/mutation", help="the working copy, the database and the report")
    ap.add_argument("--cosmic-ray", default="cosmic-ray", help="the cosmic-ray executable")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant before it counts as killed")
    return ap


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """``((row, col), (end_row, end_col))`` of every type annotation in ``source`` (rows from 1,
    columns from 0, as cosmic-ray's positions): under ``from __future__ import annotations``
    none is evaluated, so a mutant inside one is equivalent and need not be run."""
    if "from __future__ import annotations" not in source:
        return []
    spans = []
    for node in ast.walk(ast.parse(source)):
        anns = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            anns = [x.annotation for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]
                    if x is not None and x.annotation is not None] + [node.returns]
        elif isinstance(node, ast.AnnAssign):
            anns = [node.annotation]
        spans += [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in anns if n is not None]
    return spans


def _inside(start, end, spans) -> bool:
    return any(a <= start and end <= b for a, b in spans)


def main(argv=None):
    a = parser().parse_args(argv)
    if shutil.which(a.cosmic_ray) is None:
        parser().error(f"--cosmic-ray: {a.cosmic_ray} not found (pip install cosmic-ray)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = os.path.abspath(a.out)
    tree = os.path.join(out, "tree")
    db = os.path.join(out, "mutants.sqlite")
    os.makedirs(out, exist_ok=True)
    if not os.path.exists(tree):  # mutants are written into a copy, never into the checkout
        subprocess.run(["git", "clone", "-q", root, tree], check=True)
    tests = " ".join(a.tests)
    toml = os.path.join(out, "cosmic-ray.toml")
    with open(toml, "w") as f:
        f.write(f'[cosmic-ray]\nmodule-path = "{a.module}"\ntimeout = {a.timeout}\nexcluded-modules = []\n'
                f'test-command = "env PYTHONPATH={tree} {sys.executable} -m pytest -x -q -n 0 -p no:cacheprovider '
                f"-m 'not slow' {tests}\"\n\n[cosmic-ray.distributor]\nname = \"local\"\n")
    # an interrupted run leaves its last mutant written into the copy: restore it first
    subprocess.run(["git", "-C", tree, "checkout", "-q", "--", a.module], check=True)
    with open(os.path.join(tree, a.module)) as f:
        spans = annotation_spans(f.read())
    if not os.path.exists(db):
        subprocess.run([a.cosmic_ray, "init", toml, db], check=True, cwd=tree)
    con = sqlite3.connect(db)  # skipped, never run: mutants outside --functions, and inside annotations
    rows = con.execute("select job_id, definition_name, start_pos_row, start_pos_col, end_pos_row, end_pos_col "
                       "from mutation_specs where job_id not in (select job_id from work_results)").fetchall()
    skip = [("outside --functions", j) for j, d, *_ in rows if d not in set(a.functions)]
    skip += [(EQUIVALENT, j) for j, d, r0, c0, r1, c1 in rows
             if d in set(a.functions) and _inside((r0, c0), (r1, c1), spans)]
    con.executemany("insert into work_results (worker_outcome, output, test_outcome, diff, job_id) "
                    "values ('SKIPPED', ?, NULL, NULL, ?)", skip)
    con.commit()
    subprocess.run([a.cosmic_ray, "exec", toml, db], check=True, cwd=tree)
    con = sqlite3.connect(db)
    res = con.execute("select m.definition_name, m.start_pos_row, m.start_pos_col, m.end_pos_row, m.end_pos_col, "
                      "m.operator_name, r.test_outcome, r.diff, r.output from work_results r "
                      "join mutation_specs m using (job_id) "
                      "where r.worker_outcome != 'SKIPPED' or r.output = ?", (EQUIVALENT,)).fetchall()
    table, survivors = {}, []
    for fn, line, col, end_line, end_col, op, outcome, diff, output in res:
        t = table.setdefault(fn, {"mutants": 0, "killed": 0, "equivalent": 0, "survived": 0})
        t["mutants"] += 1
        kind = ("equivalent (annotation)" if _inside((line, col), (end_line, end_col), spans)
                else "killed" if outcome == "KILLED" else "survived")
        t["equivalent" if kind.startswith("equivalent") else kind] += 1
        if kind != "killed":
            survivors.append({"function": fn, "line": line, "operator": op, "kind": kind, "diff": diff})
    total = {k: sum(t[k] for t in table.values()) for k in ("mutants", "killed", "equivalent", "survived")}
    print(f"| {a.module}: function | mutants | killed | equivalent | survived |\n|---|---:|---:|---:|---:|")
    for fn, t in sorted(table.items()):
        print(f"| {fn} | {t['mutants']} | {t['killed']} | {t['equivalent']} | {t['survived']} |")
    print(f"| all | {total['mutants']} | {total['killed']} | {total['equivalent']} | {total['survived']} |")
    live = total["mutants"] - total["equivalent"]
    print(f"\nkill rate of the non-equivalent mutants: {total['killed']} / {live} = "
          f"{100 * total['killed'] / max(live, 1):.1f} %")
    for s in survivors:
        if s["kind"] == "survived":
            print(f"\nsurvived: {s['function']} line {s['line']} ({s['operator']})\n{s['diff']}")
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump({"module": a.module, "functions": a.functions, "tests": a.tests, "table": table, "total": total,
                   "survivors": survivors}, f, indent=1)
    return total


if __name__ == "__main__":
    main()
