#!/usr/bin/env bash
# Centralized discovery with Fast DDS's own server: `fastdds discovery -i 0 -l 127.0.0.1
# -p 11811` and three Tessera processes made discovery-server clients by ROS_DISCOVERY_SERVER.
#   (a) a subscriber and a publisher on one topic find each other through the server and
#       exchange 500 reliable samples peer to peer;
#   (b) a third client on another topic learns of nobody (2.9's topic filter);
#   (c) when the subscriber leaves, the publisher hears of it (the server relays its DATA(Up)):
#       it ends with no peer left.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

PEER="${PEER:-$REPO_ROOT/target/release/examples/peer}"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"
command -v fastdds >/dev/null || fail "fastdds not found (scripts/install-deps installs fastdds-tools)"

start_bg server fastdds discovery -i 0 -l 127.0.0.1 -p 11811
for ((i = 0; i < 50; i++)); do
    grep -q "Server is running" "$WORK/server.log" && break
    sleep 0.1
done
grep -q "Server is running" "$WORK/server.log" || fail "fastdds discovery did not start"

export ROS_DISCOVERY_SERVER=127.0.0.1:11811
start_bg sub "$PEER" sub --topic DsSquare --count 500 --timeout 20
start_bg other "$PEER" sub --topic DsOther --count 1 --timeout 8
sleep 0.2
start_bg pub "$PEER" pub --topic DsSquare --count 500 --linger 3 --timeout 20

rc=0
wait_pid sub 30 || rc=$?
[[ $rc -eq 0 ]] || fail "subscriber exited $rc"
rc=0
wait_pid pub 30 || rc=$?
[[ $rc -eq 0 ]] || fail "publisher exited $rc"
rc=0
wait_pid other 20 || rc=$?
[[ $rc -eq 1 ]] || fail "the client on another topic exited $rc (expected 1: received nothing)"

grep -q "^sub: received 500 of 500 " "$WORK/sub.log" || fail "subscriber did not get every sample"
grep -qx "peers: 1" "$WORK/sub.log" || fail "subscriber did not learn exactly the publisher"
grep -qx "peers: 0" "$WORK/pub.log" || fail "publisher did not hear that the subscriber left"
grep -q "^sub: received 0 of 1 " "$WORK/other.log" || fail "the other-topic client received data"
grep -qx "peers: 0" "$WORK/other.log" || fail "the other-topic client learned of a peer"
log "$(grep '^sub:' "$WORK/sub.log" | cut -c1-90)"
log "$(grep 'acknowledged' "$WORK/pub.log")"
stop_bg server
log "ok"
