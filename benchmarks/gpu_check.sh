#!/usr/bin/env bash
# The GPU run within 8 minutes: the ledger at the thorough profile, every claim's on-stack form on the
# device (pytest -m cuda), the benchmarks, check --scale at gpt2-small/medium/large in float32 and float64,
# and import-hf + check --stack on a 124M GPT-2 (random weights) at T = 1024; each step under its own
# time limit, a failure recorded and the next step run (benchmarks/gpu_check.py says how the limits were set).
#
#   bash benchmarks/gpu_check.sh OUT_DIR [DEVICE]      (DEVICE: cuda (default) | cpu | auto)
#
# Writes OUT_DIR/summary.json and summary.txt (per step: exit status, wall and CPU seconds, share of host
# time, peak GPU memory, log file), one log and JSON per step, machine.txt.  Exit 0 when every step passed.
set -uo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: bash benchmarks/gpu_check.sh OUT_DIR [DEVICE]" >&2
    exit 2
fi
cd "$(dirname "$0")/.." || exit 2
exec timeout --kill-after=10 480 python -m benchmarks.gpu_check "$1" --device "${2:-cuda}"
