#!/usr/bin/env bash
# Start-up with and without JAX's persistent compilation cache (scripts/_cli.py): wall time of a
# one-point main job and of a 64-chain SGLD run, first vs second run into fresh --out folders.
#     bash benchmarks/startup.sh
set -e
cd "$(dirname "$0")/.."
rm -rf /tmp/cc /tmp/cc2 /tmp/pd*
t() { local s=$(date +%s.%N); "$@" > /tmp/startup_last.log 2>&1; python -c "print(f'{$(date +%s.%N) - $s:.1f}')"; }
echo "main job, one point (P = 5095, softmax, defaults): first run $(t python scripts/phase_diagram.py --L 64 --V 32 --activation softmax --P 5095 --no-progress --compile-cache /tmp/cc --out /tmp/pdA) s, second run $(t python scripts/phase_diagram.py --L 64 --V 32 --activation softmax --P 5095 --no-progress --compile-cache /tmp/cc --out /tmp/pdB) s, without the cache $(t python scripts/phase_diagram.py --L 64 --V 32 --activation softmax --P 5095 --no-progress --no-compile-cache --out /tmp/pdC) s"
ARGS="--L 64 --V 32 --activation softmax --P 5095 --chains 64 --steps 2 --exact-chains 0 --op-chains 0 --adam-seeds 0 --no-progress"
echo "64 SGLD chains x 2 steps (nothing else): first run $(t python scripts/phase_diagram.py $ARGS --compile-cache /tmp/cc2 --out /tmp/pdD) s, second run $(t python scripts/phase_diagram.py $ARGS --compile-cache /tmp/cc2 --out /tmp/pdE) s"
echo "cache: $(du -sh /tmp/cc | cut -f1) / $(ls /tmp/cc | wc -l) entries (main job point), $(du -sh /tmp/cc2 | cut -f1) / $(ls /tmp/cc2 | wc -l) entries (64 chains)"
