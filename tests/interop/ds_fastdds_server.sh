#!/usr/bin/env bash
# Centralized discovery with Fast DDS's own server: `fastdds discovery -i 0 -l 127.0.0.1
# -p 11811` and three Tessera processes made discovery-server clients by ROS_DISCOVERY_SERVER.
#   (a) a subscriber and a publisher on one topic find each other through the server and
#       exchange 500 reliable samples peer to peer;
#   (b) a third client on another topic learns of nobody (2.9's topic filter);
#   (c) when the subscriber leaves, the publisher hears of it (the server relays its DATA(Up)):
#       it ends with no peer left;
#   (d) a Tessera client and a Fast DDS 2.9 client (lib/fastdds_ds_client.cpp, built here)
#       exchange data both ways.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/ds.bash
source "$(dirname "$0")/lib/ds.bash"

PEER="${PEER:-$REPO_ROOT/target/release/examples/peer}"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"
command -v fast-discovery-server >/dev/null || fail "fast-discovery-server not found (scripts/install-deps installs fastdds-tools)"

# The server binary itself, not the `fastdds discovery` wrapper: stopping the wrapper by pid
# would leave its child server running.
start_bg server fast-discovery-server -i 0 -l 127.0.0.1 -p 11811
ds_wait_running server
export ROS_DISCOVERY_SERVER=127.0.0.1:11811
ds_tessera_clients "$PEER"
ds_build_fastdds_client
ds_mixed_clients "$PEER"
stop_bg server
log "ok"
