#!/usr/bin/env bash
# 32 GiB proofs of every kind through a cuzk-daemon with the CUDA backend,
# on the device tool's H200, from the repository root:
#
#   scripts/device/porep32.sh DAEMON CLIENT [LOGDIR]
#
# DAEMON is cuzk-daemon built with --features cuda, CLIENT a cuzk-bench
# (gen-fixtures, gen-params, status); $LAB is a cuzk-lab (synth-bench,
# stress; default: cuzk-lab beside CLIENT). It makes the 32 GiB synthetic
# inputs and the INSECURE WinningPoSt parameters there, PoRep's too when a
# configuration proves PoReps (the ~47 GiB PoRep file fits the machine's
# 64 GiB disk; SnapDeals' and WindowPoSt's do not fit beside it), starts
# the daemon on them and runs, each verified by the client with
# filecoin-proofs' verifier:
#   first:     1 PoRep (loads the SRS and the recorded constraint system);
#   isolated:  2 PoReps one at a time;
#   pipelined: 4 PoReps submitted at once;
#   winning:   PoReps (NORMAL) and WinningPoSts (CRITICAL) mixed, 4 in
#              flight (with a, b and c on the GPU only);
# once per daemon configuration ($CONFIGS, below; `v16`, `v24` and `v32`
# run `first` and `pipelined`, or $SMALL_RUNS, with gpus.vram_limit 16, 24
# and 32 GiB: the cards operators own; `v16p1` as `v16` with
# gpus.partitions_per_pass = 1; `v24packed` as `v24` with aux copied
# packed, gpus.tuning.pack_aux = true; `v24tile`/`v32tile` as `v24`/`v32`
# with gpus.tuning.split_tile_others = true; `v24k3`/`v32k3` with
# gpus.partitions_per_pass = 3 and engine.synthesized_queue = 4;
# a name with `heavy` in it (`v24heavy`, `deviceheavy`, `v24heavycarry`)
# with gpus.tuning.heavy_bucket_points = $HEAVY_POINTS (default 1024;
# `auto`: the cheapest cap of the others-bench log $HEAVY_FROM; the
# daemon's default is 1024), one with `noheavy` (`v24noheavy`) with it 0
# (off, the default before 2026-12-06), one
# with `carry` with gpus.tuning.carry_buckets = true, one with `overlap`
# (`v24overlap`, `v24k3overlap`) with gpus.tuning.overlap_others = true
# (the default since 2026-12-06), one with `nooverlap` (`v24k3nooverlap`)
# with it false
# (any `v16*`, `v24*`,
# `v32*` or `device*` name runs at that limit); `auto` and `auto16` the same with no
# [engine] section, the daemon sizing itself). The `snap` configuration
# then deletes the PoRep parameters, makes SnapDeals' (~30 GB; from its
# constraint system, recorded at the start beside the other parameters,
# `gen-params --recorded`) and proves 32 GiB SnapDeals (16 partitions);
# `wpost` does the same for WindowPoSt (~47 GB, one partition of 2,349
# sectors) and proves one WindowPoSt, then WindowPoSts and WinningPoSts
# together.
# The `peer` configuration (before `snap` and `wpost`, which delete the
# PoRep parameters) runs `cuzk-lab peer-bench` on PoRep partition 0:
# stock supraseal-c2 ($PEER, default cuzk-peer beside the lab, built with
# --features supraseal) and our backend on the same witness, r and s.
# Each stress run is bounded ($RUN_TIMEOUT seconds, default 900): a run
# that does not end in time is logged as stalled, the daemon's threads are
# dumped (cuda-gdb, where it can attach) into stall-*.txt and the script
# goes on, so a hung daemon cannot spend a whole device session.
# nvidia-smi samples GPU use and memory every 250 ms into smi-*.csv; the
# daemon's GetStatus (busy seconds per device) is written after each run.
# The parameters' fixed-base products run on the GPU (`gen-params --gpu`)
# once a 2 KiB PoRep's files made that way equal the CPU's (else on the
# CPUs; steps.txt says which).
# $WAIT_FOR names a file to wait for before the first daemon starts.
# $TUNING adds a [gpus.tuning] section to every daemon configuration, or
# to those named in $TUNING_CONFIGS (e.g. TUNING="trace_msm = true").
# The script takes longer than one device call: start it with setsid in
# the background and poll LOGDIR/steps.txt until LOGDIR/DONE exists.
set -uo pipefail
# $SIZE: the sector size (default 32GiB; 64GiB for one 64 GiB PoRep with
# CONFIGS=device DEVICE_RUNS=first: delete the 32 GiB parameters first,
# the 64 GiB disk holds one PoRep parameter file).
SIZE="${SIZE:-32GiB}"
D="${1:?cuzk-daemon binary (cuda)}"
B="${2:?cuzk-bench binary}"
L="${3:-/tmp/porep32}"
LAB="${LAB:-$(dirname "$B")/cuzk-lab}"
PEER="${PEER:-$(dirname "$LAB")/cuzk-peer}"
[ -x "$LAB" ] || { echo "no cuzk-lab at $LAB (set LAB=)" >&2; exit 2; }
mkdir -p "$L"
# The binaries are copied out of the repository first: the device tool
# syncs the working tree at every call, and a call that does not carry
# them would remove them under a run in the background.
mkdir -p "$L/bin"
for x in "$D" "$B" "$LAB" "$PEER"; do
  [ -x "$x" ] && cp -f "$x" "$L/bin/"
