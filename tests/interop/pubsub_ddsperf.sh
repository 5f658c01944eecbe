#!/usr/bin/env bash
# `tessera perf pub`/`sub` against Cyclone's `ddsperf sub`/`pub`, both directions, reliable
# keep-all: KeyedSeq (the default type) at 16 B, 4 KiB and 64 KiB (fragmented), and the
# keyless OneULong (-TOU). The publisher runs unpaced for 2 s; the subscriber must receive
# >= 100 samples with zero lost, print ddsperf's line shapes and both must exit 0.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/perf.bash
source "$(dirname "$0")/lib/perf.bash"

[[ -x "$DDSPERF" ]] || fail "ddsperf not found (scripts/install-deps installs cyclonedds-tools)"
[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
TESSERA=("$TESSERA_BIN" perf)

# check_sub NAME: the subscriber log has sub lines, received >= 100 and lost 0.
check_sub() {
    local log="$WORK/$1.log" last total lost
    last=$(perf_last_sub "$log")
    [[ -n "$last" ]] || fail "$1 printed no sub line"
    read -r total lost <<<"$last"
    [[ $total -ge 100 ]] || fail "$1 received only $total samples"
    [[ $lost -eq 0 ]] || fail "$1 lost $lost samples"
    log "$1: total $total lost $lost"
}

# run_case NAME SUBCMD... -- PUBCMD...
run_case() {
    local name="$1"
    shift
    local -a sub=() pub=()
    while [[ "$1" != "--" ]]; do sub+=("$1"); shift; done
    shift
    pub=("$@")
    perf_pair "$name-sub" "${sub[@]}" -- "$name-pub" "${pub[@]}"
    check_sub "$name-sub"
}

SUBOPTS=(-D 3.5 -Qminmatch:1 -Qsamples:100)
PUBOPTS=(-D 2 -Qminmatch:1)
for size in 16 4096 65536; do
    run_case "ks$size-c2t" "${TESSERA[@]}" "${SUBOPTS[@]}" sub \
        -- "$DDSPERF" "${PUBOPTS[@]}" pub size "$size"
    perf_check_format "$WORK/ks$size-c2t-sub.log"
    run_case "ks$size-t2c" "$DDSPERF" "${SUBOPTS[@]}" sub \
        -- "${TESSERA[@]}" "${PUBOPTS[@]}" pub size "$size"
    perf_check_format "$WORK/ks$size-t2c-pub.log"
    grep -qE " size $size total " "$WORK/ks$size-t2c-sub.log" || fail "ddsperf sub saw no size $size"
done
run_case ou-c2t "${TESSERA[@]}" -TOU "${SUBOPTS[@]}" sub -- "$DDSPERF" -TOU "${PUBOPTS[@]}" pub
perf_check_format "$WORK/ou-c2t-sub.log"
run_case ou-t2c "$DDSPERF" -TOU "${SUBOPTS[@]}" sub -- "${TESSERA[@]}" -TOU "${PUBOPTS[@]}" pub
perf_check_format "$WORK/ou-t2c-pub.log"

# Keyed with several instances, paced, 5 % of the data doubling as pings (answered by the
# subscriber: latency under load), receive latency (-l) and a waitset subscriber on our side.
run_case k3-c2t "${TESSERA[@]}" -l -n 3 "${SUBOPTS[@]}" sub waitset \
    -- "$DDSPERF" -n 3 "${PUBOPTS[@]}" pub 5kHz 5%
perf_check_format "$WORK/k3-c2t-sub.log"
[[ $(perf_count "$PERF_RE_LATENCY" "$WORK/k3-c2t-sub.log") -ge 1 ]] || fail "no sublat line"
[[ $(perf_count "$PERF_RE_LATENCY" "$WORK/k3-c2t-pub.log") -ge 1 ]] ||
    fail "ddsperf pub got no pongs from our subscriber"
run_case k3-t2c "$DDSPERF" -n 3 "${SUBOPTS[@]}" sub \
    -- "${TESSERA[@]}" -n 3 "${PUBOPTS[@]}" pub 5kHz 5%
perf_check_format "$WORK/k3-t2c-pub.log"
[[ $(perf_count "$PERF_RE_LATENCY" "$WORK/k3-t2c-pub.log") -ge 1 ]] ||
    fail "our pub got no pongs from ddsperf sub"

log "ok"
