#!/usr/bin/env bash
# Sanity check of the namespace harness: Cyclone's own ddsperf publisher and subscriber find
# each other over multicast on lo inside the namespace, exchange data for ~3 s and both exit 0.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

[[ -x "$DDSPERF" ]] || fail "ddsperf not found (scripts/install-deps installs cyclonedds-tools)"
log "CYCLONEDDS_URI=$CYCLONEDDS_URI"

start_bg sub "$DDSPERF" -D 3 -Qminmatch:1 -Qsamples:500 sub
start_bg pub "$DDSPERF" -D 3 -Qminmatch:1 pub 1kHz

rc_sub=0
wait_pid sub 20 || rc_sub=$?
rc_pub=0
wait_pid pub 20 || rc_pub=$?

[[ $rc_sub -eq 0 ]] || fail "ddsperf sub exited $rc_sub"
[[ $rc_pub -eq 0 ]] || fail "ddsperf pub exited $rc_pub"
grep -q "participant .*: new" "$WORK/sub.log" || fail "subscriber saw no participant"
total=$(grep -o 'total [0-9]*' "$WORK/sub.log" | tail -n 1 | awk '{print $2}')
log "ok: subscriber received ${total:-?} samples"
