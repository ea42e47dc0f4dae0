#!/bin/sh
# The benchmark suite behind bench/RESULTS.md: on one backend/device, the cross-checks against
# the CPU reference, the paper's scene (100 Armadillos) with several color caps and work-group
# sizes, the procedural scene, a profiled run, and a scaling run. Writes JSON and logs to OUT.
#
#   bench/run_suite.sh OUT ARMADILLO.node [piola options, e.g. --backend opencl --device gpu]
#
# Each command's output goes to OUT/<name>.txt and OUT/<name>.json; a failing command is
# recorded in OUT/failures.txt and the suite goes on.
set -u
out=$1
mesh=$2
shift 2
piola=${PIOLA:-build/piola}
mkdir -p "$out"
: > "$out/failures.txt"
. "$(dirname "$0")/suite_run.sh"
"$piola" devices > "$out/devices.txt" 2>&1
run crosscheck_default crosscheck --steps 100 --every 20 --json "$out/crosscheck_default.json" "$@"
run crosscheck_armadillo crosscheck --mesh "$mesh" --steps 100 --every 20 \
  --json "$out/crosscheck_armadillo.json" "$@"
run bench_creature bench --steps 100 --json "$out/bench_creature.json" "$@"
for colors in 0 32 24 16; do
  run "bench_armadillo_c$colors" bench --mesh "$mesh" --steps 100 --max-colors "$colors" \
    --json "$out/bench_armadillo_c$colors.json" "$@"
done
run bench_armadillo_stages bench --mesh "$mesh" --steps 100 --schedule stages \
  --json "$out/bench_armadillo_stages.json" "$@"
run bench_creature_wg128 bench --steps 100 --work-group 128 --json "$out/bench_creature_wg128.json" "$@"
for wg in 32 128 256; do
  run "bench_armadillo_wg$wg" bench --mesh "$mesh" --steps 100 --work-group "$wg" \
    --json "$out/bench_armadillo_wg$wg.json" "$@"
done
run bench_armadillo_profile bench --mesh "$mesh" --steps 50 --profile \
  --json "$out/bench_armadillo_profile.json" "$@"
run bench_armadillo_scaling bench --mesh "$mesh" --scaling --max-bodies "${SCALING_MAX:-10000}" \
  --steps 30 --warmup 3 \
  --json "$out/bench_armadillo_scaling.json" "$@"
echo "failures: $(tr '\n' ' ' < "$out/failures.txt")" | tee -a "$out/suite.log"
