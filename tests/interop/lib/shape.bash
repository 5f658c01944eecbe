# shellcheck shell=bash
# The shape suite between two shape applications of different vendors (sourced after common.bash).
#   shape_vendor_run NAME PUB SUB [SUITE OPTIONS...]
# runs tests/conformance/shape_suite.py with --allow-unsupported (and the options given, e.g.
# --peer-defect), prints what was not supported or a peer defect, and fails unless 0 failed.
shape_vendor_run() {
    local name="$1" pub="$2" sub="$3"
    shift 3
    local out="$WORK/$name.log"
    if ! python3 "$REPO_ROOT/tests/conformance/shape_suite.py" --verbose --allow-unsupported "$@" \
        --pub "$pub" --sub "$sub" >"$out" 2>&1; then
        cat "$out"
        fail "$name: the shape suite failed"
    fi
    grep -E '^(FAIL|UNSUPPORTED|PEER-DEFECT)' "$out" || true
    local summary
    summary="$(tail -n 1 "$out")"
    [[ "$summary" == *" 0 failed"* ]] || fail "$name: unexpected summary: $summary"
    log "$name: $summary"
}
