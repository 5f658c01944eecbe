#!/usr/bin/env bash
# PERSISTENT durability across a kill -9 of everything: a writer writes 2 instances x 20
# samples (service depth 5) and waits until the durability service acknowledged them; the
# writer AND the service are killed with SIGKILL; only the service is restarted (same --store);
# a late PERSISTENT reader must receive the last 5 values of each instance, in order, once,
# with the original writer's GUID. Then damaged stores: the service refuses to start with a
# message naming the file (no panic).
#
# Binaries: the release ones when built (scripts/test builds them), else the debug ones
# (cargo build -p tessera-durability --bins --examples); BUILD_DIR overrides.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/durability.bash
source "$(dirname "$0")/lib/durability.bash"
STORE="$WORK/store"

start_bg service1 "$SERVICE" --store "$STORE"
wait_for_line service1 "ready" 20
start_bg writer "$PEER" pub --kind persistent --instances 2 --count 20 --depth 5 --timeout 30
wait_for_line writer "acknowledged" 40
writer_guid="$(awk '/^acknowledged/ {print $2}' "$WORK/writer.log")"
log "writer $writer_guid acknowledged; kill -9 of the writer and the service"
kill9 writer service1
ls -l "$STORE"

start_bg service2 "$SERVICE" --store "$STORE"
wait_for_line service2 "ready" 20
late_reader "$writer_guid" --instances 2 --count 20 --depth 5
stop_bg service2

# Damaged stores: a clear error naming the file, exit status 1, no panic, and nothing joins
# the domain. The header scribbled over, then the file truncated to a third.
check_damaged() { # TAG PYTHON-MUTATION
    mkdir -p "$WORK/$1"
    cp "$STORE/durability.redb" "$WORK/$1/"
    python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); $2; open(p,'wb').write(b)" \
        "$WORK/$1/durability.redb"
    local rc=0
    timeout 20 "$SERVICE" --store "$WORK/$1" >"$WORK/$1.log" 2>&1 || rc=$?
    log "$1: exit $rc: $(cat "$WORK/$1.log")"
    [[ $rc -eq 1 ]] || fail "service on a $1 store exited $rc (expected 1)"
    grep -q "durability.redb" "$WORK/$1.log" || fail "$1: the error does not name the file"
    if grep -q "panicked" "$WORK/$1.log"; then fail "$1: the service panicked"; fi
}
check_damaged scribbled 'b[0:512] = bytes(x ^ 0x5A for x in b[0:512])'
check_damaged truncated 'b = b[: len(b) // 3]'
log "ok"
