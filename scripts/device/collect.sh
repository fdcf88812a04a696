#!/usr/bin/env bash
# Waits at most SECONDS for a sequence.sh run's LOGDIR/DONE, prints its
# steps and packs its logs (not the binaries or parameters) into
# $OUT/logs.tar.xz, from the device tool's call:
#
#   scripts/device/collect.sh LOGDIR [SECONDS]
L="${1:?LOGDIR of sequence.sh}"
end=$(( $(date +%s) + ${2:-540} ))
while [ ! -e "$L/DONE" ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
cat "$L/tests.txt" "$L"/*/steps.txt 2>/dev/null
[ -e "$L/DONE" ] && echo "sequence done"
tar -C "$(dirname "$L")" --exclude='bin' --exclude='*.params' --exclude='*.xz' \
  -cf - "$(basename "$L")" | xz -T8 -3 > "${OUT:-/tmp}/logs.tar.xz"
ls -la "${OUT:-/tmp}/logs.tar.xz"
