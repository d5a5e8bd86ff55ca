#!/usr/bin/env bash
# scripts/test.sh runs this: a short libFuzzer run of the tokenizer (30 s,
# M40_FUZZ_SECONDS to change). Exits 77 (skipped) when clang's libFuzzer is
# not installed, except under CI, where it must run.
cd "$(dirname "$0")/../.."
if ! command -v clang-14 >/dev/null && ! command -v clang >/dev/null && [ "${CI:-}" != true ]; then
    echo "skipped: no clang (apt-get install clang-14 libclang-rt-14-dev)"; exit 77
fi
M40_FUZZ_DIR=build-test/fuzz exec tests/fuzz/run_fuzz.sh "${M40_FUZZ_SECONDS:-30}"
