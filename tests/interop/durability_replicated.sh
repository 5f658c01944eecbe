#!/usr/bin/env bash
# Replicated PERSISTENT durability services (`tessera-durability --replicated`: one consensus
# log) across kill -9: three services, each with its own store; a writer writes 4 instances x
# 300 samples (service depth 300); one service is killed with SIGKILL mid-stream; the writer's
# samples are acknowledged by the two left; they keep the same 1,200 samples. The killed one
# restarts on its own (partial) store and catches up to 1,200 from the group. Then the writer
# and the two others are killed; a late PERSISTENT reader gets every sample from the restarted
# one alone, in order, once, as the writer's.
#
# Binaries: the release ones when built (scripts/test builds them), else the debug ones
# (cargo build -p tessera-durability --bins --examples); BUILD_DIR overrides.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/durability.bash
source "$(dirname "$0")/lib/durability.bash"
# A killed process's readers are unmatched after 3 s rather than 10: the writer's
# acknowledgments wait for them.
export TESSERA_LEASE_DURATION=3

start_replicated s1 s2 s3

started=$SECONDS
# Paced (about 3 s of writing): the services take samples as fast as they come, so an unpaced
# stream would be over before s3 could be killed in the middle of it.
start_bg writer "$PEER" pub --kind persistent --instances 4 --count 300 --depth 300 --timeout 60 \
    --interval-ms 10
# Mid-stream: once s3 applied part of the stream from the log.
kill_mid_stream s3 1200
wait_for_line writer "acknowledged" 60
writer_guid="$(awk '/^acknowledged/ {print $2}' "$WORK/writer.log")"
wait_kept s1 1200 10
wait_kept s2 1200 10
log "writer $writer_guid acknowledged by s1 and s2 within $((SECONDS - started)) s of its start, both keep 1200"

start_bg s3b "$SERVICE" --replicated --store "$WORK/s3" --stats 1
wait_for_line s3b "ready" 20
wait_kept s3b 1200 40
log "s3 restarted on its store and caught up: $(grep -E '^log:' "$WORK/s3b.log" | tail -n 1)"
for s in s1 s2 s3b; do
    if grep -q "panicked" "$WORK/$s.log"; then fail "$s panicked"; fi
    dropped="$(grep -E '^log:' "$WORK/$s.log" | tail -n 1 | sed -E 's/.* ([0-9]+) entries dropped.*/\1/')"
    [[ "${dropped:-0}" == "0" ]] || fail "$s dropped $dropped log entries"
done

kill9 writer s1 s2
late_reader "$writer_guid" --instances 4 --count 300 --depth 300
# SIGTERM: a clean exit (its shared-memory segment removed) even with its group gone.
s3b_pid="$(bg_pid s3b)"
kill -TERM "$s3b_pid"
for ((i = 0; i < 50; i++)); do
    kill -0 "$s3b_pid" 2>/dev/null || break
    sleep 0.1
done
kill -0 "$s3b_pid" 2>/dev/null && fail "s3b still running 5 s after SIGTERM"
wait "$s3b_pid" || fail "s3b exited $? on SIGTERM"
unset '_BG_PIDS[s3b]'
log "s3b left within $((i / 10)).$((i % 10)) s of SIGTERM"
log "ok"
