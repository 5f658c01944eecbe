#!/usr/bin/env bash
# `tessera perf ping`/`pong` against Cyclone's `ddsperf` in both directions: each side must
# discover the other as a ddsperf peer, match all ping/pong endpoints, complete >= 1000 round
# trips, print ddsperf's exact line shapes and exit 0.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/perf.bash
source "$(dirname "$0")/lib/perf.bash"

[[ -x "$DDSPERF" ]] || fail "ddsperf not found (scripts/install-deps installs cyclonedds-tools)"
[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"

check_pinger() {
    local log="$WORK/$1.log" n
    perf_check_format "$log"
    n=$(perf_count "$PERF_RE_LATENCY" "$log")
    [[ $n -ge 1 ]] || fail "$1 printed no latency line"
    grep -qE '^\[[0-9]+\] participant [^ ]+:[0-9]+: new$' "$log" || fail "$1 saw no peer"
    grep -qE '^\[[0-9]+\] participant [^ ]+:[0-9]+: new \(self\)$' "$log" || fail "$1 saw no self"
    log "$1: $n latency lines; last: $(grep -E "$PERF_RE_LATENCY" "$log" | tail -n 1)"
}

# 1. ddsperf pings, tessera answers.
perf_pair pong "$TESSERA_BIN" perf -D 6 -Qminmatch:1 pong \
    -- ping "$DDSPERF" -D 3 -Qminmatch:1 -Qroundtrips:1000 ping
check_pinger ping
perf_check_format "$WORK/pong.log"

# 2. tessera pings, ddsperf answers (waitset trigger on our side for coverage).
perf_pair pong2 "$DDSPERF" -D 6 -Qminmatch:1 pong \
    -- ping2 "$TESSERA_BIN" perf -D 3 -Qminmatch:1 -Qroundtrips:1000 ping waitset
check_pinger ping2

# 3. tessera pings at a fixed rate with a larger KS payload (fragmented), ddsperf answers.
perf_pair pong3 "$DDSPERF" -D 6 -Qminmatch:1 pong \
    -- ping3 "$TESSERA_BIN" perf -D 3 -Qminmatch:1 -Qroundtrips:100 ping 200Hz size 4k
check_pinger ping3
grep -qE ' size 4096 mean ' "$WORK/ping3.log" || fail "ping3 did not report size 4096"

log "ok"
