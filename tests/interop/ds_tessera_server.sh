#!/usr/bin/env bash
# Centralized discovery with Tessera's own server, `tessera discovery-server -i 0 -l 127.0.0.1
# -p 11811`, and clients made discovery-server clients by ROS_DISCOVERY_SERVER:
#   (a) Tessera clients: a subscriber and a publisher on one topic match through the server and
#       exchange 500 reliable samples peer to peer; a third client on another topic learns of
#       nobody (topic filter); the subscriber's goodbye reaches the publisher (DATA(Up) relayed);
#   (b) Fast DDS 2.9 clients (a small C++ program built here with g++ against Debian's
#       libfastrtps-dev, discovery left SIMPLE so the variable makes it a CLIENT): a Fast DDS
#       publisher and subscriber find each other through the Tessera server and exchange data,
#       and a Fast DDS client on another topic learns of nobody;
#   (c) a Tessera client and a Fast DDS client exchange data both ways.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/ds.bash
source "$(dirname "$0")/lib/ds.bash"

PEER="${PEER:-$REPO_ROOT/target/release/examples/peer}"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"
[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"

start_bg server "$TESSERA_BIN" discovery-server -i 0 -l 127.0.0.1 -p 11811
ds_wait_running server
export ROS_DISCOVERY_SERVER=127.0.0.1:11811

# (a) Tessera clients.
ds_tessera_clients "$PEER"

# (b) Fast DDS 2.9 clients.
ds_build_fastdds_client
start_bg fsub "$WORK/fdsclient" sub DsFast 20 15
start_bg fother "$WORK/fdsclient" sub DsFastOther 1 6
sleep 0.3
start_bg fpub "$WORK/fdsclient" pub DsFast 20 15
rc=0
wait_pid fsub 25 || rc=$?
[[ $rc -eq 0 ]] || fail "Fast DDS subscriber exited $rc"
rc=0
wait_pid fpub 25 || rc=$?
[[ $rc -eq 0 ]] || fail "Fast DDS publisher exited $rc"
rc=0
wait_pid fother 20 || rc=$?
[[ $rc -eq 1 ]] || fail "the Fast DDS client on another topic exited $rc (expected 1)"
grep -q "^received 20 of 20 (corrupt 0)" "$WORK/fsub.log" || fail "Fast DDS subscriber did not get every sample"
grep -qx "participants 0" "$WORK/fother.log" || fail "the other-topic Fast DDS client learned of a peer"
log "fast dds clients: $(grep '^received' "$WORK/fsub.log")"

# (c) Tessera and Fast DDS clients together.
ds_mixed_clients "$PEER"

stop_bg server
log "ok"
