#!/usr/bin/env bash
# The test suite (README's test command):
#  1. the main build — CUDA for sm_52 when a Maxwell-capable toolkit is
#     installed (GPU tests run on a GPU, else report "skipped"), CPU-only
#     otherwise — and all its tests;
#  2. an AddressSanitizer + UBSan build of the CPU code and its tests;
#  3. parts' extra checks (a short fuzz run of the tokenizer, if present).
# Ends with one line "tests: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
pass=0 fail=0 skip=0
count() { # parse a ctest log
    local p f s
    p=$(grep -cE "Test +#[0-9]+: .* +Passed" "$1"); f=$(grep -cE "\*\*\*(Failed|Exception)|\*\*\*Timeout|Not Run" "$1")
    s=$(grep -cE "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped" "$1")
    pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
}
run_suite() { # name build-dir cmake-args...
    local name=$1 dir=$2; shift 2
    echo "== $name ($dir)"
    if ! cmake -S . -B "$dir" "${M40_GEN[@]}" -DM40_WERROR=ON "$@" > "$dir.configure.log" 2>&1; then
        mkdir -p "$dir"; cat "$dir.configure.log"; fail=$((fail + 1)); return; fi
    if ! cmake --build "$dir" -j"$(nproc)" > "$dir.build.log" 2>&1; then
        tail -40 "$dir.build.log"; fail=$((fail + 1)); return; fi
    ctest --test-dir "$dir" --output-on-failure -j"$(nproc)" 2>&1 | tee "$dir.ctest.log"
    count "$dir.ctest.log"
}
mkdir -p build-test
[ -z "$M40_NVCC" ] && echo "NOTICE: no CUDA toolkit that targets sm_52 (CUDA 11.8-12.9); testing the CPU-only build. scripts/setup.sh installs one."
# M40_TEST_MAIN_DIR: an existing build of the same configuration to reuse
# (CI passes its sm_52 build: configured again with these options it is
# unchanged, so nothing is compiled twice)
run_suite "main build" "${M40_TEST_MAIN_DIR:-build-test/main}" "${M40_CMAKE_CUDA[@]}"
run_suite "ASan+UBSan, CPU" build-test/asan -DM40_CUDA=OFF -DM40_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
for extra in tests/*/extra-check.sh; do
    [ -x "$extra" ] || continue
    echo "== $extra"
    "$extra" > "build-test/$(basename "$(dirname "$extra")").extra.log" 2>&1; rc=$?
    tail -5 "build-test/$(basename "$(dirname "$extra")").extra.log"
    case $rc in
        0) pass=$((pass + 1)) ;;
        77) skip=$((skip + 1)) ;;
        *) echo "FAILED: $extra (rc $rc)"; fail=$((fail + 1)) ;;
    esac
done
echo "tests: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
