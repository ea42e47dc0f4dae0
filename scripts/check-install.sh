#!/bin/sh
# Installs a configured and built Piola into a temporary prefix and uses it from outside, as an
# engine would: builds tests/consumer (a world on the CPU reference, a box, a few steps) with
# CMake (find_package(Piola), Piola::piola) and with pkg-config (piola.pc), runs both, and runs
# the installed `piola` program. For a shared library it also checks that libpiola.so exports
# exactly the PIOLA_API functions of include/piola/*.h.
#   scripts/check-install.sh BUILD_DIR      (after cmake --build BUILD_DIR)
# The CMake-built consumer finds a shared libpiola through its build RPATH; the pkg-config one
# through LD_LIBRARY_PATH; the installed program through its install RPATH ($ORIGIN/../lib).
set -eu
cd "$(dirname "$0")/.."
build=${1:?usage: scripts/check-install.sh BUILD_DIR}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"
pc=$(find "$prefix" -name piola.pc)
libdir=$(dirname "$(dirname "$pc")")
for f in include/piola/piola.h include/piola/piola_base.h include/piola/piola_types.h bin/piola; do
  test -f "$prefix/$f" || { echo "check-install: $f not installed"; exit 1; }
done
for f in PiolaConfig.cmake PiolaConfigVersion.cmake PiolaTargets.cmake; do
  test -f "$libdir/cmake/Piola/$f" || { echo "check-install: cmake/Piola/$f not installed"; exit 1; }
done
shared=no
if [ -e "$libdir/libpiola.so" ]; then
  shared=yes
elif [ ! -e "$libdir/libpiola.a" ]; then
  echo "check-install: no libpiola.a or libpiola.so in $libdir"
  exit 1
fi
echo "check-install: installed into $prefix (shared: $shared):"
(cd "$prefix" && find . -type f -o -type l | sort | sed 's/^/  /')

if [ $shared = yes ]; then
  soname=$(objdump -p "$libdir/libpiola.so" | awk '$1 == "SONAME" {print $2}')
  echo "check-install: SONAME $soname"
  nm -D --defined-only "$libdir/libpiola.so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort \
    > "$tmp/exported"
  grep -ho '^PIOLA_API[^(]*(' include/piola/*.h | sed 's/($//; s/.*[ *]//' | sort > "$tmp/declared"
  if ! cmp -s "$tmp/exported" "$tmp/declared"; then
    echo "check-install: exported symbols (<) differ from the PIOLA_API declarations (>):"
    diff "$tmp/exported" "$tmp/declared" || true
    exit 1
  fi
  echo "check-install: libpiola.so exports the $(wc -l < "$tmp/declared") PIOLA_API functions only"
fi

# CMake: find_package(Piola) through CMAKE_PREFIX_PATH.
cmake -S tests/consumer -B "$tmp/consumer-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_C_FLAGS="-Wall -Wextra -pedantic -Werror" > "$tmp/consumer-cmake.log"
cmake --build "$tmp/consumer-cmake" >> "$tmp/consumer-cmake.log"
"$tmp/consumer-cmake/consumer"

# pkg-config: --static adds Libs.private (OpenCL, libm) for the static library.
flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs --static piola)
echo "check-install: pkg-config --cflags --libs --static piola: $flags"
# shellcheck disable=SC2086 # the flags are words
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror tests/consumer/consumer.c -o "$tmp/consumer-pc" $flags
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/consumer-pc"
if [ $shared = yes ]; then # without --static, Libs is enough for the shared library
  flags=$(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags --libs piola)
  # shellcheck disable=SC2086
  "$cc" -std=c11 tests/consumer/consumer.c -o "$tmp/consumer-pc-dyn" $flags
  LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/consumer-pc-dyn" > /dev/null
fi

# The installed program runs on its own (embedded kernels; RPATH to a shared libpiola).
if [ $shared = yes ]; then
  runpath=$(readelf -d "$prefix/bin/piola" | sed -n 's/.*R[UN]*PATH.*\[\(.*\)\]/\1/p')
  case $runpath in
    '$ORIGIN/'*) echo "check-install: bin/piola RUNPATH $runpath" ;;
    *) echo "check-install: bin/piola RUNPATH '$runpath', not relative to \$ORIGIN"; exit 1 ;;
  esac
fi
"$prefix/bin/piola" devices > "$tmp/devices.log" || { cat "$tmp/devices.log"; exit 1; }
echo "check-install: $prefix/bin/piola devices: ok"
echo "check-install: passed"
