#!/usr/bin/env bash
# A BACKUP discovery server (`tessera discovery-server -b`) killed with -9 and restarted
# restores what it knew from its file: a subscriber that joined the first server is known to
# the second one at start ("restored 1 client(s)"), and a publisher that joins after the
# restart exchanges 200 reliable samples with it. A damaged backup file is moved aside and the
# server starts empty.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/ds.bash
source "$(dirname "$0")/lib/ds.bash"

PEER="${PEER:-$REPO_ROOT/target/release/examples/peer}"
[[ -x "$PEER" ]] || fail "test peer not built (cargo build --release -p tessera --examples)"
[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
FILE="$WORK/ds.backup"
SERVER=("$TESSERA_BIN" discovery-server -i 0 -l 127.0.0.1 -p 11811 --backup-file "$FILE")

start_bg server1 "${SERVER[@]}"
ds_wait_running server1
export ROS_DISCOVERY_SERVER=127.0.0.1:11811
start_bg sub "$PEER" sub --topic DsBackup --count 200 --timeout 30
for ((i = 0; i < 50; i++)); do
    [[ -s "$FILE" ]] && break
    sleep 0.1
done
[[ -s "$FILE" ]] || fail "no backup written"
sleep 0.5
kill -9 "$(bg_pid server1)"
stop_bg server1

start_bg server2 "${SERVER[@]}"
ds_wait_running server2
grep -q "^restored 1 client(s)" "$WORK/server2.log" || fail "the restarted server restored nothing"
start_bg pub "$PEER" pub --topic DsBackup --count 200 --linger 3 --timeout 20
rc=0
wait_pid sub 40 || rc=$?
[[ $rc -eq 0 ]] || fail "subscriber exited $rc"
rc=0
wait_pid pub 30 || rc=$?
[[ $rc -eq 0 ]] || fail "publisher exited $rc"
grep -q "^sub: received 200 of 200 " "$WORK/sub.log" || fail "subscriber did not get every sample"
log "after the restart: $(grep "^sub:" "$WORK/sub.log" | cut -c1-70)"
stop_bg server2

# A damaged file: refused, kept aside as .bad, the server runs.
printf 'TSDSBK01 but scribbled' >"$FILE"
start_bg server3 "${SERVER[@]}"
ds_wait_running server3
[[ -f "$WORK/ds.bad" ]] || fail "the damaged backup was not moved aside"
stop_bg server3
log "ok"
