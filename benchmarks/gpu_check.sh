#!/usr/bin/env bash
# The GPU run: every claim check under the thorough Hypothesis profile, then the benchmarks.
#
#   bash benchmarks/gpu_check.sh OUT_DIR [DEVICE]      (DEVICE: cuda (default) | cpu | auto)
#
# Writes into OUT_DIR: ledger.json + check.txt (HYPOTHESIS_PROFILE=thorough fastslow check),
# bench.json + bench.txt (fastslow bench), machine.txt (nvidia-smi / lscpu), summary.txt
# (exit status and wall time of each step).  Each step has a hard time limit so the whole
# script ends within 8 minutes on a GPU; on the CPU (DEVICE=cpu) the benchmarks run at
# their --quick sizes.  Exit status: 0 when every step succeeded, else 1.
set -uo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    echo "usage: bash benchmarks/gpu_check.sh OUT_DIR [DEVICE]" >&2
    exit 2
fi
out="$1"
device="${2:-cuda}"
case "$device" in
    cuda|cpu|auto) ;;
    *) echo "gpu_check.sh: error: DEVICE=$device is not one of cuda, cpu, auto" >&2; exit 2 ;;
esac
mkdir -p "$out" || { echo "gpu_check.sh: error: cannot create OUT_DIR=$out" >&2; exit 2; }

cd "$(dirname "$0")/.."
CHECK_LIMIT="${CHECK_LIMIT:-270}"   # seconds for the thorough checks
BENCH_LIMIT="${BENCH_LIMIT:-180}"   # seconds for the benchmarks
bench_flags=()
if [[ "$device" == "cpu" ]]; then
    bench_flags+=(--quick)
fi

failed=0
: > "$out/summary.txt"
step() {  # step NAME LIMIT LOGFILE COMMAND...
    local name="$1" limit="$2" log="$3"
    shift 3
    local start end rc
    start=$(date +%s)
    timeout --kill-after=10 "$limit" "$@" > "$log" 2>&1
    rc=$?
    end=$(date +%s)
    echo "$name exit=$rc seconds=$((end - start))$([[ $rc == 124 ]] && echo " (time limit ${limit}s)")" \
        | tee -a "$out/summary.txt"
    [[ $rc == 0 ]] || failed=1
}

{ nvidia-smi 2>/dev/null || true; lscpu 2>/dev/null || true; } > "$out/machine.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), \
torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')" >> "$out/machine.txt" 2>&1

step check "$CHECK_LIMIT" "$out/check.txt" \
    env HYPOTHESIS_PROFILE=thorough fastslow check --device "$device" --profile thorough --no-progress --json "$out/ledger.json"
step bench "$BENCH_LIMIT" "$out/bench.txt" \
    fastslow bench --device "$device" "${bench_flags[@]}" --json "$out/bench.json"

echo "results in $out" | tee -a "$out/summary.txt"
exit "$failed"
