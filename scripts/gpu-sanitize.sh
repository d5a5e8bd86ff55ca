#!/usr/bin/env bash
# compute-sanitizer over every GPU test (issue 15), in one command that fits
# a 10-minute device call with the build: builds for the GPU's architecture,
# lists the `gpu`-labelled tests from CTest (their exact command lines), and
# runs each one under memcheck (with device leak check), racecheck,
# initcheck and synccheck, several at a time, in their quick modes. Prints a
# table test x tool -> findings and the total; exits 1 if any cell has a
# finding, a failed test or did not run.
#   scripts/gpu-sanitize.sh [ARCH] [BUILD_DIR]      (ARCH default 90)
# Environment:
#   TOOLS="memcheck racecheck initcheck synccheck"  the tools, in this order
#   BUDGET=560   seconds from the start for everything (build included);
#                a run that would end past it is cut ("T/O") or not started
#   RUN_LIMIT=240  seconds at most per run;  JOBS=6  runs at a time
#   ONLY=regex   only the tests whose name matches
#   NO_BUILD=1   use BUILD_DIR as it is (a second call with other TOOLS)
# Cells: N = findings (memcheck/initcheck/synccheck: the ERROR SUMMARY;
# racecheck: hazards reported as errors, "+Nw" warnings beside); "rc=K" after
# it when the test itself failed; "T/O" cut by the time limit; "-" not run
# (out of budget); "skip" the test exited 77.
# Quick modes: M40_CONV_ENGINE_QUICK=1 (2 of 7 epilogues, graphs NHWC only),
# M40_ATTN_QUICK=1 (attention cases up to 2^22 row-key pairs; 2 under
# racecheck: 2^17, a shorter decode == prefill),
# M40_SAMPLE_QUICK=1 (one call per distribution, statistics not judged),
# M40_QUANT_QUICK=1 (odd shapes only; 2 under racecheck: the
# four smallest), M40_SGEMM_QUICK=1 (M, N
# up to 300), M40_FAULT_STRIDE=23
# (every 23rd fault site). API errors the tests provoke on purpose (device
# OOM, a bad ordinal, the fault-injection test's refusals) are not findings:
# --report-api-errors no. test_gpu_errors' trap kernel kills its CUDA
# context on purpose; a finding there is read in its log before counting it.
# Logs: $OUT (or BUILD_DIR)/sanitize/<test>.<tool>.log
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
T0=$SECONDS
ARCH=${1:-${ARCH:-90}}
BUILD=${2:-build-san$ARCH}
TOOLS=${TOOLS:-memcheck racecheck initcheck synccheck}
BUDGET=${BUDGET:-560}
RUN_LIMIT=${RUN_LIMIT:-240}
JOBS=${JOBS:-6}
ONLY=${ONLY:-.}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
SAN=${SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
LOGDIR=${OUT:-$BUILD}/sanitize
mkdir -p "$BUILD" "$LOGDIR"
rm -f "$LOGDIR"/*.log "$LOGDIR"/*.cell
stamp() { echo "==== [$((SECONDS - T0)) s] $*"; }

[ -x "$SAN" ] || { echo "gpu-sanitize: compute-sanitizer not found (set SANITIZER=)"; exit 1; }
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
stamp "configure + build (arch $ARCH, $NVCC)"
if [ "${NO_BUILD:-0}" = 1 ]; then
    echo "NO_BUILD=1: using $BUILD as it is"
elif ! cmake -S . -B "$BUILD" "${gen[@]}" -DCMAKE_CUDA_COMPILER="$NVCC" \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" -DM40_CUDA=ON -DCMAKE_BUILD_TYPE=Release \
        > "$LOGDIR/build.log" 2>&1; then
    tail -30 "$LOGDIR/build.log"; echo "gpu-sanitize: configure failed"; exit 1
elif ! { keep=(-k); [ -f "$BUILD/build.ninja" ] && keep=(-k 0)
           cmake --build "$BUILD" -j"$(nproc)" -- "${keep[@]}" >> "$LOGDIR/build.log" 2>&1; }; then
    # keep going: a program that does not build (say a bench) must not hide
    # the others; a gpu test whose program is missing shows as a failed cell
    grep -E "FAILED|error:" "$LOGDIR/build.log" | head -10
    echo "gpu-sanitize: NOTICE: the build had errors (above); sanitizing what was built"
fi
stamp "built"

# name <TAB> working dir <TAB> command (shell-quoted), one line per gpu test
mapfile -t TESTS < <(ctest --test-dir "$BUILD" -L gpu --show-only=json-v1 | ONLY=$ONLY python3 -c '
import json, os, re, shlex, sys
for t in json.load(sys.stdin)["tests"]:
    if not re.search(os.environ["ONLY"], t["name"]): continue
    wd = "."
    for p in t.get("properties", []):
        if p["name"] == "WORKING_DIRECTORY": wd = p["value"]
    print("\t".join([t["name"], wd, " ".join(shlex.quote(c) for c in t["command"])]))
')
[ ${#TESTS[@]} -gt 0 ] || { echo "gpu-sanitize: no gpu tests listed"; exit 1; }
stamp "${#TESTS[@]} gpu tests x tools: $TOOLS ($JOBS at a time, budget ${BUDGET}s)"

# M40_FAULT_NO_DEVMEM: the tool's own allocations move cudaMemGetInfo, so the
# fault test leaves device leaks to memcheck's leak check here.
export M40_QUANT_QUICK=1 M40_SGEMM_QUICK=1 M40_FAULT_STRIDE=${M40_FAULT_STRIDE:-23} M40_FAULT_NO_DEVMEM=1 \
       M40_CONV_ENGINE_QUICK=1 M40_ATTN_QUICK=1 M40_SAMPLE_QUICK=1

tool_opts() { # tool test
    case $1 in
    # test_gpu_errors kills its CUDA context with a trap on purpose: after
    # that no cudaFree can succeed, so its allocations are left by design
    memcheck) [ "$2" = test_gpu_errors ] && echo "--tool memcheck" ||
              echo "--tool memcheck --leak-check full" ;;
    racecheck) echo "--tool racecheck --racecheck-report hazard" ;;
    *) echo "--tool $1" ;;
    esac
}

# one run: writes the cell to $LOGDIR/<name>.<tool>.cell
run_one() { # name wd cmd tool
    local name=$1 wd=$2 cmd=$3 tool=$4
    local log="$LOGDIR/$name.$tool.log" cell="$LOGDIR/$name.$tool.cell"
    local left=$((T0 + BUDGET - SECONDS - 5))
    [ "$left" -gt "$RUN_LIMIT" ] && left=$RUN_LIMIT
    if [ "$left" -lt 10 ]; then echo "-" > "$cell"; return; fi
    # shellcheck disable=SC2046
    local env=()
    # racecheck instruments every shared-memory access: the smallest cases,
    # and every 97th fault site of the fault test
    [ "$tool" = racecheck ] && env=(M40_QUANT_QUICK=2 M40_FAULT_STRIDE=97 M40_ATTN_QUICK=2 M40_SAMPLE_QUICK=2)
    [ "$name" = test_gpu_fault ] && env+=(M40_FAULT_STRIDE=97)
    (cd "$wd" && eval "${env[*]} timeout -k 5 $left \"$SAN\" $(tool_opts "$tool" "$name") --report-api-errors no \
        --error-exitcode 99 --print-limit 50 $cmd") > "$log" 2>&1
    local rc=$? n w
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then echo "T/O" > "$cell"; return; fi
    if [ "$tool" = racecheck ]; then
        n=$(sed -n 's/.*RACECHECK SUMMARY: .*(\([0-9]*\) error.*/\1/p' "$log" | tail -1)
        w=$(sed -n 's/.*RACECHECK SUMMARY: .*, \([0-9]*\) warning.*/\1/p' "$log" | tail -1)
    else
        n=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$log" | tail -1)
        w=0
    fi
    [ -z "$n" ] && n="?"
    local c=$n
    [ -n "$w" ] && [ "$w" != 0 ] && c="$c+${w}w"
    if [ $rc -eq 77 ]; then c="skip"
    elif [ $rc -ne 0 ] && [ $rc -ne 99 ]; then c="$c rc=$rc"
    elif [ $rc -eq 99 ] && [ "$n" = 0 ]; then c="? rc=99"; fi
    echo "$c" > "$cell"
}

