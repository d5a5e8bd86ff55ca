# The set-up every one-call device script (scripts/h200-*.sh) shares.
# Sourced after `cd "$(dirname "$0")/.."`, with the script's arguments:
#   . scripts/h200-common.sh NAME DEFAULT_BUDGET "$@"
# gives B (the build dir: the script's first argument, or build-gpu), O
# ($OUT, or /tmp/NAME; created), BUDGET (seconds: $BUDGET, or the default),
# left (seconds of the budget left), stamp (a heading with the seconds
# since the start) and gpu_tests ("prog args" lines run from $B, each with
# a log in $O and one line: its exit status, seconds and last "checks" line;
# a failure's FAIL lines follow; TEST_TIMEOUT seconds each, default 150).
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
