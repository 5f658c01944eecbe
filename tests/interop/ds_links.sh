#!/usr/bin/env bash
# Two linked discovery servers: `tessera discovery-server -i 0 --link ";127.0.0.1:11812"`
# links to server 1 (which accepts the link unasked). A subscriber that knows only server 0
# and a publisher that knows only server 1 find each other through the link and exchange 200
# reliable samples peer to peer. Without the link (control run) they find nobody.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/ds.bash
source "$(dirname "$0")/lib/ds.bash"

PEER="${PEER:-$REPO_ROOT/target/release/examples/peer}"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"
[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"

# Control: two servers, no link.
start_bg s0 "$TESSERA_BIN" discovery-server -i 0 -l 127.0.0.1 -p 11811
start_bg s1 "$TESSERA_BIN" discovery-server -i 1 -l 127.0.0.1 -p 11812
ds_wait_running s0
ds_wait_running s1
ds_linked_pair _apart 5 DsLinked
rc=0
wait_pid sub_apart 15 || rc=$?
[[ $rc -ne 0 ]] || fail "clients of unlinked servers exchanged data"
stop_bg pub_apart
stop_bg s0
stop_bg s1

# Linked.
start_bg l0 "$TESSERA_BIN" discovery-server -i 0 -l 127.0.0.1 -p 11811 --link ";127.0.0.1:11812"
start_bg l1 "$TESSERA_BIN" discovery-server -i 1 -l 127.0.0.1 -p 11812
ds_wait_running l0
ds_wait_running l1
ds_linked_pair _linked 20 DsLinked
ds_expect_linked _linked
stop_bg l0
stop_bg l1
log "ok"
