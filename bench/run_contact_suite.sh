#!/bin/sh
# The contact benchmarks behind bench/RESULTS.md, on one backend/device: the paper's funnel scene
# (100 Armadillos falling through a funnel, 10 s, with its checks and surface frames for the
# pictures), the cross-checks one step at a time (crosscheck --resync: grid, funnel, cloth), the
# funnel and grid scenes timed with and without contacts, the funnel profiled per stage and
# kernel, and the funnel's trajectory cross-check with its baseline. Writes logs and JSON to OUT.
#
#   bench/run_contact_suite.sh OUT ARMADILLO.node [piola options, e.g. --backend opencl --device gpu]
#
# FUNNEL_STEPS (default 2000), FUNNEL_EVERY (default 250: frames written) and CROSS_BODIES /
# CROSS_STEPS (default 9 bodies, 400 steps: the CPU reference runs beside the device) shorten it.
# A failing command is recorded in OUT/failures.txt and the suite goes on.
set -u
out=$1
mesh=$2
shift 2
piola=${PIOLA:-build/piola}
mkdir -p "$out"
: > "$out/failures.txt"
. "$(dirname "$0")/suite_run.sh"
"$piola" devices > "$out/devices.txt" 2>&1
# First the 10 s funnel with its checks, then the cross-checks one step at a time (--resync: the
# device loads the reference's state before every step; the CPU reference on every core of the
# host, --threads 0, the same result as on one).
run funnel_armadillo run --scene funnel --mesh "$mesh" --steps "${FUNNEL_STEPS:-2000}" \
  --every "${FUNNEL_EVERY:-250}" --surface --out "$out/funnel_frames" --check "$@"
run resync_grid crosscheck --resync --mesh "$mesh" --bodies 10 --steps 100 --every 20 --threads 0 \
  --json "$out/resync_grid.json" "$@"
run resync_funnel crosscheck --resync --scene funnel --mesh "$mesh" --bodies "${CROSS_BODIES:-9}" \
  --steps "${CROSS_STEPS:-400}" --every 50 --threads 0 --json "$out/resync_funnel.json" "$@"
run resync_cloth crosscheck --resync --scene cloth --cloth-cells 50 --steps 200 --every 25 \
  --threads 0 --json "$out/resync_cloth.json" "$@"
run bench_grid_armadillo bench --mesh "$mesh" --steps 100 --json "$out/bench_grid_armadillo.json" "$@"
run bench_funnel_armadillo bench --scene funnel --mesh "$mesh" --warmup "${FUNNEL_WARMUP:-600}" \
  --steps 200 --json "$out/bench_funnel_armadillo.json" "$@"
# The same state profiled: device time per stage and per kernel with launches per step (the
# per-stage schedule, an event per launch: read proportions, not the step's time).
run bench_funnel_profile bench --scene funnel --mesh "$mesh" --warmup "${FUNNEL_WARMUP:-600}" \
  --steps 50 --profile --json "$out/bench_funnel_profile.json" "$@"
# The trajectory cross-check with its baseline.
run crosscheck_funnel crosscheck --scene funnel --mesh "$mesh" --bodies "${CROSS_BODIES:-9}" \
  --steps "${CROSS_STEPS:-400}" --every 20 --baseline --threads 0 \
  --json "$out/crosscheck_funnel.json" "$@"
echo "failures: $(tr '\n' ' ' < "$out/failures.txt")" | tee -a "$out/suite.log"
