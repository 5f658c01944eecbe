#!/usr/bin/env bash
# The QoS-matrix cells Cyclone's ddsperf (Debian's cyclonedds-tools 0.10.2) can express, on
# its KeyedSeq data topic with 3 keys: a Tessera reader (qos_matrix perf-reader) of `ddsperf
# pub` and a Tessera writer (qos_matrix perf-writer) to `ddsperf sub`, reliable and best effort
# in each direction, the asymmetric default pair (reliable writer x best-effort reader, which
# ddsperf can express as its reliable writer x our default reader, and our default writer x
# its `-u` reader), and an incompatible pair each way (seen on our side).
# - Tessera reader: in order per key, no duplicates, reliable → no gap after the first sample,
#   and the stream does not stall (samples until ddsperf stops);
# - ddsperf sub (our writer starts 0.5 s after its match, once ddsperf's reader knows it too:
#   a VOLATILE Cyclone reader starts at the first HEARTBEAT it gets): reliable → all 200 samples and `lost 0`; best effort → >= 90 % of them on
#   this paced loopback stream (a stall shows as far less) and no reordering (which ddsperf
#   would count as ~4e9 lost).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/qos_matrix.bash
source "$(dirname "$0")/lib/qos_matrix.bash"
# shellcheck source=lib/perf.bash
source "$(dirname "$0")/lib/perf.bash"

QM="$REPO_ROOT/target/release/examples/qos_matrix"
[[ -x "$QM" ]] || fail "$QM not built (cargo build --release -p tessera --examples)"
[[ -x "$DDSPERF" ]] || fail "ddsperf not found (scripts/install-deps installs cyclonedds-tools)"
COUNT=200      # samples our writer sends, 10 ms apart
PUB_SECS=3     # how long ddsperf pub runs, at 100 Hz

# c2t IDX NAME QOS TOPIC [--expect-incompatible] -- DDSPERF_ARGS...: our reader first, then
# `ddsperf ... pub 100Hz` for PUB_SECS (with C2T_LATE=1: ddsperf first, our reader a second
# later); the verdict is our reader's.
c2t() {
    local idx="$1" name="$2" qos="$3" topic="$4" dir="$WORK/$2"
    shift 4
    local -a extra=()
    while [[ "$1" != "--" ]]; do extra+=("$1"); shift; done
    shift
    mkdir -p "$dir"
    local -a pub=("$DDSPERF" -i "$idx" -n 3 -D "$PUB_SECS" "$@" pub 100Hz)
    local secs="$PUB_SECS"
    if [[ "${C2T_LATE:-0}" == 1 ]]; then
        # ddsperf publishes for a second before our reader exists.
        qm_start "$dir" ddsperf "${pub[@]}"
        sleep 1
        secs=$((PUB_SECS - 1))
    fi
    qm_start "$dir" reader "$QM" perf-reader --domain "$idx" --topic "$topic" --qos "$qos" \
        --instances 3 --duration "$secs" --timeout 10 "${extra[@]}"
    if [[ "${C2T_LATE:-0}" != 1 ]]; then
        qm_wait_line "$dir/reader.log" '^ready$' 10 || true
        qm_start "$dir" ddsperf "${pub[@]}"
    fi
    qm_wait_exit "$(cat "$dir/reader.pid")" 20 || true
    qm_stop_all "$dir"
    local v
    v="$(qm_verdict "$dir/reader.log")"
    if [[ "$v" == pass ]]; then
        echo "PASS $name: $(grep -m1 '^json ' "$dir/reader.log" | grep -oE '"received":[0-9]+,"lost":[0-9]+')"
    else
        echo "FAIL $name: reader $v"
    fi >"$WORK/$idx.result"
}

