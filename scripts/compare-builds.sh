#!/bin/sh
# Compares the results of two versions of Piola byte for byte: a base (a git revision, built in a
# worktree) and the working tree. Both run the same commands on this machine; their outputs must
# be identical. It is the check for changes that must not change behaviour (a restructuring, a
# rename, a new file layout).
#
# Usage: scripts/compare-builds.sh [--full] [BASE]     (BASE defaults to HEAD)
#
# What is compared (each on the CPU reference and on OpenCL, when a device is present):
#   - the state hashes the determinism tests print (piola_tests);
#   - the VTK frames and scene.json of `piola run`: the grid scene (contacts on and off, both
#     OpenCL schedules, plasticity, the Jacobi tail, SIMD lanes off), the funnel of 9 bodies
#     (the Armadillo of ../shared/data when present, else the procedural creature) and the cloth
#     scene;
#   - `piola validate --quick --json` (all of `piola validate` with --full), wall times removed;
#   - `piola crosscheck --json` of a small grid, wall times removed.
# Outputs go to build-compare/{base,head}-out/; the exit status is 1 when anything differs.
set -eu
cd "$(dirname "$0")/.."
full=0
if [ "${1:-}" = "--full" ]; then
  full=1
  shift
fi
base=${1:-HEAD}
jobs=$(nproc 2>/dev/null || echo 2)
top=$PWD/build-compare
mkdir -p "$top"

# The base's sources, in a worktree of their own.
rev=$(git rev-parse --verify "$base^{commit}")
if [ -d "$top/base-src" ]; then
  git -C "$top/base-src" checkout -q --detach "$rev"
else
  git worktree add -q --detach "$top/base-src" "$rev"
fi
build() { # source dir, build dir
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$2" -j "$jobs" >/dev/null
}
echo "compare-builds: building the base ($(git rev-parse --short "$rev")) and the working tree"
build "$top/base-src" "$top/base"
build "$PWD" "$top/head"

mesh=../shared/data/armadillo/armadillo_4k.node
[ -f "$mesh" ] || mesh=""
mesh=${mesh:+$PWD/$mesh}
opencl=0
if "$top/head/piola" devices 2>/dev/null | grep -q '^ *[0-9]*:[0-9]'; then
  opencl=1
fi

# Drops the JSON fields that hold wall times and dates, so that only results are compared.
strip_times() {
  python3 - "$1" <<'PY'
import json, sys
def clean(v):
    if isinstance(v, dict):
        return {k: clean(x) for k, x in v.items()
                if k not in ("date", "seconds", "total_seconds", "wall_seconds", "ms_per_step",
                             "host_cpu")}
    if isinstance(v, list):
        return [clean(x) for x in v]
    return v
with open(sys.argv[1]) as f:
    data = json.load(f)
with open(sys.argv[1], "w") as f:
    json.dump(clean(data), f, indent=1, sort_keys=True)
PY
}

suite() { # build dir, output dir
  b=$1
  out=$2
  rm -rf "$out"
  mkdir -p "$out"
  backends="cpu"
  [ "$opencl" -eq 1 ] && backends="cpu opencl"
  "$b/piola_tests" determinism_hash contact_determinism threads_cpu_reference_bitwise \
    collider_identity_pose_bitwise cloth_beside_tet_body opencl_deterministic \
    opencl_contact_determinism opencl_contact_filter opencl_cloth_schedules_agree \
    opencl_cloth_fused_launches_bitwise 2>/dev/null | grep -i 'hash' >"$out/test_hashes.txt" || true
  for be in $backends; do
    run() { # name, options...
      name=$1
      shift
      "$b/piola" run --backend "$be" --out "$out/$be-$name" "$@" >/dev/null 2>&1 || true
    }
    run grid --bodies 4 --steps 100 --every 10
    run grid-nocontacts --bodies 4 --steps 60 --every 10 --no-contacts
    run grid-plastic --bodies 2 --steps 60 --every 10 --plastic-creep 5 --plastic-yield 0.02
    run grid-jacobi --bodies 2 --steps 40 --every 10 --max-colors 8
    run grid-jacobi-scheme --bodies 2 --steps 40 --every 10 --scheme jacobi --omega 0.8
    run funnel --scene funnel --bodies 9 ${mesh:+--mesh "$mesh"} --steps 200 --every 20 --surface
    run cloth --scene cloth --cloth-cells 40 --steps 100 --every 20
    if [ "$be" = opencl ]; then
      run grid-stages --bodies 4 --steps 60 --every 10 --schedule stages
      run grid-bodies --bodies 4 --steps 60 --every 10 --schedule bodies
      run grid-lanes1 --bodies 4 --steps 60 --every 10 --lanes 1 --no-contacts
      run grid-bodies-nc --bodies 4 --steps 60 --every 10 --schedule bodies --no-contacts
      run cloth-profile --scene cloth --cloth-cells 40 --steps 40 --every 20 --profile
    fi
    if [ "$full" -eq 1 ]; then
      "$b/piola" validate --backend "$be" --json "$out/$be-validate.json" >/dev/null 2>&1 || true
    else
      "$b/piola" validate --quick --backend "$be" --json "$out/$be-validate.json" >/dev/null 2>&1 ||
        true
    fi
    [ -f "$out/$be-validate.json" ] && strip_times "$out/$be-validate.json"
  done
  if [ "$opencl" -eq 1 ]; then
    "$b/piola" crosscheck --bodies 2 --steps 20 --json "$out/crosscheck.json" >/dev/null 2>&1 ||
      true
    [ -f "$out/crosscheck.json" ] && strip_times "$out/crosscheck.json"
  fi
}

echo "compare-builds: running the base"
suite "$top/base" "$top/base-out"
echo "compare-builds: running the working tree"
suite "$top/head" "$top/head-out"

status=0
for item in "$top/base-out"/*; do
  name=$(basename "$item")
  if diff -r "$item" "$top/head-out/$name" >/dev/null 2>&1; then
    echo "  same       $name"
  else
    echo "  DIFFERENT  $name"
    status=1
  fi
done
for item in "$top/head-out"/*; do
  [ -e "$top/base-out/$(basename "$item")" ] || {
    echo "  NEW        $(basename "$item") (not in the base)"
    status=1
  }
done
[ -s "$top/base-out/test_hashes.txt" ] || {
  echo "  no test hashes were printed"
  status=1
}
if [ "$status" -eq 0 ]; then
  echo "compare-builds: identical"
else
  echo "compare-builds: outputs differ (build-compare/base-out against build-compare/head-out)"
fi
exit "$status"
