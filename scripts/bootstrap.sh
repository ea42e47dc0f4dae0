#!/bin/sh
# One command from a fresh Debian 12 machine: installs what is missing, builds, and runs the
# main job, `piola bench` (100 procedural bodies, on the best OpenCL device, else the CPU
# reference). Extra arguments go to piola bench, e.g. scripts/bootstrap.sh --backend cpu
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"
./build/piola devices
./build/piola bench "$@"
