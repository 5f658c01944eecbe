#!/usr/bin/env bash
# The federated architecture with Cyclone DDS beyond the node: host A runs `tessera-node` and a
# `tessera perf` attached to it (TESSERA_NODE=1), host B Cyclone's `ddsperf`, both directions:
# A's `perf pub` to B's `ddsperf sub`, then B's `ddsperf pub` to A's `perf sub`, 1 kHz of
# 16 B for 8 s, at least 100 samples each way, none lost. The node forwards a type learnt over
# TypeLookup from the application, under the application's XTypes identity, to another vendor.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# Background processes must not read the terminal (ddsperf reads commands from stdin; a
# background read stops the whole test with SIGTTIN).
exec </dev/null
# shellcheck source=lib/perf.bash
source "$(dirname "$0")/lib/perf.bash"

pick() { [[ -x "$REPO_ROOT/target/release/$1" ]] && echo "$REPO_ROOT/target/release/$1" || echo "$REPO_ROOT/target/debug/$1"; }
NODE_BIN="${NODE_BIN:-$(pick tessera-node)}"
TESSERA_BIN="$(pick tessera)"
[[ -x "$NODE_BIN" ]] || fail "$NODE_BIN missing (cargo build -p tessera-node)"
[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build -p tessera-cli)"
[[ -x "$DDSPERF" ]] || fail "ddsperf not found (scripts/install-deps installs cyclonedds-tools)"

NSB="tessera-nodeC-$$"
ip netns add "$NSB" || fail "cannot create namespace $NSB"
# set +e: under errexit, `(exit $rc)` would end the trap before _cleanup stops the processes.
trap 'rc=$?; ip netns del "$NSB" 2>/dev/null; set +e; (exit $rc); _cleanup' EXIT
ip link add va type veth peer name vb
ip link set vb netns "$NSB"
ip addr add 10.78.0.1/24 dev va
ip link set va up
ip route add 239.255.0.1/32 dev va
ip netns exec "$NSB" ip link set lo up
ip netns exec "$NSB" ip addr add 10.78.0.2/24 dev vb
ip netns exec "$NSB" ip link set vb up
ip netns exec "$NSB" ip route add 224.0.0.0/4 dev vb

CYC_B='<CycloneDDS><Domain><General><Interfaces><NetworkInterface name="vb"/></Interfaces></General></Domain></CycloneDDS>'
start_bg node env TESSERA_INTERFACE=va "$NODE_BIN" --stats 1
# An application that finds no node runs decentralized (and reaches nothing here): start
# them once the node serves.
wait_for_line node "tessera node: serving" 20
start_bg b_sub ip netns exec "$NSB" env CYCLONEDDS_URI="$CYC_B" "$DDSPERF" -D 8 sub
start_bg app env TESSERA_NODE=1 "$TESSERA_BIN" perf -D 8 pub 1000Hz size 16
rc=0; wait_pid b_sub 20 || rc=$?
stop_bg app
read -r total lost <<<"$(perf_last_sub "$WORK/b_sub.log")"
[[ -n "$total" && "$total" -ge 100 ]] || fail "ddsperf on host B received ${total:-nothing} (exit $rc)"
[[ "$lost" -eq 0 ]] || fail "ddsperf on host B lost $lost"
log "ddsperf on host B received $total samples through the node"

start_bg app_sub env TESSERA_NODE=1 "$TESSERA_BIN" perf -D 8 sub
start_bg b_pub ip netns exec "$NSB" env CYCLONEDDS_URI="$CYC_B" "$DDSPERF" -D 8 pub 1000Hz size 16
rc=0; wait_pid app_sub 20 || rc=$?
stop_bg b_pub
read -r total lost <<<"$(perf_last_sub "$WORK/app_sub.log")"
[[ -n "$total" && "$total" -ge 100 ]] || fail "perf sub on host A received ${total:-nothing} (exit $rc)"
[[ "$lost" -eq 0 ]] || fail "perf sub on host A lost $lost"
log "tessera perf sub on host A received $total samples from ddsperf through the node"
stop_bg node
log "ok"
