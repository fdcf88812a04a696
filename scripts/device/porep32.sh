#!/usr/bin/env bash
# 32 GiB PoRep C2 (and WinningPoSt) through a cuzk-daemon with the CUDA
# backend, on the device tool's H200, from the repository root:
#
#   scripts/device/porep32.sh DAEMON CLIENT [LOGDIR]
#
# DAEMON is cuzk-daemon built with --features cuda, CLIENT a cuzk-bench
# (gen-fixtures, gen-params, status); $LAB is a cuzk-lab (synth-bench,
# stress; default: cuzk-lab beside CLIENT). It makes the 32 GiB synthetic
# inputs and the INSECURE PoRep and WinningPoSt parameters there (the ~47 GiB
# PoRep file fits the machine's 64 GiB disk; SnapDeals' and WindowPoSt's do
# not fit beside it), starts the daemon on them and runs, each verified by
# the client with filecoin-proofs' verifier:
#   first:     1 PoRep (records the constraint system, loads the SRS);
#   isolated:  3 PoReps one at a time;
#   pipelined: 4 PoReps submitted at once;
#   winning:   PoReps and WinningPoSts mixed, 4 in flight.
# nvidia-smi samples GPU use and memory every 250 ms into smi-*.csv; the
# daemon's GetStatus (busy seconds per device) is written after each run.
# It takes longer than one device call: start it with setsid in the
# background and poll LOGDIR/steps.txt until LOGDIR/DONE exists.
set -uo pipefail
D="${1:?cuzk-daemon binary (cuda)}"
B="${2:?cuzk-bench binary}"
L="${3:-/tmp/porep32}"
LAB="${LAB:-$(dirname "$B")/cuzk-lab}"
[ -x "$LAB" ] || { echo "no cuzk-lab at $LAB (set LAB=)" >&2; exit 2; }
mkdir -p "$L"
TIME=""
[ -x /usr/bin/time ] && TIME="/usr/bin/time -v"
export RUST_LOG="${RUST_LOG:-warn,partition=info}"
F="$HOME/.cache/cuzk/fixtures-32GiB"
P="$F/params"
ADDR=127.0.0.1:9830
{
  date -u; nproc; free -g | head -2; df -h / | tail -1
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
} > "$L/machine.txt" 2>&1

step() { echo "$(date -u +%T) $*" >> "$L/steps.txt"; }
sample() {
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -lms 250 > "$L/smi-$1.csv" 2>/dev/null &
  SMI=$!
}

step fixtures
$TIME "$B" gen-fixtures --sector-size 32GiB --inputs-only > "$L/fixtures.log" 2>&1
# The PoRep's constraint system recorded (one thread) while the
# parameters are generated (the other cores), into <params>/r1cs where the
# daemon looks for it.
step record
$TIME "$LAB" synth-bench --kind porep --sector-size 32GiB --fixtures "$F" --params "$P" \
  --partition 0 --child record > "$L/record.log" 2>&1 &
REC=$!
step params-winning
$TIME "$B" gen-params --kind winning-post --sector-size 32GiB > "$L/params-winning.log" 2>&1
step params-porep
$TIME "$B" gen-params --kind porep --sector-size 32GiB > "$L/params-porep.log" 2>&1
wait "$REC"
step "recorded: $(grep -o 'wall_ms[^,]*' "$L/record.log" | head -1)"
df -h / | tail -1 >> "$L/machine.txt"

cat > "$L/cuzk.toml" <<EOF
[daemon]
listen = "$ADDR"
journal = false
log = "warn,partition=info,cuzk_core=info"
[engine]
partition_workers = 2
gpu_workers_per_device = 2
synthesized_queue = 2
synthesis = "compiled"
[params]
cache_dir = "$P"
[gpus]
backend = "cuda"
EOF
step daemon-start
$TIME "$D" --config "$L/cuzk.toml" > "$L/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 60); do
  "$B" status --addr "http://$ADDR" > /dev/null 2>&1 && break
  sleep 1
done

for run in first isolated pipelined winning; do
  case $run in
    first) args=(--mix porep --jobs 1 --concurrency 1) ;;
    isolated) args=(--mix porep --jobs 3 --concurrency 1) ;;
    pipelined) args=(--mix porep --jobs 4 --concurrency 4) ;;
    winning) args=(--mix porep,winning-post --jobs 8 --concurrency 4 --seed 7) ;;
  esac
  step "$run"
  sample "$run"
  "$LAB" stress --addr "http://$ADDR" --sector-size 32GiB --verbose "${args[@]}" > "$L/$run.log" 2>&1
  kill "$SMI" 2>/dev/null
  "$B" status --addr "http://$ADDR" > "$L/status-$run.txt" 2>&1
  step "$run done: $(tail -1 "$L/$run.log")"
done
kill -TERM "$DAEMON"
wait "$DAEMON"
step done
touch "$L/DONE"
