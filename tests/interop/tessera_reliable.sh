#!/usr/bin/env bash
# Tessera <-> Tessera in two processes: reliable KEEP_ALL delivery of 100,000 samples loses,
# duplicates and reorders nothing — first with the default transports (shared memory between
# the two processes), then over UDP alone with 10 % of all incoming UDP datagrams dropped at
# random by nftables inside the namespace.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

PEER="$REPO_ROOT/target/release/examples/peer"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"

run_pair() {
    local tag="$1"
    start_bg "sub-$tag" "$PEER" sub --topic "Reliable$tag" --count 100000 --timeout 120
    sleep 0.3
    start_bg "pub-$tag" "$PEER" pub --topic "Reliable$tag" --count 100000 --linger 1 --timeout 120
    local rc=0
    wait_pid "sub-$tag" 150 || rc=$?
    [[ $rc -eq 0 ]] || fail "$tag: subscriber exited $rc"
    rc=0
    wait_pid "pub-$tag" 30 || rc=$?
    [[ $rc -eq 0 ]] || fail "$tag: publisher exited $rc"
    log "$tag: $(grep '^sub:' "$WORK/sub-$tag.log" | cut -c1-110)"
    log "$tag: $(grep 'acknowledged' "$WORK/pub-$tag.log")"
}

run_pair clean

# The loss is injected on UDP: keep the data there.
export TESSERA_TRANSPORTS=udp4
nft add table inet tessera_loss
nft add chain inet tessera_loss input '{ type filter hook input priority 0; }'
nft add rule inet tessera_loss input udp dport 7400-7700 numgen random mod 100 '<' 10 counter drop
run_pair loss10
dropped=$(nft list chain inet tessera_loss input | grep -o 'packets [0-9]*' | awk '{print $2}')
log "nftables dropped ${dropped:-0} datagrams"
[[ "${dropped:-0}" -gt 1000 ]] || fail "loss injection did not drop anything"
log "ok"