# t2c IDX NAME QOS TOPIC MODE ORDER -- DDSPERF_ARGS...: our writer of COUNT samples and
# `ddsperf ... sub`. MODE: all (every sample, lost 0), most (>= 90 %, no reordering) or
# incompatible (our writer must report OFFERED_INCOMPATIBLE_QOS; ddsperf gets nothing).
# ORDER: sfirst (ddsperf first) or wfirst (our writer first writes 30 samples nobody reads,
# then ddsperf joins; VOLATILE, it is owed only the COUNT that follow).
t2c() {
    local idx="$1" name="$2" qos="$3" topic="$4" mode="$5" order="$6" dir="$WORK/$2"
    shift 7
    mkdir -p "$dir"
    local -a extra=() sub=("$DDSPERF" -i "$idx" -n 3 -D 6 -1 "$@" sub)
    [[ "$mode" == incompatible ]] && extra=(--expect-incompatible)
    [[ "$order" == wfirst ]] && extra+=(--pre 30)
    [[ "$order" == sfirst ]] && qm_start "$dir" ddsperf "${sub[@]}"
    qm_start "$dir" writer "$QM" perf-writer --domain "$idx" --topic "$topic" --qos "$qos" \
        --instances 3 --count "$COUNT" --period-ms 10 --settle-ms 500 --linger 1 --timeout 10 "${extra[@]}"
    if [[ "$order" == wfirst ]]; then
        qm_wait_line "$dir/writer.log" '^ready$' 10 || true
        qm_start "$dir" ddsperf "${sub[@]}"
    fi
    local ddsperf_rc=0
    qm_wait_exit "$(cat "$dir/ddsperf.pid")" 20 || ddsperf_rc=124
    [[ $ddsperf_rc -eq 0 ]] && { wait "$(cat "$dir/ddsperf.pid")" || ddsperf_rc=$?; }
    qm_wait_exit "$(cat "$dir/writer.pid")" 10 || true
    qm_stop_all "$dir"
    local v total=0 lost=0 last problems=()
    v="$(qm_verdict "$dir/writer.log")"
    [[ "$v" == pass ]] || problems+=("writer $v")
    last="$(perf_last_sub "$dir/ddsperf.log")"
    [[ -n "$last" ]] && read -r total lost <<<"$last"
    case "$mode" in
        all)
            [[ $total -eq $COUNT && $lost -eq 0 ]] ||
                problems+=("ddsperf sub: total $total lost $lost, want $COUNT and 0")
            [[ $ddsperf_rc -eq 0 ]] || problems+=("ddsperf exited $ddsperf_rc")
            ;;
        most)
            [[ $total -ge $((COUNT * 9 / 10)) && $lost -lt 2147483648 ]] ||
                problems+=("ddsperf sub: total $total lost $lost, want >= $((COUNT * 9 / 10)) and no reordering")
            ;;
        incompatible)
            [[ $total -eq 0 ]] || problems+=("ddsperf sub received $total samples")
            ;;
    esac
    if [[ ${#problems[@]} -eq 0 ]]; then
        echo "PASS $name: ddsperf sub total $total lost $lost"
    else
        local IFS=';'
        echo "FAIL $name: ${problems[*]}"
    fi >"$WORK/$idx.result"
}

R=DDSPerfRDataKS U=DDSPerfUDataKS
t0=$SECONDS
c2t 1 "ddsperf pub (rel, keep-all) -> tessera rel.vol.all" rel.vol.all "$R" -- &
c2t 2 "ddsperf -u pub (be) -> tessera be.vol.all" be.vol.all "$U" -- -u &
c2t 3 "ddsperf pub (rel) -> tessera default reader be.vol.k1" be.vol.k1 "$R" -- &
c2t 4 "ddsperf -k 1 pub (rel, keep-last 1) -> tessera rel.vol.k8" rel.vol.k8 "$R" -- -k 1 &
c2t 5 "ddsperf -u pub (be) -> tessera rel.vol.all: incompatible" rel.vol.all "$U" \
    --expect-incompatible -- -u &
C2T_LATE=1 c2t 12 "ddsperf pub (rel), then late tessera default reader be.vol.k1" be.vol.k1 "$R" -- &
C2T_LATE=1 c2t 13 "ddsperf pub (rel), then late tessera rel.vol.all" rel.vol.all "$R" -- &
wait
t2c 6 "tessera rel.vol.all -> ddsperf sub (rel, keep-all)" rel.vol.all "$R" all sfirst -- &
t2c 7 "tessera be.vol.all -> ddsperf -u sub (be)" be.vol.all "$U" most sfirst -- -u &
t2c 8 "tessera default writer rel.vol.k1 -> ddsperf -u sub (be)" rel.vol.k1 "$U" most sfirst -- -u &
t2c 9 "tessera be.vol.all -> ddsperf sub (rel): incompatible" be.vol.all "$R" incompatible sfirst -- &
t2c 10 "tessera rel.vol.all, then late ddsperf sub (rel)" rel.vol.all "$R" all wfirst -- &
t2c 11 "tessera default writer rel.vol.k1, then late ddsperf -u sub (be)" rel.vol.k1 "$U" most wfirst -- -u &
wait
log "ran 13 cells in $((SECONDS - t0)) s"

passed=0 failed=0
for i in {1..13}; do
    line="$(cat "$WORK/$i.result" 2>/dev/null || echo "FAIL cell $i: no result")"
    echo "$line"
    if [[ "$line" == PASS* ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "qos matrix vs ddsperf: $passed passed, $failed failed"
[[ $failed -eq 0 ]] || { log "logs in $WORK/<cell name>/"; exit 1; }
log "ok"