done
D="$L/bin/$(basename "$D")"
B="$L/bin/$(basename "$B")"
LAB="$L/bin/$(basename "$LAB")"
[ -x "$L/bin/$(basename "$PEER")" ] && PEER="$L/bin/$(basename "$PEER")"
TIME=""
[ -x /usr/bin/time ] && TIME="/usr/bin/time -v"
export RUST_LOG="${RUST_LOG:-warn,partition=info}"
F="$HOME/.cache/cuzk/fixtures-$SIZE"
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

# KIND's constraint system recorded in the background into <params>/r1cs;
# big_prep waits for it.
declare -A RECORDING=()
early_record() {
  step "$1 record (early)"
  $TIME "$LAB" synth-bench --kind "$1" --sector-size "$SIZE" --fixtures "$F" --params "$P" \
    --partition 0 --child record > "$L/record-$1.log" 2>&1 &
  RECORDING[$1]=$!
}

# SKIP_PREP=1: inputs, parameters and the recording are there already
# (a second run on the same machine). The disk holds one big circuit's
# parameters at a time, so not with both snap and wpost.
if [ -n "${SKIP_PREP:-}" ] && [[ " ${CONFIGS:-} " == *" snap "* ]] &&
  [[ " ${CONFIGS:-} " == *" wpost "* ]]; then
  echo "SKIP_PREP with both snap and wpost in CONFIGS: the disk holds one of their parameter files" >&2
  exit 2
fi
if [ -z "${SKIP_PREP:-}" ]; then
step fixtures
$TIME "$B" gen-fixtures --sector-size "$SIZE" --inputs-only > "$L/fixtures.log" 2>&1
# PoRep's parameters only when a configuration proves PoReps (`snap` and
# `wpost` alone make only their own).
POREP=""
for cfg in ${CONFIGS:-device host}; do
  case $cfg in snap | wpost) ;; *) POREP=1 ;; esac
done
# The PoRep's constraint system recorded (one thread) while the
# parameters are generated (the other cores), into <params>/r1cs where the
# daemon looks for it.
if [ -n "$POREP" ]; then
  step record
  $TIME "$LAB" synth-bench --kind porep --sector-size "$SIZE" --fixtures "$F" --params "$P" \
    --partition 0 --child record > "$L/record.log" 2>&1 &
  REC=$!
fi
# The later configurations' recordings too (one core each): they need only
# the inputs, and their parameters are made from them.
for cfg in ${CONFIGS:-device host}; do
  case $cfg in
    snap) [ -n "${RECORDING[snap]:-}" ] || early_record snap ;;
    wpost) [ -n "${RECORDING[window-post]:-}" ] || early_record window-post ;;
  esac
