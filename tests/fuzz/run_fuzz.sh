#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan, coverage on the whole
# library) and runs each for SECONDS from its committed seed corpus.
#   tests/fuzz/run_fuzz.sh [SECONDS] [TARGET...]
# SECONDS per target (default 60). Targets (default all):
#   tokenizer    SentencePiece model + text            lib/tokenizer/
#   safetensors  a whole .safetensors file             lib/io/safetensors.c
#   image        PNG / JPEG / PPM / PGM bytes          examples/resnet50/image.c
#   json         JSON text through the cursor          lib/io/json.c
#   graph        a program of tensors, nodes, budget   lib/graph/ (planner)
#   chatglm2     control bytes + .safetensors shards   lib/models/chatglm2.c (+ one prefill)
#   chatglm2_dir config.json + index + shards          examples/chatglm2/chatglm2.c (jansson)
#   server_request  a chat request's body              examples/server/request.c, prompt.c (jansson)
# Targets run M40_FUZZ_JOBS at a time (default: the core count, at most 2),
# with fixed seeds (-seed=1). Prints "fuzz TARGET: N executions ..." per
# target; exits 1 if any target finds a crash, leak, UB or timeout (the input
# is kept as $OUT/artifacts/TARGET-*; replay: $OUT/fuzz_TARGET FILE).
# Needs clang with the libFuzzer runtime. On Debian 12: apt-get install clang-14 libclang-rt-14-dev
# (the script tries that itself when run as root and the runtime is missing).
# Seeds: tests/fuzz/corpus/<target>/ (make_corpus.sh writes them) and, for the
# tokenizer, the fixture models and golden texts.
set -euo pipefail
SECONDS_TO_RUN="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(tokenizer safetensors image json graph chatglm2 chatglm2_dir server_request)
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${M40_FUZZ_DIR:-$ROOT/build-fuzz}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
JOBS="${M40_FUZZ_JOBS:-$(nproc)}"
[ "$JOBS" -le 2 ] || JOBS=2
CC="${CC_FUZZ:-}"
for c in clang-14 clang; do
    if [ -z "$CC" ] && command -v "$c" >/dev/null; then CC="$c"; fi
done
[ -n "$CC" ] || { echo "run_fuzz.sh: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
probe() { echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){(void)d;(void)n;return 0;}' \
    | "$CC" -x c -fsanitize=fuzzer - -o "$OUT/probe" 2>/dev/null; }
if ! probe; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y --no-install-recommends libclang-rt-14-dev >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends libclang-rt-14-dev >/dev/null; }
    fi
    probe || { echo "run_fuzz.sh: $CC cannot link -fsanitize=fuzzer (install libclang-rt-14-dev)" >&2; exit 1; }
fi

# The library, instrumented: a CPU-only CMake build with clang. The image
# loader's pixel cap is lowered so a decodable 16K x 16K PNG does not slow
# every execution (the same check, a smaller number).
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
t0=$(date +%s)
cmake -S "$ROOT" -B "$OUT/lib" "${GEN[@]}" -DCMAKE_C_COMPILER="$CC" -DM40_CUDA=OFF -DM40_SANITIZE=ON \
    -DM40_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link -DRN_IMAGE_MAX_PIXELS=4194304u" > "$OUT/lib.configure.log" 2>&1 \
    || { cat "$OUT/lib.configure.log"; exit 1; }
LIBS=(m40_static m40_tokenizer)
HAVE_IMAGE=0
if cmake --build "$OUT/lib" --target help 2>/dev/null | grep -q m40_resnet_example; then
    LIBS+=(m40_resnet_example); HAVE_IMAGE=1
fi
# the chat example (config.json and the shard index through jansson): CMake
# declares it only when pkg-config finds jansson
HAVE_GLM=0
if cmake --build "$OUT/lib" --target help 2>/dev/null | grep -q m40_chatglm2_example; then
    LIBS+=(m40_chatglm2_example); HAVE_GLM=1
fi
cmake --build "$OUT/lib" -j"$(nproc)" --target "${LIBS[@]}" > "$OUT/lib.build.log" 2>&1 \
    || { tail -40 "$OUT/lib.build.log"; exit 1; }

FLAGS=(-std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I"$ROOT/include" -I"$ROOT/lib")
L="$OUT/lib"
link() { # target sources/libs...
    local t=$1; shift
    "$CC" "${FLAGS[@]}" "$ROOT/tests/fuzz/fuzz_$t.c" "$@" -o "$OUT/fuzz_$t"
}
for t in "${TARGETS[@]}"; do
    case $t in
        tokenizer) link tokenizer "$L/libm40_tokenizer.a" -lm ;;
        safetensors | json | graph | chatglm2) link "$t" "$L/libm40.a" -lz -lm -ldl -lpthread ;;
        chatglm2_dir)
            if [ "$HAVE_GLM" = 1 ]; then
                link chatglm2_dir -I"$ROOT/examples/chatglm2" "$L/libm40_chatglm2_example.a" \
                    "$L/libm40.a" $(pkg-config --libs jansson) -lz -lm -ldl -lpthread
            else
                echo "fuzz chatglm2_dir: skipped (jansson development files not found)"
            fi ;;
        server_request) # m40-server's sources but main.c and http.c (no libmicrohttpd):
            # request.c, prompt.c, worker.c (jobs) and whatever else the server grows
            if [ "$HAVE_GLM" = 1 ]; then
                S="$ROOT/examples/server"
                SRC=()
                for f in "$S"/*.c; do
                    case ${f##*/} in main.c | http.c) ;; *) SRC+=("$f") ;; esac
                done
                link server_request -I"$S" -I"$ROOT/examples/chatglm2" "${SRC[@]}" \
                    "$ROOT/examples/chatglm2/stream.c" "$L/libm40_chatglm2_example.a" \
                    "$L/libm40.a" $(pkg-config --libs jansson) -lz -lm -ldl -lpthread
            else
                echo "fuzz server_request: skipped (jansson development files not found)"
            fi ;;
        image)
            if [ "$HAVE_IMAGE" = 1 ]; then
                link image -I"$ROOT/examples/resnet50" "$L/libm40_resnet_example.a" "$L/libm40.a" \
                    -lpng -ljpeg -lz -lm -ldl -lpthread
            else
                echo "fuzz image: skipped (libpng/libjpeg development files not found)"
            fi ;;
        *) echo "run_fuzz.sh: unknown target '$t'" >&2; exit 2 ;;
    esac