# memcheck for every test first (the most important), then the next tool
running=0
for tool in $TOOLS; do
    for line in "${TESTS[@]}"; do
        IFS=$'\t' read -r name wd cmd <<<"$line"
        run_one "$name" "$wd" "$cmd" "$tool" &
        running=$((running + 1))
        if [ $running -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
    done
done
wait
stamp "runs done"

# the table
total=0; bad=0
printf '%-28s' "test"; for tool in $TOOLS; do printf ' %-12s' "$tool"; done; echo
for line in "${TESTS[@]}"; do
    IFS=$'\t' read -r name _ _ <<<"$line"
    printf '%-28s' "$name"
    for tool in $TOOLS; do
        c=$(cat "$LOGDIR/$name.$tool.cell" 2>/dev/null || echo "-")
        printf ' %-12s' "$c"
        n=${c%% *}; n=${n%%+*}
        if [[ $n =~ ^[0-9]+$ ]]; then total=$((total + n)); [ "$n" -gt 0 ] && bad=1
        else bad=1; fi
        [[ $c == *rc=* ]] && bad=1
    done
    echo
done
echo "total findings: $total (cells not clean: see $LOGDIR/<test>.<tool>.log)"
for f in "$LOGDIR"/*.log; do
    case $f in */build.log) continue ;; esac
    grep -m3 -E "^========= (Invalid|Uninitialized|Race|Barrier|Error|Leaked|ERROR)" "$f" \
        | sed "s|^|$(basename "$f" .log): |"
done | grep -v "ERROR SUMMARY: 0" | head -40
# a cell with no count ("?", "rc=...") names no finding above: its log's tail says why
for f in "$LOGDIR"/*.cell; do
    grep -qE '\?|rc=' "$f" || continue
    l=${f%.cell}.log
    echo "--- $(basename "$l"): $(cat "$f")"; grep -vE "^\s*$" "$l" | tail -8 | cut -c1-200
done | head -60
stamp "done"
[ $bad -eq 0 ]
