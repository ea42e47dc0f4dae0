#!/bin/sh
# The Python package's tests, as CI runs them: a clean virtual environment, the package installed
# the way docs/python.md says (pip install . at the repository root: scikit-build-core builds
# libpiola and the cffi module with CMake), then pytest over tests/python. pytest's exit code 5
# (no tests collected) is a failure. OpenCL tests run on any OpenCL device (PoCL on CI) and are
# skipped without one unless PIOLA_REQUIRE_OPENCL=1.
#
#   scripts/test-python.sh [VENV_DIR]        (default: a temporary directory, removed after)
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
python=${PYTHON:-python3}
if [ $# -ge 1 ]; then
  venv=$1
  rm -rf "$venv"
else
  venv=$(mktemp -d "${TMPDIR:-/tmp}/piola-venv.XXXXXX")
  trap 'rm -rf "$venv"' EXIT
fi
start=$(date +%s)
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet . pytest
# Run from outside the source tree, so that `import piola` is the installed package.
status=0
(cd "$venv" && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$root/tests/python") ||
  status=$?
if [ "$status" -eq 5 ]; then
  echo "test-python.sh: pytest collected no tests" >&2
  exit 1
fi
echo "test-python.sh: pytest exit status $status, $(($(date +%s) - start)) s in all"
exit "$status"
