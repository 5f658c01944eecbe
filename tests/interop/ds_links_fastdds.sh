#!/usr/bin/env bash
# Tessera's discovery server linked with Fast DDS 2.9's, both ways. Server 0 is
# `tessera discovery-server`, server 1 is `fast-discovery-server`; a subscriber that knows only
# server 0 and a publisher that knows only server 1 must find each other through the link and
# exchange 200 reliable samples peer to peer:
#   (a) control: no link, they find nobody;
#   (b) Tessera links to Fast DDS (`--link ";127.0.0.1:11812"`);
#   (c) Fast DDS links to Tessera (a SERVER reads ROS_DISCOVERY_SERVER as its remote servers).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/ds.bash
source "$(dirname "$0")/lib/ds.bash"

PEER="${PEER:-$REPO_ROOT/target/release/examples/peer}"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"
[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
command -v fast-discovery-server >/dev/null || fail "fast-discovery-server not found (scripts/install-deps installs fastdds-tools)"

# (a) Control.
start_bg s0 "$TESSERA_BIN" discovery-server -i 0 -l 127.0.0.1 -p 11811
start_bg s1 fast-discovery-server -i 1 -l 127.0.0.1 -p 11812
ds_wait_running s0
ds_wait_running s1
ds_linked_pair _apart 5 DsFdLinked
rc=0
wait_pid sub_apart 15 || rc=$?
[[ $rc -ne 0 ]] || fail "clients of unlinked servers exchanged data"
stop_bg pub_apart
stop_bg s0
stop_bg s1

# (b) Tessera's server links to Fast DDS's.
start_bg t0 "$TESSERA_BIN" discovery-server -i 0 -l 127.0.0.1 -p 11811 --link ";127.0.0.1:11812"
start_bg f1 fast-discovery-server -i 1 -l 127.0.0.1 -p 11812
ds_wait_running t0
ds_wait_running f1
ds_linked_pair _tessera_links 20 DsFdLinked
ds_expect_linked _tessera_links
stop_bg t0
stop_bg f1

# (c) Fast DDS's server links to Tessera's.
start_bg t0b "$TESSERA_BIN" discovery-server -i 0 -l 127.0.0.1 -p 11811
ROS_DISCOVERY_SERVER="127.0.0.1:11811" start_bg f1b fast-discovery-server -i 1 -l 127.0.0.1 -p 11812
ds_wait_running t0b
ds_wait_running f1b
ds_linked_pair _fastdds_links 20 DsFdLinked
ds_expect_linked _fastdds_links
stop_bg t0b
stop_bg f1b
log "ok"
