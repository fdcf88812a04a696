#!/usr/bin/env bash
# One short device call for the small cards' MSM tuning, no parameters
# needed, from the repository root (carry the QUICK directory):
#
#   scripts/device/quick.sh [QUICK]          (default target/device/quick)
#
# QUICK holds cuzk-lab.xz and others.bin.xz (scripts/device/build.sh with
# OTHERS=1). First `others-bench --g2` over the real others (each
# heavy_bucket_points cap, sums checked), then `gpu-bench --log-domain 27
# --srs streamed --partitions-per-pass 2 --others-from` at 24, 16 and 32
# GiB: heavy_bucket_points 0 (off), the cap that costs a proof least (as
# porep32.sh's HEAVY_POINTS=auto picks it; 1024, the daemon's default,
# without an others-bench log), carry_buckets and both, in one call on
# one card. Every run is bounded so that the call
# ends within $DEADLINE seconds (default 520); logs and summary.txt go to
# $OUT. RUNS="v24 v24carry" runs only the named ones (others-bench only
# when one of them takes the cap); `v16heavy`/`v32heavy` take the cap at
# 16/32 GiB, `v24overlap`/`v16overlap`/`v32overlap` the cap and
# gpus.tuning.overlap_others (every other run names it off). $OTHERS_PERCENT (default 10) is the
# synthetic witness's share of others (a real partition has ~1.3 %).
# GPU test binaries in QUICK (gpu_*.xz) run first, with $TEST_FILTER.
# With QUICK/cuzk-lab-b.xz (another build's lab), each run named in
# $B_RUNS runs again right after with it, logged as NAME-b: two builds
# side by side on one card.
set -u
Q="${1:-target/device/quick}"
DEADLINE=${DEADLINE:-520}
start=$(date +%s)
left() { echo $((DEADLINE - ($(date +%s) - start))); }
O=${OUT:-/tmp/quick-out}
mkdir -p "$O"
xz -dc "$Q/cuzk-lab.xz" > /tmp/quick-lab && chmod +x /tmp/quick-lab
xz -dc "$Q/others.bin.xz" > /tmp/quick-others.bin
[ -e "$Q/cuzk-lab-b.xz" ] && xz -dc "$Q/cuzk-lab-b.xz" > /tmp/quick-lab-b && chmod +x /tmp/quick-lab-b
S="$O/summary.txt"
echo "$(date -u +%T) start $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader)" >> "$S"
RUNS=${RUNS:-v24 v24both v24heavy v24carry v16both v16 v32both v32}
for t in "$Q"/gpu_*.xz; do
  [ -e "$t" ] || continue
  n=$(basename "$t" .xz)
  xz -dc "$t" > "/tmp/quick-$n" && chmod +x "/tmp/quick-$n"
  timeout 200 "/tmp/quick-$n" --nocapture --test-threads=1 ${TEST_FILTER:-} > "$O/test-$n.log" 2>&1
  echo "$(date -u +%T) $n rc=$? $(grep -E '^test result' "$O/test-$n.log" | tail -1)" >> "$S"
done
case " $RUNS " in *both*|*heavy*) ;; *) export SKIP_OTHERS=1 ;; esac
[ -n "${SKIP_OTHERS:-}" ] || timeout 150 /tmp/quick-lab others-bench --others-from /tmp/quick-others.bin --g2 > "$O/others-bench.log" 2>&1
echo "$(date -u +%T) others-bench rc=$? $(grep '^others_bench_summary' "$O/others-bench.log" 2>/dev/null)" >> "$S"
# porep32.sh's heavy_points(), the one rule for the cap.
eval "$(sed -n '/^heavy_points()/,/^}/p' scripts/device/porep32.sh)"
CAP=$(HEAVY_POINTS=auto HEAVY_FROM="$O/others-bench.log" heavy_points)
[ "$CAP" != 0 ] || CAP=1024  # no others-bench: the daemon's default
echo "$(date -u +%T) heavy cap $CAP" >> "$S"
run() { # NAME VRAM_LIMIT TUNING
  case " $RUNS " in *" $1 "*) ;; *) return ;; esac
  bench /tmp/quick-lab "$@"
  case " ${B_RUNS:-} " in *" $1 "*) [ -x /tmp/quick-lab-b ] && bench /tmp/quick-lab-b "$1-b" "$2" "$3" ;; esac
}
bench() { # LAB NAME VRAM_LIMIT TUNING
  local t
  t=$(left)
  [ "$t" -gt 60 ] || { echo "$(date -u +%T) $2 skipped: out of time" >> "$S"; return; }
  [ "$t" -gt 180 ] && t=180
  timeout "$t" "$1" gpu-bench --log-domain 27 --srs streamed --vram-limit "$3" \
    --partitions-per-pass 2 --partitions 2 --others-from /tmp/quick-others.bin \
    --others-percent "${OTHERS_PERCENT:-10}" \
    ${4:+--tuning "$4"} > "$O/pp-$2.log" 2>&1
  echo "$(date -u +%T) $2 rc=$? $(grep '^gpu_bench_per_pass_summary' "$O/pp-$2.log")" >> "$S"
}
# Every run names its knobs: the binary's defaults may differ.
heavy="heavy_bucket_points = $CAP; overlap_others = false"
off="heavy_bucket_points = 0; overlap_others = false"
run v24 24GiB "$off"
run v24both 24GiB "$heavy; carry_buckets = true"
run v24heavy 24GiB "$heavy"
run v24carry 24GiB "$off; carry_buckets = true"
run v16both 16GiB "$heavy; carry_buckets = true"
run v16 16GiB "$off"
run v32both 32GiB "$heavy; carry_buckets = true"
run v32 32GiB "$off"
over="heavy_bucket_points = $CAP; overlap_others = true"
run v24overlap 24GiB "$over"
run v16heavy 16GiB "$heavy"
run v16overlap 16GiB "$over"
run v32heavy 32GiB "$heavy"
run v32overlap 32GiB "$over"
cat "$S"
