# Helpers for the discovery-server interop tests (ds_*.sh). Source after common.bash.
#
# ds_wait_running NAME: waits up to 5 s for "Server is running" in $WORK/NAME.log (both
# `fastdds discovery` and `tessera discovery-server` print it).
ds_wait_running() {
    local i
    for ((i = 0; i < 50; i++)); do
        grep -q "Server is running" "$WORK/$1.log" && return 0
        sleep 0.1
    done
    fail "$1 did not start"
}

# ds_tessera_clients PEER: three Tessera clients of the server in ROS_DISCOVERY_SERVER. A
# subscriber and a publisher on one topic exchange 500 reliable samples peer to peer; a third
# client on another topic learns of nobody (topic filter); the subscriber's goodbye reaches the
# publisher (the server relays its DATA(Up)), which ends with no peer left.
ds_tessera_clients() {
    local peer="$1" rc
    start_bg sub "$peer" sub --topic DsSquare --count 500 --timeout 20
    start_bg other "$peer" sub --topic DsOther --count 1 --timeout 8
    sleep 0.2
    start_bg pub "$peer" pub --topic DsSquare --count 500 --linger 3 --timeout 20
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
    log "tessera clients: $(grep '^sub:' "$WORK/sub.log" | cut -c1-70)"
    log "tessera clients: $(grep 'acknowledged' "$WORK/pub.log")"
}