done
# The parameters' fixed-base products on the GPU (`gen-params --gpu`) when
# this build has them and they give the CPU's bytes for the 2 KiB PoRep
# (`cmp`; three products of each chunk are also checked as it goes); on the
# CPUs otherwise.
GPU_PARAMS=""
step gpu-params-check
if "$B" gen-params --kind porep --sector-size 2KiB --dir "$L/gp-cpu" --force > "$L/gp-check.log" 2>&1 &&
  $TIME "$B" gen-params --kind porep --sector-size 2KiB --dir "$L/gp-gpu" --force --gpu >> "$L/gp-check.log" 2>&1 &&
  diff -r -q "$L/gp-cpu" "$L/gp-gpu" >> "$L/gp-check.log" 2>&1; then
  GPU_PARAMS=--gpu
  step "gpu-params-check: the same bytes; parameters on the GPU"
else
  step "gpu-params-check FAILED (see gp-check.log): parameters on the CPUs"
fi
rm -rf "$L/gp-cpu" "$L/gp-gpu"
step params-winning
$TIME "$B" gen-params --kind winning-post --sector-size "$SIZE" $GPU_PARAMS > "$L/params-winning.log" 2>&1
if [ -n "$POREP" ]; then
  step params-porep
  $TIME "$B" gen-params --kind porep --sector-size "$SIZE" $GPU_PARAMS > "$L/params-porep.log" 2>&1
  wait "$REC"
  step "recorded: $(grep -o 'wall_ms[^,]*' "$L/record.log" | head -1)"
fi
df -h / | tail -1 >> "$L/machine.txt"
fi

