#!/bin/sh
# What the speed targets need measured on a GPU, in one command (GPU time is scarce), most needed
# first: the contact suite (bench/run_contact_suite.sh: funnel 10 s with its checks, the
# cross-checks one step at a time (crosscheck --resync), funnel and grid timed with and without
# contacts, the funnel cross-check); vertex block descent's scenes (one, 100 and 10000
# Armadillos, the cloth, the funnel) and the funnel with edge-edge contacts; the cloth scene's
# bench (200 x 200 cells, elasticity and bending against the paper's Table 1), one Armadillo
# alone (single-body latency), one 374400-tet box, those three again with --profile (device time
# per kernel, device busy), the body-count scaling, and `piola validate`.
# Writes logs and JSON to OUT; a failing command is recorded in OUT/failures.txt and the suite
# goes on. Run it on the device with `. .device/gpu-env.sh` first (../shared/device/README.md).
# With PIOLA_TEST_DIR set to a build folder of the tests, the OpenCL tests run there first, on
# the device PIOLA_DEVICE names (default gpu), less the two step fault sweeps (minutes each):
# kernels that only a GPU's compiler refuses show up there.
#
#   bench/run_device_suite.sh OUT ARMADILLO.node [piola options, e.g. --backend opencl --device gpu]
set -u
out=$1
mesh=$2
shift 2
piola=${PIOLA:-build/piola}
export PIOLA
# The funnel cross-check runs the CPU reference twice (for the baseline) on one host core: 400
# steps of 9 Armadillos took over 5 minutes beside an H200, so the device suite runs 200.
CROSS_STEPS=${CROSS_STEPS:-200}
export CROSS_STEPS
mkdir -p "$out"
: > "$out/failures.txt"
. "$(dirname "$0")/suite_run.sh"
"$piola" devices > "$out/devices.txt" 2>&1
# The driver's own report (extensions and their versions: whether the device records command
# buffers, cl_khr_command_buffer, which would replay a step's launches without the host).
if command -v clinfo > /dev/null 2>&1; then
  clinfo > "$out/clinfo.txt" 2>&1
fi
# The program the device built (PTX on NVIDIA: `ptxas -arch=sm_XX -v` gives each kernel's
# registers, stack frame and spills), when piola_program_dump was built beside the program;
# the device of PIOLA_DEVICE, else the best one.
dump="$(dirname "$piola")/piola_program_dump"
if [ -x "$dump" ]; then
  "$dump" --out "$out/program.bin" > "$out/program.txt" 2>&1 ||
    echo "program_dump" >> "$out/failures.txt"
fi
if [ -n "${PIOLA_TEST_DIR:-}" ]; then
  echo "== ctest_opencl: ctest -R '^opencl_' in $PIOLA_TEST_DIR" | tee -a "$out/suite.log"
  if ! (cd "$PIOLA_TEST_DIR" && PIOLA_DEVICE=${PIOLA_DEVICE:-gpu} ctest -j8 -R '^opencl_' \
    -E 'opencl_faults_step' --output-on-failure) > "$out/ctest_opencl.txt" 2>&1; then
    echo "ctest_opencl" >> "$out/failures.txt"
  fi
  tail -n 4 "$out/ctest_opencl.txt" | tee -a "$out/suite.log"
fi
sh "$(dirname "$0")/run_contact_suite.sh" "$out/contact" "$mesh" "$@"
cat "$out/contact/failures.txt" >> "$out/failures.txt"
# Vertex block descent (issue 43's GPU targets: one Armadillo 0.1 ms, 100 0.25 ms, 10000 12 ms,
# the cloth scene 0.3 ms, the funnel with contacts 1.5 ms), each beside XPBD where the suite does
# not time XPBD elsewhere; then the funnel with edge-edge contacts (issue 41: at most 1.25x the
# contact time of the funnel without them, bench_funnel_armadillo of the contact suite).
run vbd_armadillo_one bench --mesh "$mesh" --bodies 1 --steps 200 --no-contacts --scheme vbd \
  --json "$out/vbd_armadillo_one.json" "$@"
run vbd_armadillo_100 bench --mesh "$mesh" --bodies 100 --steps 100 --no-contacts --scheme vbd \
  --json "$out/vbd_armadillo_100.json" "$@"
run vbd_armadillo_100_stages bench --mesh "$mesh" --bodies 100 --steps 100 --no-contacts \
  --scheme vbd --schedule stages --json "$out/vbd_armadillo_100_stages.json" "$@"
run xpbd_armadillo_100 bench --mesh "$mesh" --bodies 100 --steps 100 --no-contacts \
  --json "$out/xpbd_armadillo_100.json" "$@"
run vbd_armadillo_100_cheb3 bench --mesh "$mesh" --bodies 100 --steps 100 --scheme vbd \
  --vbd-rho 0.85 --iterations 3 --json "$out/vbd_armadillo_100_cheb3.json" "$@"
run vbd_cloth bench --scene cloth --steps 100 --scheme vbd --json "$out/vbd_cloth.json" "$@"
run vbd_funnel bench --scene funnel --mesh "$mesh" --warmup "${FUNNEL_WARMUP:-600}" --steps 100 \
  --scheme vbd --json "$out/vbd_funnel.json" "$@"
run vbd_armadillo_10000 bench --mesh "$mesh" --bodies 10000 --steps 10 --no-contacts \
  --scheme vbd --json "$out/vbd_armadillo_10000.json" "$@"
run funnel_edges bench --scene funnel --mesh "$mesh" --warmup "${FUNNEL_WARMUP:-600}" --steps 100 \
  --edge-contacts --json "$out/funnel_edges.json" "$@"
run bench_cloth bench --scene cloth --steps 100 --json "$out/bench_cloth.json" "$@"
run bench_armadillo_one bench --mesh "$mesh" --bodies 1 --steps 200 --no-contacts \
  --json "$out/bench_armadillo_one.json" "$@"
run bench_box_single bench --box 40,39,40 --bodies 1 --steps 50 --no-contacts \
  --json "$out/bench_box_single.json" "$@"
# The same three profiled: each kernel's device time and launches, and the device busy over
# the step's wall time, which tells a launch-bound step (busy well under 100%) from one bound
# by its kernels (the cloth's profiled run launches each kind apart: 257 launches, not 135).
run bench_cloth_profile bench --scene cloth --steps 50 --profile \
  --json "$out/bench_cloth_profile.json" "$@"
run bench_armadillo_one_profile bench --mesh "$mesh" --bodies 1 --steps 100 --no-contacts \
  --profile --json "$out/bench_armadillo_one_profile.json" "$@"
run bench_box_single_profile bench --box 40,39,40 --bodies 1 --steps 20 --no-contacts --profile \
  --json "$out/bench_box_single_profile.json" "$@"
run bench_scaling bench --mesh "$mesh" --scaling --max-bodies 10000 --steps 20 --no-contacts \
  --json "$out/bench_scaling.json" "$@"
run validate validate --mesh "$mesh" --json "$out/validate.json" "$@"
echo "failures: $(tr '\n' ' ' < "$out/failures.txt")" | tee -a "$out/suite.log"
