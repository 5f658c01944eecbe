# Shared helpers for tests/interop/*.sh. Source it first:
#
#   # shellcheck source=lib/common.bash
#   source "$(dirname "$0")/lib/common.bash"
#
# It re-executes the calling test inside a private network namespace (scripts/netns-run) when
# it is not already in one, so that DDS discovery never reaches the machine's interfaces; sets
# `set -euo pipefail`; creates $WORK (a temporary directory for logs, removed at exit unless
# KEEP_WORK=1); and installs an EXIT trap that kills every process started with `start_bg`.
#
# Provides: REPO_ROOT, TESSERA_BIN, DDSPERF, start_bg, wait_pid, stop_bg, dump_logs, fail, log.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
export REPO_ROOT

if [[ "${TESSERA_IN_NETNS:-}" != "1" ]]; then
    exec "$REPO_ROOT/scripts/netns-run" "$0" "$@"
fi

TESSERA_BIN="${TESSERA_BIN:-$REPO_ROOT/target/release/tessera}"
DDSPERF="${DDSPERF:-$(command -v ddsperf || echo /usr/bin/ddsperf)}"
export TESSERA_BIN DDSPERF

TEST_NAME="$(basename "$0" .sh)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tessera-${TEST_NAME}.XXXXXX")"
export WORK

declare -A _BG_PIDS=()   # name -> pid

log() { printf '[%s] %s\n' "$TEST_NAME" "$*"; }

# Prints the tail of every log in $WORK.
dump_logs() {
    local f
    for f in "$WORK"/*.log; do
        [[ -e "$f" ]] || continue
        echo "----- $(basename "$f") (last 40 lines) -----"
        tail -n 40 "$f"
    done
}

fail() {
    log "FAIL: $*"
    dump_logs
    exit 1
}

# start_bg NAME CMD [ARGS...]: starts CMD in the background, output to $WORK/NAME.log.
# Its pid is in ${_BG_PIDS[NAME]} and printed by `bg_pid NAME`.
start_bg() {
    local name="$1"
    shift
    "$@" >"$WORK/$name.log" 2>&1 &
    _BG_PIDS[$name]=$!
    log "started $name (pid $!): $*"
}

bg_pid() { echo "${_BG_PIDS[$1]}"; }

# wait_pid NAME SECONDS: waits for a process started by start_bg; returns its exit status,
# or kills it and returns 124 after SECONDS.
wait_pid() {
    local name="$1" secs="$2" pid="${_BG_PIDS[$1]}" i rc
    for ((i = 0; i < secs * 10; i++)); do
        if ! kill -0 "$pid" 2>/dev/null; then
            rc=0
            wait "$pid" || rc=$?
            unset '_BG_PIDS[$name]'
            return "$rc"
        fi
        sleep 0.1
    done
    log "$name (pid $pid) still running after ${secs}s; killing it"
    stop_bg "$name"
    return 124
}

# stop_bg NAME: TERM, then KILL after 2 s, a process started by start_bg.
# Waits until background process NAME's log has a line matching PATTERN; fails after SECONDS
# or when NAME exits first.
wait_for_line() { # NAME PATTERN SECONDS
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        grep -q "$2" "$WORK/$1.log" 2>/dev/null && return 0
        kill -0 "$(bg_pid "$1")" 2>/dev/null || fail "$1 exited early"
        sleep 0.1
    done
    fail "$1: no '$2' within $3 s"
}

stop_bg() {
    local name="$1" pid="${_BG_PIDS[$1]:-}" i
    [[ -n "$pid" ]] || return 0
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 20; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset '_BG_PIDS[$name]'
}

# Fast DDS leaves segments in /dev/shm behind processes that stopped: `fastdds shm clean`
# removes the data segments no live process holds, but not the port segment
# (`fastrtps_port7410` and its semaphore). What the test created and no process maps any more
# goes too.
_SHM_BEFORE="$(ls /dev/shm 2>/dev/null || true)"
_clean_fastdds_shm() {
    local f
    if command -v fastdds >/dev/null 2>&1; then
        fastdds shm clean >/dev/null 2>&1 || true
    fi
    for f in /dev/shm/fastrtps_* /dev/shm/sem.fastrtps_*; do
        [[ -e "$f" ]] || continue
        grep -qxF "${f#/dev/shm/}" <<<"$_SHM_BEFORE" && continue
        grep -qsF "$f" /proc/[0-9]*/maps && continue
        rm -f "$f"
    done
}

_cleanup() {
    local rc=$? name
    for name in "${!_BG_PIDS[@]}"; do
        stop_bg "$name"
    done
    _clean_fastdds_shm
    if [[ "${KEEP_WORK:-0}" == "1" || $rc -ne 0 ]]; then
        log "logs kept in $WORK"
    else
        rm -rf "$WORK"
    fi
    exit "$rc"
}
trap _cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