# One daemon per configuration of $CONFIGS (default "device host"):
# `device` evaluates a, b and c on the GPU from the resident constraint
# matrices (gpus.abc_on_device = true, the default), `host` during
# synthesis on the host (false, the path before); same runs otherwise,
# side by side in one call sequence.
daemon_runs() {
  local cfg=$1 abc=$2 runs=$3 vram=${4:-} run args
  cat > "$L/cuzk-$cfg.toml" <<EOF
[daemon]
listen = "$ADDR"
journal = false
log = "warn,partition=info,cuzk_core=info,cuzk_cuda=info"
$(case $cfg in auto*) ;; *k3*) printf '[engine]\npartition_workers = 2\ngpu_workers_per_device = 2\nsynthesized_queue = 4\n' ;; *) printf '[engine]\npartition_workers = 2\ngpu_workers_per_device = 2\nsynthesized_queue = 2\n' ;; esac)
[params]
cache_dir = "$P"
[gpus]
backend = "cuda"
abc_on_device = $abc
EOF
  # A smaller card simulated on the H200 (gpus.vram_limit).
  [ -n "$vram" ] && echo "vram_limit = \"$vram\"" >> "$L/cuzk-$cfg.toml"
  # A configuration named *p1: every partition streams the SRS sections
  # itself (gpus.partitions_per_pass = 1), for the side-by-side figure.
  case $cfg in *p1) echo "partitions_per_pass = 1" >> "$L/cuzk-$cfg.toml" ;; esac
  # *k3: three partitions share each pass (a queue of four to draw from).
  case $cfg in *k3*) echo "partitions_per_pass = 3" >> "$L/cuzk-$cfg.toml" ;; esac
  # TUNING: lines of [gpus.tuning] (e.g. "trace_msm = true"), traces on
  # the daemon's stderr.
  # $TUNING_CONFIGS: only these configurations get it (default: all).
  local tune=""
  if [ -n "${TUNING:-}" ] && [[ " ${TUNING_CONFIGS:-$cfg} " == *" $cfg "* ]]; then
    tune=$TUNING
  fi
  # A configuration named *packed copies aux packed (the side-by-side
  # figure for gpus.tuning.pack_aux).
  case $cfg in *packed) tune="${tune:+$tune$'\n'}pack_aux = true" ;; esac
  # *tile: each streamed tile's others through Pippenger as gathered.
  case $cfg in *tile) tune="${tune:+$tune$'\n'}split_tile_others = true" ;; esac
  # *heavy*: buckets past $HEAVY_POINTS points summed by whole blocks.
  # *noheavy*: one thread a bucket, the default before 2026-12-06.
  case $cfg in
    *noheavy*) tune="${tune:+$tune$'\n'}heavy_bucket_points = 0" ;;
    *heavy*) tune="${tune:+$tune$'\n'}heavy_bucket_points = $(heavy_points)" ;;
  esac
  # *carry*: streamed MSMs keep their buckets across batches.
  case $cfg in *carry*) tune="${tune:+$tune$'\n'}carry_buckets = true" ;; esac
  # *overlap*: each streamed MSM's others through Pippenger beside the
  # next MSM's tiles (gpus.tuning.overlap_others).
  case $cfg in
    *nooverlap*) tune="${tune:+$tune$'\n'}overlap_others = false" ;;
    *overlap*) tune="${tune:+$tune$'\n'}overlap_others = true" ;;
  esac
  [ -n "$tune" ] && printf '[gpus.tuning]\n%s\n' "$tune" >> "$L/cuzk-$cfg.toml"
  step "$cfg daemon-start"
  # The daemon logs as its config says (RUST_LOG would override it and
  # hide the SRS tier's lines).
  env -u RUST_LOG $TIME "$D" --config "$L/cuzk-$cfg.toml" > "$L/daemon-$cfg.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 60); do
    "$B" status --addr "http://$ADDR" > /dev/null 2>&1 && break
    sleep 1
  done
  for run in $runs; do
    case $run in
      first) args=(--mix porep --jobs 1 --concurrency 1) ;;
      isolated) args=(--mix porep --jobs 2 --concurrency 1) ;;
      pipelined) args=(--mix porep --jobs 4 --concurrency 4) ;;
      winning) args=(--mix porep,winning-post --jobs "${WINNING_JOBS:-12}" --concurrency 4 --seed 7) ;;
      snap-first) args=(--mix snap --jobs 1 --concurrency 1) ;;
      snap-isolated) args=(--mix snap --jobs 2 --concurrency 1) ;;
      wpost-first) args=(--mix window-post --jobs 1 --concurrency 1) ;;
      wpost-winning) args=(--mix window-post,winning-post --jobs 6 --concurrency 3 --seed 7) ;;
    esac
    step "$cfg $run"
    sample "$cfg-$run"
    timeout "${RUN_TIMEOUT:-900}" "$LAB" stress --addr "http://$ADDR" --sector-size "$SIZE" --verbose \
      --priority porep=normal,window-post=normal,winning-post=critical "${args[@]}" \
      > "$L/$cfg-$run.log" 2>&1
    [ $? -eq 124 ] && stalled "$cfg-$run"
    kill "$SMI" 2>/dev/null
    "$B" status --addr "http://$ADDR" > "$L/status-$cfg-$run.txt" 2>&1
    step "$cfg $run done: $(tail -1 "$L/$cfg-$run.log")"
  done
  # $DAEMON is /usr/bin/time's pid: signal the daemon itself, then let
  # time report its peak RSS.
  pkill -TERM -x cuzk-daemon
  while pgrep -x cuzk-daemon > /dev/null; do sleep 1; done
  wait "$DAEMON"
  step "$cfg daemon stopped: $(grep -o 'Maximum resident set size.*' "$L/daemon-$cfg.log")"
}

# gpus.tuning.heavy_bucket_points for the *heavy* configurations:
# $HEAVY_POINTS (default 1024), or with HEAVY_POINTS=auto the cap of
# $HEAVY_FROM (an others-bench log, `--g2`) whose real-scalar times cost a
# proof least (three G1 sections, L, A and B_G1, and one G2, B_G2); 0 (off)
# when that log is missing or its sums disagree.
heavy_points() {
  local want=${HEAVY_POINTS:-1024}
  [ "$want" = auto ] || { echo "$want"; return; }
  [ -r "${HEAVY_FROM:-}" ] && grep -q 'sums_agree=true' "$HEAVY_FROM" || { echo 0; return; }
  awk '/^others_bench scalars=real/ {
      for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      c = v["cap"]; caps[c] = 1
      cost[c] += (v["group"] == "g1" ? 3 : 1) * v["ms_min"]
    }
    END { best = -1; for (c in caps) if (best < 0 || cost[c] < cost[best]) best = c
      print (best < 0 ? 0 : best) }' "$HEAVY_FROM"
}

