#!/usr/bin/env bash
# The GPU run: every claim check under the random profile (stacks from a fresh seed), then the benchmarks.
#
#   bash benchmarks/gpu_check.sh OUT_DIR [DEVICE]      (DEVICE: cuda (default) | cpu | auto)
#
# Writes into OUT_DIR: ledger.json + check.txt (fastslow check --profile random; the seed it drew is in
# the ledger's options and in summary.txt: rerun with --seed N to reproduce),
# bench.json + bench.txt (fastslow bench), machine.txt (nvidia-smi / lscpu), summary.txt
# (exit status and wall time of each step), scale_<preset>_<dtype>.json + .txt (fastslow check --scale
# gpt2-medium / gpt2-large, float32 and float64).  Each step has a hard time limit so the whole
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
CHECK_LIMIT="${CHECK_LIMIT:-110}"   # seconds for the random-profile checks
BENCH_LIMIT="${BENCH_LIMIT:-110}"   # seconds for the benchmarks
SCALE_LIMIT="${SCALE_LIMIT:-60}"    # seconds for each of the 4 scale runs (110 + 110 + 4·60 = 460 s < 8 min)
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
    env HYPOTHESIS_PROFILE=random fastslow check --device "$device" --profile random --no-progress --json "$out/ledger.json"
grep -h "stacks drawn from seed" "$out/check.txt" | tee -a "$out/summary.txt"
step bench "$BENCH_LIMIT" "$out/bench.txt" \
    env FASTSLOW_BENCH_SCALE_CLAIMS=0 fastslow bench --device "$device" "${bench_flags[@]}" --json "$out/bench.json"

# the claims at GPT-2-medium and -large size (fastslow check --scale), float32 and float64: one JSON each.
# float32 runs skip 1.1, whose scale form always runs in float64 on the CPU (the float64 run has it).
all_but_1_1=(1.2 2.1 2.2 2.3 2.4 3.1 3.2 4.1 4.2 5.1)
for preset in gpt2-medium gpt2-large; do
    for dtype in float32 float64; do
        claims=()
        [[ "$dtype" == float32 ]] && claims=(--claim "${all_but_1_1[@]}")
        step "scale-$preset-$dtype" "$SCALE_LIMIT" "$out/scale_${preset}_${dtype}.txt" \
            fastslow check --scale "$preset" --dtype "$dtype" --device "$device" "${claims[@]}" --no-progress \
            --json "$out/scale_${preset}_${dtype}.json"
    done
done

echo "results in $out" | tee -a "$out/summary.txt"
exit "$failed"
