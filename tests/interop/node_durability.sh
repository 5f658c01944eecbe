#!/usr/bin/env bash
# The durability service inside the node (`tessera-node --durability-store DIR`), PERSISTENT
# across a kill -9 of everything on the host: an application attached to the node
# (TESSERA_NODE=1) writes 2 instances x 20 samples (service depth 5) and waits until they are
# acknowledged (by the node's service among others); the writer AND the node are killed with
# SIGKILL; the node is restarted on the same store; a late PERSISTENT reader attached to it
# must receive the last 5 values of each instance, in order, once, with the original writer's
# GUID. Then SIGTERM: the node and its service leave cleanly.
#
# Binaries: release when built (scripts/test builds them), else debug; BUILD_DIR overrides.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/durability.bash
source "$(dirname "$0")/lib/durability.bash"
exec </dev/null
NODE_BIN="$BUILD_DIR/tessera-node"
[[ -x "$NODE_BIN" ]] || fail "$NODE_BIN missing (cargo build -p tessera-node)"
STORE="$WORK/store"
export TESSERA_NODE=1

wait_for_service() { # NAME: the node's --stats line for the hosted service's topic
    wait_for_line "$1" "tessera node: serving" 20
}
start_bg node1 "$NODE_BIN" --durability-store "$STORE" --stats 1
wait_for_service node1
start_bg writer "$PEER" pub --kind persistent --instances 2 --count 20 --depth 5 --timeout 30
wait_for_line writer "acknowledged" 40
writer_guid="$(awk '/^acknowledged/ {print $2}' "$WORK/writer.log")"
# The writer's acknowledgment waits for every matched reader: the node's service and the
# node's proxy, whichever matched first; make sure the service has all 10 kept samples.
wait_for_line node1 "durable .*: 10 samples" 20
log "writer $writer_guid acknowledged, the node's service keeps 10; kill -9 of the writer and the node"
kill9 writer node1
ls -l "$STORE"

start_bg node2 "$NODE_BIN" --durability-store "$STORE" --stats 1
wait_for_service node2
late_reader "$writer_guid" --instances 2 --count 20 --depth 5
grep "durable" "$WORK/node2.log" | tail -2
stop_bg node2
grep -q "tessera node: stopped" "$WORK/node2.log" || fail "the node did not stop cleanly on SIGTERM"
log "ok"