# A run that did not end in $RUN_TIMEOUT: the daemon's threads, where
# cuda-gdb can attach (the image has no gdb), and the daemon's status.
stalled() {
  step "$1 STALLED after ${RUN_TIMEOUT:-900} s: threads in stall-$1.txt"
  local pid
  pid=$(pgrep -x cuzk-daemon | head -1)
  [ -n "$pid" ] && timeout 120 cuda-gdb -batch -p "$pid" -ex "thread apply all bt" \
    > "$L/stall-$1.txt" 2>&1
  timeout 10 "$B" status --addr "http://$ADDR" >> "$L/stall-$1.txt" 2>&1
}

# A big circuit's parameters and recording in place of the last one's (the
# disk holds one ~30–47 GB file; WinningPoSt's small one stays): KIND is
# snap or window-post.
big_prep() {
  local kind=$1
  # SKIP_PREP: this kind's parameters and recording are there already
  # (a second run on the same machine); nothing is deleted or made.
  if [ -n "${SKIP_PREP:-}" ]; then
    step "$kind prep skipped (SKIP_PREP)"
    return 0
  fi
  step "$kind prep: deleting the other large parameters"
  find "$P" -name '*.params' -size +2G -delete
  [ -n "${RECORDING[$kind]:-}" ] || early_record "$kind"
  local from=--recorded
  if wait "${RECORDING[$kind]}"; then
    step "$kind recorded: $(grep -o 'wall_ms[^,]*' "$L/record-$kind.log" | head -1)"
  else
    step "$kind recording FAILED: parameters from the blank circuit"
    from=""
  fi
  # The matrices from that recording: the blank circuit's two synthesis
  # passes took most of WindowPoSt's >17 min of parameters (2026-12-03).
  step "params-$kind"
  $TIME "$B" gen-params --kind "$kind" --sector-size "$SIZE" $from ${GPU_PARAMS:-} > "$L/params-$kind.log" 2>&1 ||
    { step "params-$kind FAILED: $(grep -i error "$L/params-$kind.log" | tail -1)"; return 1; }
  df -h / | tail -1 >> "$L/machine.txt"
}

# WAIT_FOR: a file that another job of the same call sequence (GPU tests,
# gpu-bench) touches when it is done, so its GPU work does not overlap
# the daemons' runs (at most 15 minutes).
if [ -n "${WAIT_FOR:-}" ]; then
  step "waiting for $WAIT_FOR"
  for _ in $(seq 900); do [ -e "$WAIT_FOR" ] && break; sleep 1; done
fi

for cfg in ${CONFIGS:-device host}; do
  case $cfg in
    device) daemon_runs device true "${DEVICE_RUNS:-first isolated pipelined winning}" ;;
    device*) daemon_runs "$cfg" true "${DEVICE_RUNS:-first pipelined}" ;;
    # The cards operators own, simulated with gpus.vram_limit.
    # v16, v24, v32 and their variants (v24k3, v24heavycarry, ...: see the
    # engine and tuning cases in daemon_runs).
    v16*) daemon_runs "$cfg" true "${SMALL_RUNS:-first pipelined}" 16GiB ;;
    v24*) daemon_runs "$cfg" true "${SMALL_RUNS:-first pipelined}" 24GiB ;;
    v32*) daemon_runs "$cfg" true "${SMALL_RUNS:-first pipelined}" 32GiB ;;
    # No [engine] section: the zero-config daemon sizes itself.
    auto) daemon_runs auto true "${DEVICE_RUNS:-first pipelined}" ;;
    auto16) daemon_runs auto16 true "${SMALL_RUNS:-first pipelined}" 16GiB ;;
    snap) big_prep snap && daemon_runs snap true "snap-first snap-isolated" ;;
    peer)
      step "peer-bench porep"
      timeout "${RUN_TIMEOUT:-900}" "$LAB" peer-bench --kind porep --sector-size "$SIZE" \
        --fixtures "$F" --params "$P" --runs 3 --peer "$PEER" > "$L/peer-porep.log" 2>&1
      step "peer-bench done: $(tail -1 "$L/peer-porep.log")"
      ;;
    wpost) big_prep window-post && daemon_runs wpost true "${WPOST_RUNS:-wpost-first wpost-winning}" ;;
    host) daemon_runs host false "first isolated pipelined" ;;
    device-again) daemon_runs device2 true "first isolated pipelined" ;;
  esac
done
step done
touch "$L/DONE"
