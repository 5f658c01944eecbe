# Helpers for the fault-harness tests (jepsen_*.sh). Source after common.bash.
#
# Provides: JEPSEN_BIN (tessera-jepsen next to $TESSERA_BIN unless set), jepsen_run.

JEPSEN_BIN="${JEPSEN_BIN:-$(dirname "$TESSERA_BIN")/tessera-jepsen}"
[[ -x "$JEPSEN_BIN" ]] || fail "$JEPSEN_BIN missing (cargo build --release -p tessera-jepsen)"
[[ -x "$(dirname "$JEPSEN_BIN")/tessera-jepsen-member" ]] || fail "tessera-jepsen-member missing"

# jepsen_run ARGS...: `tessera-jepsen run ARGS` with its output in $WORK/jepsen.log, printed;
# fails the test unless it exited 0.
jepsen_run() {
    log "running: tessera-jepsen run $*"
    local rc=0
    "$JEPSEN_BIN" run "$@" >"$WORK/jepsen.log" 2>&1 || rc=$?
    cat "$WORK/jepsen.log"
    [[ $rc -eq 0 ]] || fail "tessera-jepsen run exited $rc"
}
