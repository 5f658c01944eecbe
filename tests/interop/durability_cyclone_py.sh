#!/usr/bin/env bash
# A Cyclone DDS writer (PyPI's cyclonedds 11.0.1) to replicated Tessera durability services: the
# services hold their acknowledgments until their consensus log committed each sample, so the
# Cyclone writer keeps, resends and finally drops samples on the services' word alone. Three
# services (`tessera-durability --replicated`), a paced TRANSIENT Cyclone writer of 4 instances
# x 100 samples (depth 100); one service is killed with SIGKILL mid-stream; the writer's
# `wait_for_acks` returns once the two left committed everything; they keep the same 400
# samples. Then the writer is killed too, and a late Tessera TRANSIENT reader gets every sample
# from the services, in order, once, as the Cyclone writer's (PID_ORIGINAL_WRITER_INFO).
#
# Binaries: as tests/interop/durability_replicated.sh.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/durability.bash
source "$(dirname "$0")/lib/durability.bash"
python3 -c 'import cyclonedds' 2>/dev/null ||
    fail "python cyclonedds missing (scripts/install-deps installs cyclonedds==11.0.1)"
# A killed process's readers are unmatched after 3 s rather than 10.
export TESSERA_LEASE_DURATION=3

start_replicated s1 s2 s3

started=$SECONDS
# Paced (about 2 s of writing), so that s3 can be killed in the middle of the stream.
start_bg writer python3 "$REPO_ROOT/tests/interop/lib/durable_peer.py" transient 4 100 100 20 60
kill_mid_stream s3 400
wait_for_line writer "acknowledged" 60
writer_guid="$(awk '/^acknowledged/ {print $2}' "$WORK/writer.log")"
wait_kept s1 400 10
wait_kept s2 400 10
log "Cyclone writer $writer_guid acknowledged by s1 and s2 within $((SECONDS - started)) s of its start, both keep 400"
for s in s1 s2; do
    if grep -q "panicked" "$WORK/$s.log"; then fail "$s panicked"; fi
    # Held, not refused: a sample the log had not applied yet kept the ACKNACK base at it
    # (the Cyclone writer kept it) instead of being refused and resent.
    line="$(grep -E '^log:' "$WORK/$s.log" | tail -n 1)"
    refused="$(sed -E 's/.* ([0-9]+) refused until applied.*/\1/' <<<"$line")"
    dropped="$(sed -E 's/.* ([0-9]+) entries dropped.*/\1/' <<<"$line")"
    [[ "$refused" == "0" && "$dropped" == "0" ]] || fail "$s: $line"
    log "$s: $line"
done

kill9 writer
late_reader "$writer_guid" --kind transient --instances 4 --count 100 --depth 100
log "ok"
