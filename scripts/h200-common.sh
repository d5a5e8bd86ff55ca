# The set-up every one-call device script (scripts/h200-*.sh) shares.
# Sourced after `cd "$(dirname "$0")/.."`, with the script's arguments:
#   . scripts/h200-common.sh NAME DEFAULT_BUDGET "$@"
# gives B (the build dir: the script's first argument, or build-gpu), O
# ($OUT, or /tmp/NAME; created), BUDGET (seconds: $BUDGET, or the default),
# left (seconds of the budget left), stamp (a heading with the seconds
# since the start) and gpu_tests ("prog args" lines run from $B, each with
# a log in $O and one line: its exit status, seconds and last "checks" line;
# a failure's FAIL lines follow; TEST_TIMEOUT seconds each, default 150),
# SUM ($O/summary.txt) with note (a line with the seconds, into it), and
# setup_arch90: jansson and libmicrohttpd from .debs/ where the image lacks
# them (carry .debs), the GPU's name and clocks into SUM, and the arch-90
# -Werror configure of B (log in $O/configure.log); build_arch90 TARGET...:
# setup_arch90, then those targets (log in $O/build.log) and a "built" note;
# glm_run (below): one m40-bench chatglm2 decode run with A/B knobs set.
H200_NAME=$1
H200_BUDGET=$2
shift 2
T0=$SECONDS
B=${1:-build-gpu}
O=${OUT:-/tmp/$H200_NAME}
mkdir -p "$O"
BUDGET=${BUDGET:-$H200_BUDGET}
left() { echo $((T0 + BUDGET - SECONDS)); }
stamp() { echo "==== [$((SECONDS - T0)) s] $*"; }
gpu_tests() {
    local t s rc
    for t in "$@"; do
        set -- $t
        s=$SECONDS
        timeout "${TEST_TIMEOUT:-150}" "$B/$1" "${@:2}" > "$O/$1.log" 2>&1
        rc=$?
        echo "$t rc=$rc ($((SECONDS - s)) s): $(grep -E 'checks' "$O/$1.log" | tail -1)"
        [ $rc = 0 ] || grep -E "FAIL|CHECK failed" "$O/$1.log" | head -10
    done
}
# jit52_tests "prog args"...: the CUDA 11.8 sm_52 build's tests carried in
# .carry/jit52.tar.xz (.jit52/; or already unpacked from the script's own
# carry), run through the driver's PTX JIT (quick
# modes: M40_ATTN_QUICK as set, else 1; JIT_TIMEOUT seconds each, default
# 150), a note line each (missing programs skipped)
jit52_tests() {
    local t s
    [ -d .jit52 ] || tar xJf .carry/jit52.tar.xz || return 1
    for t in "$@"; do
        set -- $t
        [ -x .jit52/$1 ] || continue
        s=$SECONDS
        M40_QUANT_QUICK=1 M40_ATTN_QUICK=${M40_ATTN_QUICK:-1} CUDA_MODULE_LOADING=LAZY timeout "${JIT_TIMEOUT:-150}" .jit52/$t > "$O/jit52-$1.log" 2>&1
        note "jit52 $t rc=$? ($((SECONDS - s)) s) $(grep -E 'checks' "$O/jit52-$1.log" | tail -1)"
        grep -E "FAIL|differ" "$O/jit52-$1.log" | head -5 >> "$SUM"
    done
}
SUM=$O/summary.txt
note() { echo "[$((SECONDS - T0)) s] $*" | tee -a "$SUM"; }
# gpu_start: TF32 off, the GPU's name, driver, clocks, temperature and power
# into SUM (setup_arch90's and carry_start's first step)
gpu_start() {
    export NVIDIA_TF32_OVERRIDE=0
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw \
        --format=csv,noheader >> "$SUM"
}
# carry_start TARBALL (the one-call timing scripts that carry their programs,
# sessions 22-27): gpu_start, then TARBALL unpacked (without it: a note,
# exit 1); carry_end: the clocks, temperature and power at the end into SUM,
# the JSON files dropped (each run's .txt keeps its numbers), the summary printed
carry_start() {
    gpu_start
    tar xJf "$1" || { note "no $1"; exit 1; }
}
carry_end() {
    nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw --format=csv,noheader >> "$SUM"
    rm -f "$O"/*.json
    bundle_out
    echo "=== SUMMARY"; cat "$SUM"
}
# bundle_out: every file in $O but SUM into $O/logs.tar.gz (the device tool
# returns at most 8 files a call, and session 30 lost its summary.txt to
# that count); unpack it (tar xzf logs.tar.gz) before committing the files
bundle_out() {
    local f=()
    mapfile -t f < <(cd "$O" && find . -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name logs.tar.gz -printf '%P\n')
    [ ${#f[@]} -gt 0 ] || return 0
    tar czf "$O/logs.tar.gz" -C "$O" "${f[@]}" && (cd "$O" && rm -rf "${f[@]}")
}
setup_arch90() {
    local lib f gen=()
    export PYTHONUNBUFFERED=1
    gpu_start
    for lib in jansson microhttpd; do
        if ! pkg-config --exists lib$lib 2>/dev/null && ! pkg-config --exists $lib 2>/dev/null &&
            ls .debs/lib$lib*.deb >/dev/null 2>&1; then
            for f in .debs/lib$lib*.deb; do dpkg -x "$f" /; done
            ldconfig
        fi
    done
    command -v ninja >/dev/null && gen=(-G Ninja)
    cmake -S . -B "$B" "${gen[@]}" -DCMAKE_CUDA_COMPILER="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}" \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DM40_CUDA=ON -DM40_WERROR=ON -DCMAKE_BUILD_TYPE=Release \
        > "$O/configure.log" 2>&1
}
build_arch90() {
    setup_arch90
    cmake --build "$B" -j"$(nproc)" --target "$@" > "$O/build.log" 2>&1
    note "built rc=$? $(grep -cE ' error' "$O/build.log") errors"
}
# glm_run LABEL "ENV=V ..." FORMATS SIZES: m40-bench chatglm2 decode (no
# prefill, no read chain) with those environment knobs, its files in $O,
# one note line with the tok/s (the one-call A/B scripts, session 10)
glm_run() {
    env $2 M40_BENCH_GLM_FORMATS=$3 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout "${GLM_TIMEOUT:-120}" "$B/m40-bench" chatglm2 --warmup 1 --repeats 7 --sizes $4 \
        --json="$O/m40-chatglm2-$1.json" > "$O/m40-chatglm2-$1.txt" 2>&1
    note "chatglm2 $1 rc=$? $(toks "$O/m40-chatglm2-$1.txt")"
}
# glm_prefill_run LABEL "ENV=V ...": m40-bench chatglm2 int4 prefill 128 / 512 / 2048
# (no chain), one note line with the three tok/s (session 20's A/Bs)
glm_prefill_run() {
    env $2 M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_PREFILL=128,512,2048 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout 150 "$B/m40-bench" chatglm2 --warmup 1 --repeats 5 --sizes 128 > "$O/glm-$1.txt" 2>&1
    note "chatglm2 $1 rc=$? 128/512/2048: $(grep -E '^ +[0-9]+ tokens/s$' "$O/glm-$1.txt" | sed -E 's/ +tokens.s//; s/^ +//' | tr '\n' ' ')"
}
# floor_on_h200 DIR: on an H200 only, the floor chain (m40-bench chatglm2
# with M40_BENCH_GLM_FLOOR=1, every format, ctx 128) from DIR/m40-bench, its
# chain lines into SUM (session 33's owed item, sessions 36-)
floor_on_h200() {
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || return 0
    [ -x "$1/m40-bench" ] || { note "floor: no $1/m40-bench"; return 0; }
    env M40_BENCH_GLM_FLOOR=1 M40_BENCH_GLM_PREFILL=0 timeout 90 "$1/m40-bench" chatglm2 --warmup 1 \
        --repeats 5 --sizes 128 > "$O/floor.txt" 2>&1
    note "floor rc=$?"
    grep -E 'tokens/s|chain' "$O/floor.txt" | sed -E 's/ +/ /g' >> "$SUM"
}
# floor_first: on an H200 with .carry/s34.tar.xz carried too, the floor
# chain of its .s33/m40-bench first (the item sessions 33- owe an H200)
floor_first() {
    [ -f .carry/s34.tar.xz ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 &&
        tar xJf .carry/s34.tar.xz && floor_on_h200 .s33
}
# toks FILE: the tok/s of an m40-bench chatglm2 report on one line (its
# "N tokens/s" lines, less the medians and M40 projections)
toks() {
    grep -E 'tokens/s' "$1" | sed -E 's/ +/ /g; s/M40 projection.*//; s/ \(median.*//' | tr '\n' ' '
}
# glm_ab LABEL DIR FORMATS SIZES TIMEOUT: one m40-bench chatglm2 decode run
# (no prefill, no chain) of DIR's m40-bench, one note line with the tok/s
# (the old / new A/Bs of sessions 36-)
glm_ab() {
    env M40_BENCH_GLM_FORMATS=$3 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_NO_CHAIN=1 \
        timeout "$5" "$2/m40-bench" chatglm2 --warmup 1 --repeats 7 --sizes "$4" > "$O/glm-$1.txt" 2>&1
    note "$1 rc=$? $(toks "$O/glm-$1.txt")"
}
# ncu_step LABEL DIR [TIMEOUT]: ncu over one profiled int4 decode step of DIR's
# m40-bench at ctx 128 (--profile-from-start off with M40_BENCH_GLM_PROFILE=1,
# or the random fill takes the count): time, warp instructions and DRAM
# bytes of every kernel, into $O/ncu-step-LABEL.csv.xz, and a note
ncu_step() {
    env M40_BENCH_GLM_FORMATS=int4 M40_BENCH_GLM_NO_CHAIN=1 M40_BENCH_GLM_PREFILL=0 M40_BENCH_GLM_PROFILE=1 timeout "${3:-75}" \
        ncu --profile-from-start off --graph-profiling node --launch-count 200 --csv --metrics \
        gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum "$2/m40-bench" chatglm2 --warmup 1 \
        --repeats 2 --sizes 128 2> "$O/ncu-step-$1.err" | xz > "$O/ncu-step-$1.csv.xz"
    note "ncu step $1 rc=$?"
}