done
echo "fuzz: built in $(( $(date +%s) - t0 )) s with $CC"

# The tokenizer's extra seeds: the fixture models (selector 0) and golden texts (selector 1).
FIX="$ROOT/tests/fixtures/tokenizer"
mkdir -p "$OUT/seeds-tokenizer"
for m in "$FIX"/*.model; do
    { printf '\x00'; cat "$m"; printf '\xff\x00Hello \xe4\xbd\xa0\xe5\xa5\xbd \xff!'; } > "$OUT/seeds-tokenizer/model-$(basename "$m")"
done
python3 - "$FIX" "$OUT/seeds-tokenizer" <<'PY' || true
import sys, os
fix, out = sys.argv[1], sys.argv[2]
n = 0
for line in open(os.path.join(fix, "bpe_bf.golden")):
    p = line.split()
    if len(p) == 3 and p[0] == "E" and p[1] != "-" and n < 300:
        open(os.path.join(out, "text-%03d" % n), "wb").write(b"\x01" + bytes.fromhex(p[1]))
        n += 1
PY
export M40_FUZZ_MODEL="$FIX/bpe_bf.model"
# server_request: a tokenizer with ChatGLM2's layout (64,789 pieces, ~0.9 MB)
if [ -x "$OUT/fuzz_server_request" ]; then
    python3 - "$ROOT/tests/chatglm2" "$OUT/glm-tokenizer.model" <<'PY'
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[1])
import make_chat_model
open(sys.argv[2], "wb").write(make_chat_model.tokenizer_bytes())
PY
fi
export M40_FUZZ_GLM_TOKENIZER="$OUT/glm-tokenizer.model"

run_one() { # target
    local t=$1 maxlen=4096 extra=() flags=()
    case $t in
        tokenizer) maxlen=65536; extra=("$OUT/seeds-tokenizer") ;;
        image) maxlen=16384 ;;
        graph) maxlen=512 ;;
        chatglm2 | chatglm2_dir) maxlen=32768; flags=(-dict="$ROOT/tests/fuzz/chatglm2.dict") ;;
        server_request) maxlen=16384; flags=(-dict="$ROOT/tests/fuzz/server_request.dict") ;;
    esac
    # the findings fixed so far are replayed first on every run
    [ -d "$ROOT/tests/fuzz/findings/$t" ] && extra+=("$ROOT/tests/fuzz/findings/$t")
    mkdir -p "$OUT/corpus/$t" "$OUT/artifacts"
    local rc=0
    # new inputs go to the first (build) directory; the committed seeds stay as they are
    "$OUT/fuzz_$t" "$OUT/corpus/$t" "$ROOT/tests/fuzz/corpus/$t" "${extra[@]}" "${flags[@]}" -seed=1 \
        -max_total_time="$SECONDS_TO_RUN" -max_len="$maxlen" -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$OUT/artifacts/$t-" -print_final_stats=1 > "$OUT/$t.log" 2>&1 || rc=$?
    echo "$rc" > "$OUT/$t.rc"
}
running=0
for t in "${TARGETS[@]}"; do
    [ -x "$OUT/fuzz_$t" ] || continue
    rm -f "$OUT/$t.rc"
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); fi
done
wait || true
failed=0
for t in "${TARGETS[@]}"; do
    [ -x "$OUT/fuzz_$t" ] || continue
    rc=$(cat "$OUT/$t.rc" 2>/dev/null || echo 1)
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$OUT/$t.log" | grep -o '[0-9]*$' | tail -1 || true)
    cov=$(grep -oE 'cov: [0-9]+' "$OUT/$t.log" | tail -1 | grep -o '[0-9]*' || true)
    if [ "$rc" = 0 ]; then
        echo "fuzz $t: ${execs:-?} executions in ${SECONDS_TO_RUN} s, coverage ${cov:-?}, corpus $(ls "$OUT/corpus/$t" | wc -l) new inputs"
    else
        failed=1
        echo "fuzz $t: FAILED (rc $rc) after ${execs:-?} executions; log $OUT/$t.log"
        grep -E "ERROR|SUMMARY|runtime error|Test unit written|deadly signal" "$OUT/$t.log" | head -12
    fi
done
exit "$failed"
