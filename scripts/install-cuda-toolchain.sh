#!/usr/bin/env bash
# Installs a CUDA 13.0 compiler toolchain from pip (no GPU, no root needed
# beyond writing the venv) so that `cargo build --features cuda` works on a
# machine without the CUDA toolkit, e.g. CI. Idempotent.
#
#   scripts/install-cuda-toolchain.sh [VENV_DIR]     (default /opt/cudavenv)
#
# Prints the environment to use, e.g.:
#   eval "$(scripts/install-cuda-toolchain.sh | grep ^export)"
#   cargo build --release -p cuzk-cuda --features cuda
#
# The versions are pinned together: unpinned, nvvm and crt come newer than
# nvcc and ptxas rejects the PTX.
set -euo pipefail

VENV="${1:-/opt/cudavenv}"
PKGS=(
  nvidia-cuda-nvcc==13.0.88
  nvidia-nvvm==13.0.88
  nvidia-cuda-crt==13.0.88
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-cccl==13.0.85
)

if [ ! -x "$VENV/bin/pip" ]; then
  python3 -m venv "$VENV"
fi
nvcc_path() { ls "$VENV"/lib/python3*/site-packages/nvidia/cu13/bin/nvcc 2>/dev/null | head -n1; }
if [ -z "$(nvcc_path)" ] || ! "$VENV/bin/pip" show nvidia-cuda-runtime >/dev/null 2>&1; then
  "$VENV/bin/pip" install -q "${PKGS[@]}"
fi
NVCC="$(nvcc_path)"
if [ -z "$NVCC" ]; then
  echo "nvcc not found under $VENV after installing" >&2
  exit 1
fi
ROOT="$(cd "$(dirname "$NVCC")/.." && pwd)"
# nvcc.profile looks for libraries in lib64; pip ships them in lib.
if [ ! -e "$ROOT/lib64" ]; then
  ln -s lib "$ROOT/lib64"
fi
"$NVCC" --version | tail -n 2 >&2
echo "export NVCC=$NVCC"
echo "export CUDA_LIB_DIR=$ROOT/lib"
