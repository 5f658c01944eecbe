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
