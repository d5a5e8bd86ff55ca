#!/usr/bin/env bash
# Installs a build into a scratch prefix and builds programs against it the
# two ways users do: CMake's find_package(m40) and pkg-config.
#   scripts/install-check.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=$1
PREFIX=$(mktemp -d)
trap 'rm -rf "$PREFIX"' EXIT
cmake --install "$BUILD" --prefix "$PREFIX" > /dev/null
source scripts/env.sh
cmake -S tests/consumer -B "$PREFIX/consumer" -DCMAKE_PREFIX_PATH="$PREFIX" > /dev/null
cmake --build "$PREFIX/consumer" > /dev/null
LD_LIBRARY_PATH="$PREFIX/lib:${LD_LIBRARY_PATH:-}" "$PREFIX/consumer/consumer_c"
"$PREFIX/consumer/consumer_static"
LD_LIBRARY_PATH="$PREFIX/lib:${LD_LIBRARY_PATH:-}" "$PREFIX/consumer/consumer_cxx"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
cc tests/consumer/main.c $(pkg-config --cflags --libs m40) -o "$PREFIX/pc_consumer"
LD_LIBRARY_PATH="$PREFIX/lib" "$PREFIX/pc_consumer"
cc tests/consumer/main.c $(pkg-config --cflags m40) "$PREFIX/lib/libm40.a" $(pkg-config --libs-only-other --libs-only-L --static m40 | sed 's/-lm40//') $(pkg-config --static --libs-only-l m40 | sed 's/-lm40//') -o "$PREFIX/pc_static"
"$PREFIX/pc_static"
echo "install-check: find_package (shared, static, C++) and pkg-config (shared, static) ok"
