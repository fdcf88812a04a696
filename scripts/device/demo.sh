#!/usr/bin/env bash
# The demo at a real sector size on a GPU machine (the device tool's H200),
# from the repository root: fixtures and INSECURE parameters made there,
# then one proof of each kind through an in-process daemon on the default
# configuration (the CUDA backend when a GPU is present), each verified.
#
#   scripts/device/demo.sh SIZE [BINARY]     (BINARY default .dev/cuzk-bench,
#                                             built with --features cuzk-bench/cuda)
#
# Logs go to $OUT (default /tmp/cuzk-out); the last line is a summary.
set -uo pipefail
SIZE="${1:?sector size, e.g. 512MiB}"
B="${2:-.dev/cuzk-bench}"
OUT="${OUT:-/tmp/cuzk-out}"
mkdir -p "$OUT"
TIME=""
[ -x /usr/bin/time ] && TIME="/usr/bin/time -v"
nproc; free -g | head -2; df -h / | tail -1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
t0=$(date +%s)
$TIME "$B" gen-fixtures --sector-size "$SIZE" 2>&1 | grep -v ' WARN ' | tee "$OUT/gen.log"
t1=$(date +%s)
$TIME "$B" demo --sector-size "$SIZE" 2>&1 | grep -v ' WARN ' | tee "$OUT/demo.log"
rc=${PIPESTATUS[0]}
t2=$(date +%s)
echo "device-demo sector_size=$SIZE gen_s=$((t1 - t0)) demo_s=$((t2 - t1)) rc=$rc"
