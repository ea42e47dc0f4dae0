#!/bin/sh
# Installs what Piola needs to build and test on Debian/Ubuntu, and nothing else: a C compiler,
# CMake, pkg-config (pkgconf: the install check uses piola.pc), the OpenCL ICD loader and
# headers, PoCL (OpenCL on the CPU, so the OpenCL backend runs and is tested without a GPU), and
# clang with its runtime libraries (libFuzzer and the sanitizers) for CI's second compiler (a
# -Werror build) and the fuzz targets of tests/fuzz. Python with matplotlib is only needed for
# bench/plot.py.
# Packages already present are skipped; apt-get runs only when something is missing.
set -eu
packages="build-essential cmake pkgconf ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
  clang libclang-rt-dev"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing$missing"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
