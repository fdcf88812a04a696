#!/usr/bin/env bash
# One device call sequence (issue 35's figures), from the repository root:
#
#   scripts/device/sequence.sh BINDIR [LOGDIR]
#
# BINDIR holds cuzk-daemon, cuzk-bench and cuzk-lab built with
# `--features cuda` and any GPU test binaries named gpu_* (from
# `cargo test --release -p cuzk-cuda --features cuda,lab --no-run`),
# stripped, plain or xz-compressed (a device call carries 64 MiB). The
# GPU tests run first, in the background, while scripts/device/porep32.sh
# prepares the 32 GiB inputs and parameters beside them; its first daemon
# waits for the tests (WAIT_FOR). Then, with SIZE64=1, the 32 GiB PoRep
# parameters are deleted (the 64 GiB disk holds one such file) and one
# 64 GiB PoRep is proved on the whole card (`SIZE=64GiB CONFIGS=device
# DEVICE_RUNS=first`, logs in LOGDIR/64). porep32.sh's variables (CONFIGS,
# SMALL_RUNS, DEVICE_RUNS, TUNING, TUNING_CONFIGS, RUN_TIMEOUT) pass
# through. With $OLD_LAB (a cuzk-lab of an earlier commit, plain or .xz)
# the tests are followed, once porep32.sh has made its parameters and
# waits for them, by `gpu-bench --log-domain 27 --srs resident
# --partitions 3` run new, old, new, old ($OLD_LAB_RUNS, e.g. "new1 old1";
# gpu-bench-*.log; issue 35's side-by-side), so nothing else uses the GPU meanwhile.
# With OTHERS_BENCH=1, before those: partition 0's L others dumped by
# `witness-shape` once the fixtures exist (CPU, while the tests run), and
# `others-bench --g2` over them once the parameters are made
# (others-bench.log; the heavy_bucket_points caps; HEAVY_POINTS=auto
# gives the *heavy* configurations the cheapest of them). With
# $PER_PASS_K, last, `gpu-bench --vram-limit 16GiB --partitions-per-pass
# $PER_PASS_K --srs both` (per-pass.log).
# Everything starts with setsid and this returns: the device
# tool's calls are shorter than the sequence. Poll with
# `scripts/device/collect.sh LOGDIR SECONDS`, which waits for LOGDIR/DONE
# at most that long and packs the logs into $OUT.
set -uo pipefail
BIN="${1:?directory of the binaries}"
L="${2:-/tmp/sequence}"
B=/tmp/sequence-bin
mkdir -p "$B" "$L"
for f in "$BIN"/*; do
  case $f in
    *.xz) xz -dc "$f" > "$B/$(basename "$f" .xz)" ;;
    *) cp -f "$f" "$B/" ;;
  esac
done
if [ -n "${OLD_LAB:-}" ]; then
  case $OLD_LAB in
    *.xz) xz -dc "$OLD_LAB" > "$B/old-cuzk-lab" ;;
    *) cp -f "$OLD_LAB" "$B/old-cuzk-lab" ;;
  esac
fi
chmod +x "$B"/*
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader > "$L/gpu.txt" 2>&1

# The GPU tests one after another, a line each in tests.txt.
cat > "$L/tests.sh" <<EOF
for t in $B/gpu_*; do
  [ -x "\$t" ] || continue
  s=\$(date +%s)
  "\$t" --nocapture --test-threads=1 > "$L/test-\$(basename \$t).log" 2>&1
  echo "\$(date -u +%T) \$(basename \$t) rc=\$? \$(( \$(date +%s) - s ))s \$(grep -E '^test result' "$L/test-\$(basename \$t).log" | tail -1)" >> "$L/tests.txt"
done
if [ -n "${OTHERS_BENCH:-}" ]; then
  for _ in \$(seq 600); do grep -q ' record' "$L/32/steps.txt" 2>/dev/null && break; sleep 1; done
  "$B/cuzk-lab" witness-shape --kind porep --sector-size 32GiB --dump-others "$L/others.bin" > "$L/witness-shape.log" 2>&1
  echo "\$(date -u +%T) witness-shape rc=\$? \$(tail -1 "$L/witness-shape.log")" >> "$L/tests.txt"
  for _ in \$(seq 1200); do grep -q 'waiting for' "$L/32/steps.txt" 2>/dev/null && break; sleep 1; done
  "$B/cuzk-lab" others-bench --others-from "$L/others.bin" --g2 > "$L/others-bench.log" 2>&1
  echo "\$(date -u +%T) others-bench rc=\$? \$(grep -E '^others_bench_summary' "$L/others-bench.log")" >> "$L/tests.txt"
  rm -f "$L/others.bin"
fi
if [ -x "$B/old-cuzk-lab" ]; then
  for _ in \$(seq 1200); do grep -q 'waiting for' "$L/32/steps.txt" 2>/dev/null && break; sleep 1; done
  for r in ${OLD_LAB_RUNS:-new1 old1 new2 old2}; do
    lab=$B/cuzk-lab; case \$r in old*) lab=$B/old-cuzk-lab ;; esac
    "\$lab" gpu-bench --log-domain 27 --srs resident --partitions 3 > "$L/gpu-bench-\$r.log" 2>&1
    rc=\$?
    echo "\$(date -u +%T) gpu-bench \$r rc=\$rc \$(grep -E '^gpu_bench_summary' "$L/gpu-bench-\$r.log" | tail -1)" >> "$L/tests.txt"
  done
fi
touch "$L/tests.done"
EOF
setsid bash "$L/tests.sh" > "$L/tests.out" 2>&1 < /dev/null &

cat > "$L/run.sh" <<EOF
export WAIT_FOR="$L/tests.done" RUN_TIMEOUT="\${RUN_TIMEOUT:-300}" HEAVY_FROM="$L/others-bench.log"
bash scripts/device/porep32.sh "$B/cuzk-daemon" "$B/cuzk-bench" "$L/32"
if [ -n "\${SIZE64:-}" ]; then
  find "\$HOME/.cache/cuzk/fixtures-32GiB/params" -name '*.params' -size +2G -delete
  SIZE=64GiB CONFIGS=device DEVICE_RUNS=first TUNING= \\
    bash scripts/device/porep32.sh "$B/cuzk-daemon" "$B/cuzk-bench" "$L/64"
fi
if [ -n "\${PER_PASS_K:-}" ]; then
  echo "\$(date -u +%T) per-pass gpu-bench k=\$PER_PASS_K" >> "$L/tests.txt"
  "$B/cuzk-lab" gpu-bench --log-domain 27 --srs both --vram-limit 16GiB \\
    --partitions-per-pass "\$PER_PASS_K" --partitions 2 > "$L/per-pass.log" 2>&1
  rc=\$?
  echo "\$(date -u +%T) per-pass rc=\$rc \$(grep -E '^gpu_bench_per_pass_summary' "$L/per-pass.log")" >> "$L/tests.txt"
fi
touch "$L/DONE"
EOF
setsid bash "$L/run.sh" > "$L/run.out" 2>&1 < /dev/null &
sleep 15
cat "$L/gpu.txt" "$L/32/steps.txt" 2>/dev/null
