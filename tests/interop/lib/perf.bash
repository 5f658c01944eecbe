# Helpers for the `tessera perf` interop tests: the exact shapes of ddsperf's output lines and
# small log checks. Source after lib/common.bash.

# Every line shape ddsperf 0.10.2 prints in text mode (see docs/ddsperf-protocol.md §11).
PERF_T='^\[[0-9]+\] -?[0-9]+\.[0-9]{3} '
PERF_US='-?[0-9]+\.[0-9]{3}us'
PERF_RE_LATENCY="${PERF_T}( sublat)? [^ ]+ size [0-9]+ mean ${PERF_US} min ${PERF_US} 50% ${PERF_US} 90% ${PERF_US} 99% ${PERF_US} max ${PERF_US} cnt [0-9]+\$"
PERF_RE_SUB="${PERF_T} size [0-9]+ total [0-9]+ lost [0-9]+ delta [0-9]+ lost [0-9]+ rate [0-9]+\.[0-9]{2} kS/s [0-9]+\.[0-9]{2} Mb/s \([0-9]+\.[0-9]{2} kS/s [0-9]+\.[0-9]{2} Mb/s\)\$"
PERF_RE_PUB="${PERF_T} *[0-9.e+]+[kM]?/s +(inf|[0-9]+[nums]) \|[ ._=xX@-]{30}\| +[0-9]+% +[0-9]+[nums]\$"
PERF_RE_CPU="${PERF_T}( \(stale\))?( @[^ ]+:[0-9]+)?( rss:[0-9.]+(MB|kB))? vcsw:[0-9]+ ivcsw:[0-9]+( [^ ]+:[0-9]+%\+[0-9]+%)+\$"
PERF_RE_EVENT='^\[[0-9]+\] (participant [^ ]+:[0-9]+: (new( \(self\))?|gone|failed to match in [0-9]+\.[0-9]{3}s)|ping timed out \(total [0-9]+ times\) \.\.\. sending new ping|error: .*)$'
export PERF_RE_LATENCY PERF_RE_SUB PERF_RE_PUB PERF_RE_CPU PERF_RE_EVENT

# perf_check_format LOG: every line of LOG has one of ddsperf's shapes.
perf_check_format() {
    local log="$1" line n=0
    while IFS= read -r line; do
        n=$((n + 1))
        [[ "$line" =~ $PERF_RE_LATENCY || "$line" =~ $PERF_RE_SUB || "$line" =~ $PERF_RE_PUB ||
            "$line" =~ $PERF_RE_CPU || "$line" =~ $PERF_RE_EVENT ]] ||
            fail "$(basename "$log") line $n has no ddsperf shape: '$line'"
    done <"$log"
}

# perf_count RE LOG: how many lines of LOG match the extended regex RE.
perf_count() {
    local re="$1" log="$2" line n=0
    while IFS= read -r line; do
        [[ "$line" =~ $re ]] && n=$((n + 1))
    done <"$log"
    echo "$n"
}

# perf_last_sub LOG: "TOTAL LOST" from the last `sub` line of LOG (empty if none).
perf_last_sub() {
    grep -E "$PERF_RE_SUB" "$1" | tail -n 1 | sed -E 's/.* total ([0-9]+) lost ([0-9]+) delta.*/\1 \2/'
}

# perf_pair NAME_A CMD_A... -- NAME_B CMD_B...: starts A, then B, waits for both (40 s each at
# most) and fails unless both exit 0.
perf_pair() {
    local a="$1" b rc
    shift
    local -a ca=() cb=()
    while [[ $# -gt 0 && "$1" != "--" ]]; do ca+=("$1"); shift; done
    shift
    b="$1"
    shift
    cb=("$@")
    start_bg "$a" "${ca[@]}"
    start_bg "$b" "${cb[@]}"
    rc=0; wait_pid "$b" 40 || rc=$?
    [[ $rc -eq 0 ]] || fail "$b exited $rc"
    rc=0; wait_pid "$a" 40 || rc=$?
    [[ $rc -eq 0 ]] || fail "$a exited $rc"
}
