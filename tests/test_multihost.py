"""Chains across processes (``jax.distributed``, one process per host, gloo collectives on
CPU): two local processes of two CPU devices each give the same draws, bit for bit, as one
process of four devices with the same ``chain_block``, and both processes return the same
``Samples``; for the driver with a plain blackjax kernel and for the exact posterior. Bad
input to the distributed options is refused before anything waits on a coordinator."""
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKER = r'''
import sys
pid, n, port, out, what = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
import jax
jax.config.update("jax_enable_x64", True)
from copyjax import distributed
if n > 1:
    distributed.initialize(f"localhost:{port}", n, pid, timeout_s=120)
import blackjax
import jax.numpy as jnp
import numpy as np
import copyjax as cj
from copyjax.chains import Layout, Schedule, run_algorithm
assert len(jax.devices()) == 4, jax.devices()
if what == "driver":
    alg = blackjax.mala(lambda x: -0.5 * jnp.sum(((x - jnp.array([1.0, -2.0, 0.5])) / 0.5) ** 2), 0.1)
    s = run_algorithm(jax.random.key(0), alg, jnp.zeros((10, 3)), lambda x: {"a": x[0], "b": x[1]},
                      schedule=Schedule(200, 50, 5), layout=Layout(chain_block=2))
    arrays = {"a": s.draws["a"], "b": s.draws["b"], "pos": np.asarray(s.final.position),
              "acc": s.info["acceptance_rate"], "nonfinite": s.nonfinite}
else:
    from copyjax import exact_posterior as X
    L, V = 4, 3
    C = cj.sufficient_stats(cj.sample_tokens(jax.random.key(1), 80, L, V), V)
    h = cj.default_hyper("softmax", L)
    run = X.sample_exact_posterior(jax.random.key(2), C, h, "softmax", n_chains=8, num_steps=90, warmup_steps=10)
    arrays = {"cG": run.samples.draws["cG"], "loss": run.samples.draws["loss"], "step": run.step_size,
              "acc": run.acceptance, "G": np.asarray(run.samples.final.position)}
np.savez(f"{out}_{n}_{pid}.npz", **arrays)
print("done", pid, flush=True)
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _launch(tmp_path, what: str, n: int):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={4 // n}"
    port = _free_port()
    out = str(tmp_path / what)
    procs = [subprocess.Popen([sys.executable, str(script), str(i), str(n), str(port), out, what], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(n)]
    for p in procs:
        o, e = p.communicate(timeout=600)
        assert p.returncode == 0, e[-3000:]
    return [dict(np.load(f"{out}_{n}_{i}.npz")) for i in range(n)]


@pytest.mark.parametrize("what", ["driver", "exact"])
@pytest.mark.slow
def test_two_processes_give_one_process_draws_bit_for_bit(tmp_path, what):
    one = _launch(tmp_path, what, 1)[0]
    two = _launch(tmp_path, what, 2)
    for k in one:
        for i, res in enumerate(two):
            np.testing.assert_array_equal(res[k], one[k], err_msg=f"{what}: {k} of process {i}")
    assert next(iter(one.values())).shape[0] in (8, 10)


def test_distributed_options_are_checked_before_connecting():
    from copyjax import distributed

    with pytest.raises(ValueError, match="num_processes"):
        distributed.initialize("localhost:1234", 0, 0)
    with pytest.raises(ValueError, match="process_id"):
        distributed.initialize("localhost:1234", 2, 2)
    with pytest.raises(ValueError, match="coordinator_address"):
        distributed.initialize("localhost", 2, 0)
    with pytest.raises(ValueError, match="timeout_s"):
        distributed.initialize("localhost:1234", 2, 0, timeout_s=0)


def _main_job(tmp_path, out, n, port=None, pid=0):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={4 // n}"
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "phase_diagram.py"), "--quick", "--L", "4", "--V", "3",
           "--activation", "softmax", "--n-P", "2", "--no-progress", "--out", str(out)]
    if n > 1:
        cmd += ["--coordinator-address", f"localhost:{port}", "--num-processes", str(n), "--process-id", str(pid)]
    return subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_the_main_job_in_two_processes_writes_what_one_process_writes(tmp_path):
    """``phase_diagram.py --quick`` (softmax, 2 points) with --coordinator-address / --num-processes
    / --process-id: its summary.csv (every column but the wall times) and results.npz equal the
    one-process, four-device run's bit for bit, and only process 0 writes them."""
    import csv
    import io

    p = _main_job(tmp_path, tmp_path / "one", 1)
    _, err = p.communicate(timeout=900)
    assert p.returncode == 0, err[-3000:]
    port = _free_port()
    procs = [_main_job(tmp_path, tmp_path / "two", 2, port, i) for i in range(2)]
    for q in procs:
        _, err = q.communicate(timeout=900)
        assert q.returncode == 0, err[-3000:]
    rows = [list(csv.DictReader(io.StringIO((tmp_path / d / "summary.csv").read_text()))) for d in ("one", "two")]
    assert len(rows[0]) == 2 and [{k: v for k, v in r.items() if k != "wall_s"} for r in rows[0]] == \
        [{k: v for k, v in r.items() if k != "wall_s"} for r in rows[1]]
    a, b = (dict(np.load(tmp_path / d / "results.npz")) for d in ("one", "two"))
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


@pytest.mark.parametrize("args,word", [
    (["--coordinator-address", "localhost:1234", "--num-processes", "2"], "--process-id"),
    (["--coordinator-address", "localhost:1234", "--num-processes", "2", "--process-id", "2"], "--process-id"),
    (["--coordinator-address", "localhost", "--num-processes", "2", "--process-id", "1"], "--coordinator-address"),
    (["--distributed", "auto", "--num-processes", "2"], "--distributed"),
])
def test_bad_distributed_options_are_argument_errors(args, word, tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "phase_diagram.py"), "--quick", "--L", "4",
                        "--V", "3", "--out", str(tmp_path), *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and word in r.stderr.strip().splitlines()[-1], r.stderr[-2000:]


def test_an_unreachable_coordinator_is_an_error_not_a_hang(tmp_path):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "phase_diagram.py"), "--quick", "--L", "4",
                        "--V", "3", "--out", str(tmp_path), "--coordinator-address", f"localhost:{_free_port()}",
                        "--num-processes", "2", "--process-id", "1", "--distributed-timeout", "2"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "no coordinator answered within 2 s" in r.stderr, r.stderr[-2000:]
