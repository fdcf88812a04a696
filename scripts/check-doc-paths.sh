#!/usr/bin/env bash
# Every file path a document names in backticks exists: from the
# repository root, or (a short path such as `engine/workers.rs` or
# `cuda/dalloc.cuh`, named where the text is about one crate) as the tail
# of a tracked path. Paths made at run time (below, each with where) are
# not looked for. Prints each missing one and exits 1 if any.
#
#   scripts/check-doc-paths.sh [DOC ...]   (default: ARCHITECTURE.md,
#   README.md, docs/PERF.md and the crates' READMEs)
set -uo pipefail
cd "$(dirname "$0")/.."
docs=("$@")
[ ${#docs[@]} -eq 0 ] && docs=(ARCHITECTURE.md README.md docs/PERF.md crates/*/README.md)
files=$(git ls-files)
dirs=$(printf '%s\n' "$files" | sed -n 's|/[^/]*$||p' | sort -u)
# Searched with a here-string: `printf | grep -q` under pipefail fails when
# grep stops reading early (printf gets SIGPIPE), a false "missing".
known=$(printf '%s\n' "$files" "$dirs")
# Made at run time: the journal's payload directory in the state dir, the
# fixture cache's synthetic sectors, porep32.sh's log directory,
# scripts/device/build.sh's output directory.
runtime='^(payloads/|fixtures-2KiB/synthetic|LOGDIR/.*|OUTDIR/.*|target/device(/.*)?)$'
for doc in "${docs[@]}"; do
  # Backticked tokens with no spaces or placeholders that look like a path:
  # a slash, or a file name with one of the repository's extensions.
  grep -o '`[^` <>*]*`' "$doc" | tr -d '`' |
    grep -E '^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*/?$' |
    grep -E '/|\.(rs|md|cu|cuh|toml|sh|proto|service|yml)$' |
    grep -vE '^(\.|https?:|/)' | grep -vE "$runtime" | sort -u |
    while read -r p; do
      t=${p%/}
      if [ -e "$t" ] || grep -qE "(^|/)${t//./\\.}$" <<< "$known"; then
        continue
      fi
      echo "$doc: \`$p\` names no file or directory"
      echo x >> "${TMPDIR:-/tmp}/doc-paths.$$"
    done
done
if [ -s "${TMPDIR:-/tmp}/doc-paths.$$" ]; then
  rm -f "${TMPDIR:-/tmp}/doc-paths.$$"
  exit 1
fi
rm -f "${TMPDIR:-/tmp}/doc-paths.$$"
echo "doc paths: every backticked path in ${docs[*]} exists"
