#!/usr/bin/env bash
# Builds what a device call carries (no GPU needed here), from the
# repository root:
#
#   scripts/device/build.sh [OUTDIR]          (default target/device)
#
# OUTDIR/bin: cuzk-daemon, cuzk-bench and cuzk-lab with the CUDA backend
# (sm_90, $CUZK_CUDA_ARCHS to change) and the GPU test binaries gpu_*,
# stripped and xz-packed (~50 MB: scripts/device/sequence.sh's BINDIR).
# OUTDIR/quick: that cuzk-lab and, with OTHERS=1, a real 32 GiB PoRep
# partition's L others (`witness-shape --dump-others`, ~35 MB as xz; the
# 32 GiB inputs are made first, ~17 GB of memory for ~4 minutes):
# scripts/device/quick.sh's inputs. With OLD=<commit>, OUTDIR/old-cuzk-lab.xz
# is that commit's cuzk-lab (a git worktree in /tmp, the same target
# directory; this tree's crates are touched after it, so that the next
# build does not take the old outputs for its own), for sequence.sh's
# OLD_LAB side by side.
# On 2 cores: ~40 min from nothing, ~15 once the dependencies are built.
# Carry OUTDIR/bin (and the old lab) or OUTDIR/quick, never both: a call
# carries 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
O="${1:-target/device}"
eval "$(scripts/install-cuda-toolchain.sh "$HOME/.cache/cuzk/cudavenv" 2>/dev/null | grep '^export')"
export CUZK_CUDA_ARCHS="${CUZK_CUDA_ARCHS:-90}"
T="${CARGO_TARGET_DIR:-target}"
cargo build --release -p cuzk-daemon -p cuzk-bench --features cuzk-daemon/cuda,cuzk-bench/cuda
cargo build --release -p cuzk-lab --features cuda
tests=$(cargo test --release -p cuzk-cuda --features cuda,lab --no-run 2>&1 |
  grep -o 'tests/gpu_[a-z_0-9]*\.rs ([^)]*)' | tr -d '()')
rm -rf "$O/bin" && mkdir -p "$O/bin" "$O/quick"
for b in cuzk-daemon cuzk-bench cuzk-lab; do strip -o "$O/bin/$b" "$T/release/$b"; done
while read -r src bin; do
  [ -n "$src" ] && strip -o "$O/bin/$(basename "$src" .rs)" "$bin"
done <<< "$tests"
xz -T0 -6 -f "$O"/bin/*
cp -f "$O/bin/cuzk-lab.xz" "$O/quick/"
if [ -n "${OTHERS:-}" ]; then
  "$T/release/cuzk-bench" gen-fixtures --sector-size 32GiB --inputs-only
  "$T/release/cuzk-lab" witness-shape --kind porep --sector-size 32GiB \
    --dump-others /tmp/others.bin
  xz -T0 -6 -c /tmp/others.bin > "$O/quick/others.bin.xz" && rm -f /tmp/others.bin
fi
if [ -n "${OLD:-}" ]; then
  rm -rf /tmp/cuzk-old && git worktree add -f /tmp/cuzk-old "$OLD"
  tdir=$(realpath "$T")
  (cd /tmp/cuzk-old && CARGO_TARGET_DIR="$tdir" cargo build --release -p cuzk-lab --features cuda)
  strip -o "$O/old-cuzk-lab" "$T/release/cuzk-lab" && xz -T0 -6 -f "$O/old-cuzk-lab"
  git worktree remove --force /tmp/cuzk-old
  # Cargo names a workspace crate's outputs by its path inside the
  # workspace, and judges them fresh by the mtimes of this tree's files: the
  # old commit's outputs, newer than these files, would be taken as this
  # tree's by the next build. Newer mtimes make that build compile them.
  git ls-files -z crates | xargs -0 touch
fi
du -sh "$O"/*
