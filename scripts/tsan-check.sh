#!/usr/bin/env bash
# ThreadSanitizer over the code that runs threads (no GPU needed): the host
# communicator, the Threads rule (N contexts from N threads), several
# conversations in one cache, tensor parallelism over CPU ranks (the rank
# threads, also started late), a layer split, and m40-server (HTTP threads,
# the worker, its ranks) through tests/server/test_server.py. A report
# fails the run; the reports are in $OUT/tsan.* (default build-tsan/).
#   scripts/tsan-check.sh [BUILD_DIR]     (~4 minutes of build on 2 cores)
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-tsan}
cmake -S . -B "$B" -G Ninja -DM40_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_FLAGS="-fsanitize=thread -g" -DCMAKE_CXX_FLAGS="-fsanitize=thread -g" \
      -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" > "$B.configure.log" 2>&1 || { cat "$B.configure.log"; exit 1; }
cmake --build "$B" -j"$(nproc)" --target m40-chat m40-server test_glm_parallel test_chatglm2_tp \
      test_threads test_comm > "$B.build.log" 2>&1 || { tail -30 "$B.build.log"; exit 1; }
rm -f "$B"/tsan.*
export TSAN_OPTIONS="halt_on_error=0 log_path=$PWD/$B/tsan"
fail=0
run() { echo "== $*"; timeout 900 "$@" > "$B/last.log" 2>&1 || { fail=1; tail -20 "$B/last.log"; }; tail -1 "$B/last.log"; }
run "$B/test_comm"
run "$B/test_threads"
run "$B/test_glm_parallel"
run "$B/test_chatglm2_tp"
ids=64,17,250,3,99,42,7,128,5,211,33
run "$B/m40-chat" --cpu --model tests/fixtures/chatglm2/tiny.safetensors --ids $ids --max-new-tokens 12 \
    --greedy --print-ids --chunk 4 --devices 0,1,2,3 --split tensor
GLM_TEST_RANK_START_MS=300 run "$B/m40-chat" --cpu --model tests/fixtures/chatglm2/tiny.safetensors \
    --ids $ids --max-new-tokens 12 --greedy --print-ids --devices 0,1,2,3 --split tensor
run "$B/m40-chat" --cpu --model tests/fixtures/chatglm2/tiny.safetensors --ids $ids --max-new-tokens 12 \
    --greedy --print-ids --devices 0,1 --split layer
py=python3
[ -x build/server-venv/bin/python ] && py=build/server-venv/bin/python
run "$py" tests/server/test_server.py --server "$B/m40-server" --work "$B/server_test" --quick
run "$py" tests/server/test_server.py --server "$B/m40-server" --work "$B/server_test" --random-weights --split tensor
if ls "$B"/tsan.* > /dev/null 2>&1; then
    fail=1
    echo "ThreadSanitizer reports:"; grep -h -A12 "WARNING: ThreadSanitizer" "$B"/tsan.* | head -80
else
    echo "no ThreadSanitizer reports"
fi
exit $fail
