#!/usr/bin/env bash
# Prepared accelerator check (under 8 minutes, no installs beyond the package):
#   bash benchmarks/gpu.sh
# Records chain-steps/s at >= 10^4 chains on the first GPU. Exits 0 with a message when no
# GPU is visible to JAX.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c "import jax, sys; sys.exit(0 if any(d.platform == 'gpu' for d in jax.devices()) else 1)" 2>/dev/null; then
  echo "gpu.sh: no GPU found by JAX (jax.devices() has none); nothing to measure."
  exit 0
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
timeout 450 python3 benchmarks/throughput.py --chains 1024 16384 65536 --steps 50 \
  --seq-Ps 4096 65536 --vmap-chains 16384
