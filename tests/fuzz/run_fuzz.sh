#!/usr/bin/env bash
# Builds the tokenizer libFuzzer target with clang and runs it for SECONDS (default 60).
#   tests/fuzz/run_fuzz.sh [SECONDS]
# Needs clang with the libFuzzer runtime. On Debian 12: apt-get install clang-14 libclang-rt-14-dev
# (the script tries that itself when run as root and the runtime is missing).
# Seeds: the fixture models (model mode) and the golden inputs (text mode, byte 0x01 prefix).
set -euo pipefail
SECONDS_TO_RUN="${1:-60}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${M40_FUZZ_DIR:-$ROOT/build-fuzz}"
CC="${CC_FUZZ:-}"
for c in clang-14 clang; do
    if [ -z "$CC" ] && command -v "$c" >/dev/null; then CC="$c"; fi
done
[ -n "$CC" ] || { echo "run_fuzz.sh: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
mkdir -p "$OUT/corpus"
probe() { echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){(void)d;(void)n;return 0;}' \
    | "$CC" -x c -fsanitize=fuzzer - -o "$OUT/probe" 2>/dev/null; }
if ! probe; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y --no-install-recommends libclang-rt-14-dev >/dev/null || { apt-get update >/dev/null && apt-get install -y --no-install-recommends libclang-rt-14-dev >/dev/null; }
    fi
    probe || { echo "run_fuzz.sh: $CC cannot link -fsanitize=fuzzer (install libclang-rt-14-dev)" >&2; exit 1; }
fi
"$CC" -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$ROOT/include" -I"$ROOT/lib" "$ROOT"/lib/tokenizer/*.c "$ROOT/lib/core.c" \
    "$ROOT/tests/fuzz/fuzz_tokenizer.c" -lm -o "$OUT/fuzz_tokenizer"
# Seed corpus: model files (selector 0) and golden texts (selector 1).
FIX="$ROOT/tests/fixtures/tokenizer"
for m in "$FIX"/*.model; do
    { printf '\x00'; cat "$m"; printf '\xff\x00Hello \xe4\xbd\xa0\xe5\xa5\xbd \xff!'; } > "$OUT/corpus/model-$(basename "$m")"
done
python3 - "$FIX" "$OUT/corpus" <<'PY' || true
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
"$OUT/fuzz_tokenizer" "$OUT/corpus" -max_total_time="$SECONDS_TO_RUN" -max_len=65536 -rss_limit_mb=2048 \
    -timeout=20 -print_final_stats=1
