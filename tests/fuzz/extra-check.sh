#!/usr/bin/env bash
# scripts/test.sh runs this: a short libFuzzer run of every fuzz target
# (tokenizer, safetensors, image, json, graph, chatglm2, chatglm2_dir,
# server_request: tests/fuzz/run_fuzz.sh), M40_FUZZ_SECONDS each (default
# 15), two at a time, fixed seeds; about 1.75 minutes on 2 cores with the
# build (the two ChatGLM2 targets add one 15 s round and the example's
# build; server_request takes the free place in the last round, adding its
# build and its tokenizer, a few seconds). Exits 77
# (skipped) when clang's libFuzzer is not installed, except under CI, where
# it must run.
cd "$(dirname "$0")/../.."
if ! command -v clang-14 >/dev/null && ! command -v clang >/dev/null && [ "${CI:-}" != true ]; then
    echo "skipped: no clang (apt-get install clang-14 libclang-rt-14-dev)"; exit 77
fi
# The graph target fuzzes every value (M40_FUZZ_GRAPH_WRAP=1): the findings it
# made (tests/fuzz/findings/<target>/, replayed first on every run) are fixed.
export M40_FUZZ_GRAPH_WRAP="${M40_FUZZ_GRAPH_WRAP:-1}"
M40_FUZZ_DIR=build-test/fuzz exec tests/fuzz/run_fuzz.sh "${M40_FUZZ_SECONDS:-15}"
