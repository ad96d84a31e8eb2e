#!/usr/bin/env bash
# The prepared accelerator check, one command, under 8 minutes on one H200:
#
#   here (with network):  bash benchmarks/gpu.sh --fetch-wheels   # blackjax for Python 3.12 into .whl/
#   there (no network):   bash benchmarks/gpu.sh                  # carry .whl with the working tree
#
# The GPU machine has Python 3.12, jax 0.11.2 with CUDA, numpyro, optax, chex, scipy, tqdm and
# matplotlib, but no blackjax (docs/benchmarks.md): its wheel (pure Python) is installed from
# .whl/ into /tmp/site without network, and copyjax is used from the working tree (PYTHONPATH).
# Prints chain-steps/s at 10^3, 10^4 and 10^5 chains for the exact-posterior path and SGLD
# (benchmarks/gpu_check.py), the roofline of the hot kernels at the same numbers of chains
# (benchmarks/roofline.py: fractions of the GPU's measured matmul FLOP/s and bandwidth), then
# one phase-diagram point at L = 64, V = 32 inside the softmax
# coexistence window with 1024 exact chains. Exits 0 with a message when JAX sees no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fetch-wheels" ]; then
  mkdir -p .whl
  grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 -d .whl "blackjax==1.7.1"
  ls -l .whl
  exit 0
fi
if ! python3 -c "import blackjax" 2>/dev/null; then
  ls .whl/blackjax-*.whl >/dev/null 2>&1 || { echo "gpu.sh: no blackjax and no .whl/: run 'bash benchmarks/gpu.sh --fetch-wheels' where pip has network, carry .whl" >&2; exit 1; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD" PYTHONUNBUFFERED=1
if ! python3 -c "import jax, sys; sys.exit(0 if any(d.platform == 'gpu' for d in jax.devices()) else 1)" 2>/dev/null; then
  echo "gpu.sh: no GPU found by JAX (jax.devices() has none); nothing to measure."
  exit 0
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
t0=$SECONDS
log=${OUT:-$(mktemp -d)}  # the device tool brings $OUT back
timeout 300 python3 benchmarks/gpu_check.py --chains 1000 10000 100000 --steps 20 --block 4096 2>&1 | tee "$log/gpu_check.log" || echo "gpu_check.py: exit $?"
echo "throughput: $((SECONDS - t0)) s"
t1=$SECONDS
# the roofline: each kernel as a fraction of this GPU's measured matmul FLOP/s and bandwidth
timeout 150 python3 benchmarks/roofline.py --chains 1000 10000 100000 --matmul-n 8192 --stream-mib 2048 \
  --out "$log/roofline" 2>&1 | tee "$log/roofline.log" || echo "roofline.py: exit $?"
echo "roofline: $((SECONDS - t1)) s"
t1=$SECONDS
out=$(mktemp -d)
timeout $((450 - (SECONDS - t0))) python3 scripts/phase_diagram.py --L 64 --V 32 --activation softmax --P 5095 \
  --exact-chains 1024 --chains 1024 --adam-seeds 64 --op-chains 256 --no-progress --no-compile-cache --out "$out" \
  2>&1 | tee "$log/phase_diagram.log" | tail -6 || echo "phase_diagram.py: exit $?"
cp "$out"/*/summary.csv "$out"/*/results.json "$log"/ 2>/dev/null || true
echo "one phase-diagram point (1024 exact chains, 1024 SGLD chains per start): $((SECONDS - t1)) s"
