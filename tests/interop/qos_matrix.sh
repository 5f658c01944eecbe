#!/usr/bin/env bash
# The QoS matrix, Tessera <-> Tessera in two processes: every writer x reader combination of
# RELIABILITY (rel, be), DURABILITY (vol, tl) and HISTORY (k1, k8, all), with the reader
# started first (rfirst) or joining late (wfirst), checked against what DDS promises:
# - incompatible pairs (be writer x rel reader, vol writer x tl reader) do not match and both
#   sides report OFFERED/REQUESTED_INCOMPATIBLE_QOS;
# - a reliable reader gets every live sample (paced, so KEEP_LAST replaces nothing), in order,
#   once; a best-effort one an in-order subset without duplicates that does not stall;
# - a late TRANSIENT_LOCAL reliable reader first gets the writer's retained history (per the
#   writer's KEEP_LAST depth / KEEP_ALL), a VOLATILE one only what follows the match.
# The promise itself is in crates/tessera/examples/qos_matrix/promise.rs; `qos_matrix cells`
# lists the cells (incompatible ones pruned to one history pair per combination and order).
#
# Environment: QOS_MATRIX_JOBS (cells run at once, default 6), QOS_MATRIX_FILTER (run only
# cells whose label contains this), QOS_MATRIX_LIST_ONLY=1 (print the cells and stop).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/qos_matrix.bash
source "$(dirname "$0")/lib/qos_matrix.bash"

QM="$REPO_ROOT/target/release/examples/qos_matrix"
[[ -x "$QM" ]] || fail "$QM not built (cargo build --release -p tessera --examples)"
jobs_max="${QOS_MATRIX_JOBS:-6}"
filter="${QOS_MATRIX_FILTER:-}"

mapfile -t cells < <("$QM" cells)
[[ ${#cells[@]} -gt 0 ]] || fail "qos_matrix cells printed nothing"
if [[ "${QOS_MATRIX_LIST_ONLY:-0}" == "1" ]]; then
    printf '%s\n' "${cells[@]}"
    exit 0
fi

# run_cell IDX "CELL [default]": one writer and one reader process; the result line goes to
# $WORK/IDX.result. Runs in a background subshell, which stops its own processes.
run_cell() {
    local idx="$1" cell="${2%% *}" tag="" dir="$WORK/cell$1"
    [[ "$2" == *" default" ]] && tag=" (default writer x default reader)"
    mkdir -p "$dir"
    local -a args=(--cell "$cell" --domain $((idx % 100)) --topic "QosMatrix$idx" --linger 30)
    local first second
    if [[ "$cell" == *@wfirst ]]; then first=writer second=reader; else first=reader second=writer; fi
    qm_start "$dir" "$first" "$QM" "$first" "${args[@]}"
    if qm_wait_line "$dir/$first.log" '^ready$' 10; then
        qm_start "$dir" "$second" "$QM" "$second" "${args[@]}"
        qm_wait_exit "$(cat "$dir/reader.pid" 2>/dev/null || echo 0)" 30 || true
        # The writer reports after its live stream and acknowledgments; then lingers.
        qm_wait_line "$dir/writer.log" '^verdict ' 10 || true
    fi
    qm_stop_all "$dir"
    qm_result_line "$cell$tag" "$dir" >"$WORK/$idx.result"
}

t0=$SECONDS
declare -a running=()
n=0
for i in "${!cells[@]}"; do
    [[ -z "$filter" || "${cells[$i]}" == *"$filter"* ]] || continue
    n=$((n + 1))
    while [[ $(jobs -rp | wc -l) -ge $jobs_max ]]; do
        wait -n || true
    done
    run_cell "$i" "${cells[$i]}" &
    running+=($!)
    _BG_PIDS["cell$i"]=$!
done
for pid in "${running[@]}"; do
    wait "$pid" || true
done
_BG_PIDS=()
log "ran $n cells in $((SECONDS - t0)) s ($jobs_max at a time)"

passed=0 failed=0
for i in "${!cells[@]}"; do
    [[ -e "$WORK/$i.result" ]] || continue
    line="$(cat "$WORK/$i.result")"
    echo "$line"
    if [[ "$line" == PASS* ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done
echo "qos matrix: $passed passed, $failed failed"
if [[ $failed -gt 0 ]]; then
    log "per-cell logs in $WORK/cell<N>/"
    exit 1
fi
[[ $passed -gt 0 ]] || fail "no cell ran"
log "ok"
