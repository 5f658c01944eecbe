#!/usr/bin/env bash
# The shape conformance suite (tests/conformance/shape_suite.py) between `tessera shape` and a
# Cyclone DDS 11 shape peer (PyPI's cyclonedds: tests/conformance/cyclone_shape.py), in both
# directions. What the Cyclone peer cannot do (SQL content filters, time-based filter,
# Presentation) it reports "not supported"; every other test must pass.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

TOOLS="$(dirname "$TESSERA_BIN")/tessera-tools"
[[ -x "$TOOLS" ]] || fail "tessera-tools not built (cargo build --release -p tessera-cli --bins)"
python3 -c "import cyclonedds" 2>/dev/null || fail "python3 cannot import cyclonedds (scripts/install-deps)"
SUITE="$REPO_ROOT/tests/conformance/shape_suite.py"
CYCLONE="python3 $REPO_ROOT/tests/conformance/cyclone_shape.py"

run() { # NAME PUB SUB
    local out="$WORK/$1.log"
    if ! python3 "$SUITE" --verbose --allow-unsupported --pub "$2" --sub "$3" >"$out" 2>&1; then
        cat "$out"
        fail "$1: the shape suite failed"
    fi
    grep -E '^(FAIL|UNSUPPORTED)' "$out" || true
    local summary
    summary="$(tail -n 1 "$out")"
    [[ "$summary" == *" 0 failed"* ]] || fail "$1: unexpected summary: $summary"
    log "$1: $summary"
}

run tessera-to-cyclone "$TOOLS shape" "$CYCLONE"
run cyclone-to-tessera "$CYCLONE" "$TOOLS shape"
