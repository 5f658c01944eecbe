# shellcheck shell=bash
# What the durability service's process tests share: the binaries (the release ones when
# built, as scripts/test does, else the debug ones: cargo build -p tessera-durability --bins
# --examples; BUILD_DIR overrides) and waiting for a line in a process's log.

if [[ -z "${BUILD_DIR:-}" ]]; then
    BUILD_DIR="$REPO_ROOT/target/debug"
    [[ -x "$REPO_ROOT/target/release/tessera-durability" &&
        -x "$REPO_ROOT/target/release/examples/durable_peer" ]] && BUILD_DIR="$REPO_ROOT/target/release"
fi
SERVICE="$BUILD_DIR/tessera-durability"
PEER="$BUILD_DIR/examples/durable_peer"
[[ -x "$SERVICE" && -x "$PEER" ]] ||
    fail "not built: cargo build -p tessera-durability --bins --examples"

kill9() { # NAME...: kill -9 of background processes, reaped and forgotten
    local n
    for n in "$@"; do kill -9 "$(bg_pid "$n")" 2>/dev/null || true; done
    for n in "$@"; do
        wait "$(bg_pid "$n")" 2>/dev/null || true
        unset "_BG_PIDS[$n]"
    done
}

late_reader() { # WRITER_GUID ARGS...: a late PERSISTENT reader (durable_peer sub ARGS
    # --writer WRITER_GUID) that must get what it expects within 60 s; prints its log's end.
    local guid="$1" rc=0
    shift
    start_bg reader "$PEER" sub --kind persistent "$@" --writer "$guid" --timeout 30
    wait_pid reader 60 || rc=$?
    tail -n 5 "$WORK/reader.log"
    [[ $rc -eq 0 ]] || fail "late reader exited $rc"
}

kept() { # NAME: the samples a service's last stats line (--stats) reports for topic Durable
    { grep '^Durable:' "$WORK/$1.log" || true; } | tail -n 1 | awk '{print $2}'
}

wait_kept() { # NAME COUNT SECONDS: until service NAME keeps COUNT samples
    local i
    for ((i = 0; i < $3 * 10; i++)); do
        [[ "$(kept "$1")" == "$2" ]] && return 0
        sleep 0.1
    done
    fail "$1 keeps $(kept "$1") samples, not $2, after $3 s"
}

start_replicated() { # NAME...: replicated services, each on its store $WORK/NAME, ready
    local s
    for s in "$@"; do
        start_bg "$s" "$SERVICE" --replicated --store "$WORK/$s" --stats 1
    done
    for s in "$@"; do wait_for_line "$s" "ready" 20; done
}

kill_mid_stream() { # NAME TOTAL: kill -9 of service NAME once it keeps part of a TOTAL stream
    local i n=""
    for ((i = 0; i < 300; i++)); do
        n="$(kept "$1")"
        [[ -n "$n" && "$n" -gt 0 ]] && break
        sleep 0.1
    done
    [[ "${n:-0}" -lt "$2" ]] || fail "$1 had the whole stream before it could be killed mid-stream"
    log "$1 keeps ${n:-0} samples: kill -9"
    kill9 "$1"
}
