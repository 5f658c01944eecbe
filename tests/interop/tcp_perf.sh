#!/usr/bin/env bash
# Two `tessera perf` processes over the TCP transport alone (no UDP socket at all): discovery
# through TESSERA_TCP_PEERS, ping/pong round trips, and reliable pub/sub with zero loss,
# including 64 KiB samples (one frame each).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/perf.bash
source "$(dirname "$0")/lib/perf.bash"

[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
export TESSERA_TRANSPORTS=tcp4 TESSERA_TCP_PEERS=127.0.0.1
T=("$TESSERA_BIN" perf)

perf_pair pong "${T[@]}" -D 5 -Qminmatch:1 pong \
    -- ping "${T[@]}" -D 3 -Qminmatch:1 -Qroundtrips:1000 ping
[[ $(perf_count "$PERF_RE_LATENCY" "$WORK/ping.log") -ge 1 ]] || fail "no latency line over TCP"

for size in 16 65536; do
    perf_pair "sub$size" "${T[@]}" -D 3.5 -Qminmatch:1 -Qsamples:100 sub \
        -- "pub$size" "${T[@]}" -D 2 -Qminmatch:1 pub size "$size"
    last=$(perf_last_sub "$WORK/sub$size.log")
    [[ -n "$last" ]] || fail "sub$size printed no sub line"
    read -r total lost <<<"$last"
    [[ $total -ge 100 && $lost -eq 0 ]] || fail "size $size over TCP: total $total lost $lost"
    log "size $size over TCP: total $total lost $lost"
done
# A TCP-only participant listens on TCP and has no UDP socket at all.
start_bg alone "${T[@]}" -D 3 pong
pid=$(bg_pid alone)
sleep 1
ss -H -t -l -n -p | grep -q "pid=$pid," || fail "no TCP listener of pid $pid"
if ss -H -u -a -n -p | grep -q "pid=$pid,"; then fail "pid $pid opened a UDP socket"; fi
stop_bg alone
log "ok"
