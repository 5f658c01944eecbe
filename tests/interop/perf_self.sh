#!/usr/bin/env bash
# `tessera perf` against itself: ping/pong (listener and waitset), reliable pub/sub for several
# types and sizes with zero loss, the polling subscriber, --json, and ddsperf's exit statuses
# for failed criteria (1) and out-of-range keys (3).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/perf.bash
source "$(dirname "$0")/lib/perf.bash"

[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
T=("$TESSERA_BIN" perf)

# 1. Ping/pong.
perf_pair pong "${T[@]}" -D 5 -Qminmatch:1 pong \
    -- ping "${T[@]}" -D 3 -Qminmatch:1 -Qroundtrips:1000 ping
perf_check_format "$WORK/ping.log"
perf_check_format "$WORK/pong.log"
[[ $(perf_count "$PERF_RE_LATENCY" "$WORK/ping.log") -ge 1 ]] || fail "no latency line"
perf_pair pongw "${T[@]}" -D 5 -Qminmatch:1 pong waitset \
    -- pingw "${T[@]}" -D 3 -Qminmatch:1 -Qroundtrips:100 ping 1kHz waitset
[[ $(perf_count "$PERF_RE_LATENCY" "$WORK/pingw.log") -ge 1 ]] || fail "no latency line (waitset)"

# 2. Reliable pub/sub, zero loss.
check_sub() {
    local last total lost
    last=$(perf_last_sub "$WORK/$1.log")
    [[ -n "$last" ]] || fail "$1 printed no sub line"
    read -r total lost <<<"$last"
    [[ $total -ge 100 && $lost -eq 0 ]] || fail "$1: total $total lost $lost"
    perf_check_format "$WORK/$1.log"
    log "$1: total $total lost $lost"
}
for args in "KS 16" "KS 65536" "OU" "S4k" "UK1024"; do
    read -r type size <<<"$args"
    name="self-$type${size:-}"
    sizeargs=()
    [[ -n "${size:-}" ]] && sizeargs=(size "$size")
    perf_pair "$name-sub" "${T[@]}" -T"$type" -D 3.5 -Qminmatch:1 -Qsamples:100 sub \
        -- "$name-pub" "${T[@]}" -T"$type" -D 2 -Qminmatch:1 pub "${sizeargs[@]}"
    check_sub "$name-sub"
    perf_check_format "$WORK/$name-pub.log"
done
perf_pair poll-sub "${T[@]}" -D 3.5 -n 4 -Qminmatch:1 -Qsamples:100 sub polling \
    -- poll-pub "${T[@]}" -D 2 -n 4 -Qminmatch:1 pub 2kHz burst 5
check_sub poll-sub

# 3. --json: one object per line, with a final summary.
perf_pair json-sub "${T[@]}" --json -D 3 -Qminmatch:1 sub \
    -- json-pub "${T[@]}" -D 2 -Qminmatch:1 pub 1kHz
python3 - "$WORK/json-sub.log" <<'PY' || fail "bad JSON output"
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
assert any(o["type"] == "sub" and o["total"] > 0 for o in objs), "no sub object"
assert objs[-1]["type"] == "summary" and objs[-1]["exit_code"] == 0, objs[-1]
PY

# 4. Exit statuses: too few matching participants -> 1; key >= -n -> 3.
start_bg few "${T[@]}" -D 2 -Qminmatch:2 pong
start_bg other "${T[@]}" -D 3 pong
rc=0; wait_pid few 30 || rc=$?
[[ $rc -eq 1 ]] || fail "minmatch:2 with one peer exited $rc, expected 1"
grep -qE '^\[[0-9]+\] error: too few matching participants \(1\)$' "$WORK/few.log" ||
    fail "no 'too few matching participants' line"
stop_bg other
start_bg keys-sub "${T[@]}" -D 5 -n 2 sub
start_bg keys-pub "${T[@]}" -D 3 -n 5 pub 100Hz
rc=0; wait_pid keys-sub 30 || rc=$?
[[ $rc -eq 3 ]] || fail "out-of-range key exited $rc, expected 3"
grep -qE '^received key [0-9]+ >= nkeys 2$' "$WORK/keys-sub.log" || fail "no 'received key' line"
stop_bg keys-pub

log "ok"
