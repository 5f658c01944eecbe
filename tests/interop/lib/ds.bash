# Helpers for the discovery-server interop tests (ds_*.sh). Source after common.bash.

# Fast DDS leaves shared-memory segments in /dev/shm behind processes that are stopped (a known
# trait of it): common.bash's exit cleanup stops every process of the test, then runs
# `fastdds shm clean`, which removes the ones no live process uses.
#
# ds_wait_running NAME: waits up to 5 s for "Server is running" in $WORK/NAME.log (both
# `fastdds discovery` and `tessera discovery-server` print it).
ds_wait_running() {
    local i
    for ((i = 0; i < 50; i++)); do
        grep -q "Server is running" "$WORK/$1.log" 2>/dev/null && return 0
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

# ds_build_fastdds_client: builds lib/fastdds_ds_client.cpp (a Fast DDS 2.x pub/sub of the test
# peer's type) into $WORK/fdsclient with g++ and Debian's libfastrtps-dev.
ds_build_fastdds_client() {
    local src
    src="$(dirname "${BASH_SOURCE[0]}")/fastdds_ds_client.cpp"
    [[ -e /usr/include/fastdds/dds/domain/DomainParticipantFactory.hpp ]] && command -v g++ >/dev/null ||
        fail "libfastrtps-dev or g++ missing (scripts/install-deps installs them)"
    g++ -std=c++14 -O1 -o "$WORK/fdsclient" "$src" -lfastrtps -lfastcdr >"$WORK/gcc.log" 2>&1 ||
        fail "building the Fast DDS client failed"
}

# ds_mixed_clients PEER: a Tessera client and a Fast DDS 2.9 client of the same server exchange
# 20 reliable samples each way (Tessera -> Fast DDS, then Fast DDS -> Tessera), peer to peer.
ds_mixed_clients() {
    local peer="$1" rc
    start_bg mfsub "$WORK/fdsclient" sub DsMixedT2F 20 15
    sleep 0.3
    start_bg mtpub "$peer" pub --topic DsMixedT2F --count 20 --linger 1 --timeout 15
    rc=0
    wait_pid mfsub 25 || rc=$?
    [[ $rc -eq 0 ]] || fail "Fast DDS subscriber of the Tessera publisher exited $rc"
    rc=0
    wait_pid mtpub 25 || rc=$?
    [[ $rc -eq 0 ]] || fail "Tessera publisher exited $rc"
    log "tessera -> fast dds: $(grep '^received' "$WORK/mfsub.log")"
    start_bg mtsub "$peer" sub --topic DsMixedF2T --count 20 --timeout 15
    sleep 0.3
    start_bg mfpub "$WORK/fdsclient" pub DsMixedF2T 20 15
    rc=0
    wait_pid mtsub 25 || rc=$?
    [[ $rc -eq 0 ]] || fail "Tessera subscriber of the Fast DDS publisher exited $rc"
    rc=0
    wait_pid mfpub 25 || rc=$?
    [[ $rc -eq 0 ]] || fail "Fast DDS publisher exited $rc"
    log "fast dds -> tessera: $(grep '^sub:' "$WORK/mtsub.log" | cut -c1-70)"
}

# ds_linked_pair LABEL TIMEOUT TOPIC: a subscriber that knows only server 0 (127.0.0.1:11811)
# and a publisher that knows only server 1 (127.0.0.1:11812), 200 reliable samples on TOPIC;
# started as sub$LABEL and pub$LABEL. Server links are what lets them meet.
ds_linked_pair() {
    ROS_DISCOVERY_SERVER="127.0.0.1:11811" start_bg "sub$1" "$PEER" sub --topic "$3" --count 200 --timeout "$2"
    sleep 0.2
    ROS_DISCOVERY_SERVER=";127.0.0.1:11812" start_bg "pub$1" "$PEER" pub --topic "$3" --count 200 --linger 3 --timeout "$2"
}

# ds_expect_linked LABEL: both clients of ds_linked_pair end well and every sample arrived.
ds_expect_linked() {
    local rc=0
    wait_pid "sub$1" 30 || rc=$?
    [[ $rc -eq 0 ]] || fail "$1: subscriber (server 0) exited $rc"
    rc=0
    wait_pid "pub$1" 30 || rc=$?
    [[ $rc -eq 0 ]] || fail "$1: publisher (server 1) exited $rc"
    grep -q "^sub: received 200 of 200 " "$WORK/sub$1.log" || fail "$1: subscriber did not get every sample"
    log "$1: $(grep '^sub:' "$WORK/sub$1.log" | cut -c1-70)"
}
