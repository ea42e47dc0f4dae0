#!/bin/sh
# Fuzzes each target of tests/fuzz for a bounded time. Usage: scripts/fuzz.sh [build-dir] [target...]
# The build folder must be configured with clang and -DPIOLA_FUZZ=ON and its fuzz programs built
# (cmake --build <dir> --target piola_fuzz). Targets default to all of them: tetgen gmsh obj body
# body_raw collider. PIOLA_FUZZ_SECONDS (default 60) bounds each target's run. Each run starts from the seed
# corpus (tests/fuzz/corpus/<target>, read only) and keeps what it learns in
# <build-dir>/fuzz-corpus/<target>, with the dictionary tests/fuzz/<target>.dict where there is
# one; inputs of at most 64 KiB, 10 s per input, 2 GiB of memory. As many targets run at once as
# there are cores (PIOLA_FUZZ_JOBS overrides).
# A crash, a hang, a sanitizer report or a leak stops the run, leaves the input in
# <build-dir>/fuzz-artifacts/<target>/ and makes this script fail; add it to the seed corpus as
# crash-<what> with the fix.
set -eu
cd "$(dirname "$0")/.."
build=${1:-build-fuzz}
[ $# -gt 0 ] && shift
targets=${*:-tetgen gmsh obj body body_raw collider}
seconds=${PIOLA_FUZZ_SECONDS:-60}
# The targets write each input to a temporary file (tests/fuzz/fuzz_common.c): on tmpfs when
# there is one, which runs several times faster than a disk.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR=/dev/shm
fi
jobs=${PIOLA_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
# One target's run; its verdict goes to <build-dir>/fuzz-<target>.status (0: passed).
fuzz_one() {
  t=$1
  program="$build/tests/fuzz/piola_fuzz_$t"
  corpus="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  dict=""
  [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
  # shellcheck disable=SC2086 # $dict is one word or none
  if "$program" $dict -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" "tests/fuzz/corpus/$t" \
      > "$build/fuzz-$t.log" 2>&1; then
    echo 0 > "$build/fuzz-$t.status"
  else
    echo 1 > "$build/fuzz-$t.status"
  fi
}
for t in $targets; do
  if [ ! -x "$build/tests/fuzz/piola_fuzz_$t" ]; then
    echo "fuzz: $build/tests/fuzz/piola_fuzz_$t is missing (configure with CC=clang -DPIOLA_FUZZ=ON, build piola_fuzz)" >&2
    exit 2
  fi
done
running=0
for t in $targets; do
  echo "fuzz: $t for ${seconds} s"
  rm -f "$build/fuzz-$t.status"
  fuzz_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait
    running=0
  fi
done
wait
status=0
for t in $targets; do
  if [ "$(cat "$build/fuzz-$t.status" 2>/dev/null)" != 0 ]; then
    echo "fuzz: $t FAILED; input(s) in $build/fuzz-artifacts/$t, log $build/fuzz-$t.log:" >&2
    tail -n 60 "$build/fuzz-$t.log" >&2
    status=1
  else
    echo "fuzz: $t passed"
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|DONE' "$build/fuzz-$t.log" || true
  fi
done
exit $status
