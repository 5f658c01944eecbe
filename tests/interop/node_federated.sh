#!/usr/bin/env bash
# The federated architecture across two namespace hosts joined by a veth pair:
#   host A (10.77.0.1): `tessera-node` and two applications with TESSERA_NODE=1 (shared memory
#   and the loopback node plane only; the node is their only way out);
#   host B (10.77.0.2): plain Tessera participants (the example `peer`).
# Checks: data flows both ways (A app -> B, B -> A app), reliable, every sample once; B sees one
# participant of host A (the node); an application killed with -9 leaves the node serving the
# other; a node killed with -9 and restarted serves the application that was attached to the
# old one (it reattaches by itself); a node stopped by SIGTERM leaves cleanly. Unicast
# discovery between the hosts (TESSERA_PEERS), no multicast needed.
#
#   tests/interop/node_federated.sh   (PEER=... NODE_BIN=... to pick binaries)
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# Background processes must not read the terminal (ddsperf reads commands from stdin; a
# background read stops the whole test with SIGTTIN).
exec </dev/null

# Release builds (what scripts/test makes) when present, else debug ones.
pick() { [[ -x "$REPO_ROOT/target/release/$1" ]] && echo "$REPO_ROOT/target/release/$1" || echo "$REPO_ROOT/target/debug/$1"; }
PEER="${PEER:-$(pick examples/peer)}"
NODE_BIN="${NODE_BIN:-$(pick tessera-node)}"
[[ -x "$PEER" ]] || fail "$PEER missing (cargo build -p tessera --example peer)"
[[ -x "$NODE_BIN" ]] || fail "$NODE_BIN missing (cargo build -p tessera-node)"

NSB="tessera-nodeB-$$"
ip netns add "$NSB" || fail "cannot create namespace $NSB"
# set +e: under errexit, `(exit $rc)` would end the trap before _cleanup stops the processes.
trap 'rc=$?; ip netns del "$NSB" 2>/dev/null; set +e; (exit $rc); _cleanup' EXIT
ip link add va type veth peer name vb
ip link set vb netns "$NSB"
ip addr add 10.77.0.1/24 dev va
ip link set va up
ip netns exec "$NSB" ip link set lo up
ip netns exec "$NSB" ip addr add 10.77.0.2/24 dev vb
ip netns exec "$NSB" ip link set vb up

export TESSERA_MULTICAST=false TESSERA_TRANSPORTS=udp4,shm TESSERA_LEASE_DURATION=2
A=(env TESSERA_INTERFACE=va TESSERA_PEERS=10.77.0.2)
B=(ip netns exec "$NSB" env TESSERA_INTERFACE=vb TESSERA_PEERS=10.77.0.1)
APP=(env TESSERA_NODE=1)

start_bg node "${A[@]}" "$NODE_BIN" --stats 1
# An application that finds no node runs decentralized: start them once the node serves.
wait_for_line node "tessera node: serving" 20

# Both ways at once: A's app1 publishes Up to B, B publishes Down to A's app2.
start_bg b_sub "${B[@]}" "$PEER" sub --topic Up --count 200 --timeout 40
start_bg b_pub "${B[@]}" "$PEER" pub --topic Down --count 200 --linger 10
start_bg app2 "${APP[@]}" "$PEER" sub --topic Down --count 200 --timeout 40
start_bg app1 "${APP[@]}" "$PEER" pub --topic Up --count 200 --linger 60
rc=0; wait_pid b_sub 45 || rc=$?
[[ $rc -eq 0 ]] || fail "host B's subscriber (A app -> B) exited $rc"
rc=0; wait_pid app2 45 || rc=$?
[[ $rc -eq 0 ]] || fail "A's app2 (B -> A app) exited $rc"
# B's subscriber knows B's own publisher and the node: 2 (4 if A's applications were on the
# network).
grep -q "^peers: 2$" "$WORK/b_sub.log" || fail "host B saw participants of host A besides the node"
log "both ways: B got $(grep -o 'received [0-9]* of [0-9]*' "$WORK/b_sub.log"), A's app2 $(grep -o 'received [0-9]* of [0-9]*' "$WORK/app2.log")"
wait_pid b_pub 20 || true

# kill -9 an application: the node keeps serving the other ones.
kill -KILL "$(bg_pid app1)"
wait_pid app1 5 || true
start_bg app3 "${APP[@]}" "$PEER" sub --topic Down2 --count 100 --timeout 40
start_bg b_pub2 "${B[@]}" "$PEER" pub --topic Down2 --count 100 --linger 10
rc=0; wait_pid app3 45 || rc=$?
[[ $rc -eq 0 ]] || fail "after app1 was killed, app3 got nothing through the node (exit $rc)"
kill -0 "$(bg_pid node)" 2>/dev/null || fail "the node died with app1"
log "node survived kill -9 of an application"
wait_pid b_pub2 20 || true

# kill -9 the node and restart it: an application attached to the old node reattaches.
start_bg app4 "${APP[@]}" "$PEER" sub --topic Again --count 100 --timeout 60
sleep 1
kill -KILL "$(bg_pid node)"
wait_pid node 5 || true
start_bg node2 "${A[@]}" "$NODE_BIN" --stats 1
start_bg b_pub3 "${B[@]}" "$PEER" pub --topic Again --count 100 --linger 15
rc=0; wait_pid app4 60 || rc=$?
[[ $rc -eq 0 ]] || fail "app4 did not reattach to the restarted node (exit $rc)"
log "application reattached to the restarted node"
stop_bg b_pub3
# SIGTERM: the node leaves cleanly (goodbyes, presence file removed).
stop_bg node2
grep -q "tessera node: stopped" "$WORK/node2.log" || fail "the node did not stop cleanly on SIGTERM"
! ls /dev/shm/tessera-node-0-"$(stat -L -c %i /proc/self/ns/net)" 2>/dev/null || fail "presence file left behind"
log "ok"
