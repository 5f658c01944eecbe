#!/usr/bin/env bash
# The conformance suite of tests/conformance/shape_suite.py (one test of every kind the OMG
# DDS-RTPS interoperability suite has) with `tessera shape` as publisher and subscriber.
# Every test must pass, presentation at INSTANCE, TOPIC and GROUP access scope included.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

TOOLS="$(dirname "$TESSERA_BIN")/tessera-tools"
[[ -x "$TOOLS" ]] || fail "tessera-tools not built (cargo build --release -p tessera-cli --bins)"
out="$WORK/suite.log"
if ! python3 "$REPO_ROOT/tests/conformance/shape_suite.py" --verbose \
    --pub "$TOOLS shape" --sub "$TOOLS shape" >"$out" 2>&1; then
    cat "$out"
    fail "the shape suite failed"
fi
cat "$out"
summary="$(tail -n 1 "$out")"
[[ "$summary" == *" 0 failed"* ]] || fail "unexpected summary: $summary"
log "ok: $summary"
