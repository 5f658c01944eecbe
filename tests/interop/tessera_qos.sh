#!/usr/bin/env bash
# Tessera <-> Tessera in two processes:
# - a late-joining TRANSIENT_LOCAL reader receives the writer's retained history;
# - incompatible QoS (best-effort writer, reliable reader) is reported on both sides;
# - when the writer's process is killed, the reader reports the loss of its liveliness.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

PEER="$REPO_ROOT/target/release/examples/peer"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"

# Late joiner: the writer publishes 50 samples with nobody listening, then a reader joins.
start_bg pub-tl "$PEER" pub --topic LateJoin --count 50 --keep-last 50 --transient-local --wait-readers 0 --linger 20
sleep 1
start_bg sub-tl "$PEER" sub --topic LateJoin --count 50 --keep-last 50 --transient-local --timeout 15
rc=0
wait_pid sub-tl 20 || rc=$?
[[ $rc -eq 0 ]] || fail "late joiner did not receive the history (exit $rc)"
log "late joiner: $(grep '^sub:' "$WORK/sub-tl.log" | cut -c1-100)"
stop_bg pub-tl

# Incompatible QoS on both sides.
start_bg pub-ic "$PEER" pub --topic Incompat --best-effort --expect-incompatible --timeout 15
start_bg sub-ic "$PEER" sub --topic Incompat --expect-incompatible --timeout 15
rc=0
wait_pid pub-ic 20 || rc=$?
[[ $rc -eq 0 ]] || fail "writer did not report offered-incompatible QoS (exit $rc)"
rc=0
wait_pid sub-ic 20 || rc=$?
[[ $rc -eq 0 ]] || fail "reader did not report requested-incompatible QoS (exit $rc)"
log "incompatible QoS reported on both sides"

# Liveliness: kill -9 the writer's process once the reader has everything.
start_bg sub-lv "$PEER" sub --topic Liveliness --count 100 --expect-liveliness-lost --timeout 20
sleep 0.3
start_bg pub-lv "$PEER" pub --topic Liveliness --count 100 --linger 60
for _ in $(seq 1 100); do
    grep -q '^sub: received 100 of 100' "$WORK/sub-lv.log" && break
    sleep 0.1
done
grep -q '^sub: received 100 of 100' "$WORK/sub-lv.log" || fail "liveliness reader got no data"
kill -9 "$(bg_pid pub-lv)"
log "killed the writer's process"
rc=0
wait_pid sub-lv 40 || rc=$?
[[ $rc -eq 0 ]] || fail "reader did not report liveliness lost (exit $rc)"
log "liveliness: $(grep 'liveliness' "$WORK/sub-lv.log")"
log "ok"
