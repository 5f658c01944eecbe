# Helpers for the QoS-matrix tests (qos_matrix*.sh): processes of one cell live in a directory
# DIR as DIR/NAME.log and DIR/NAME.pid, so cells can run in parallel subshells. Source after
# lib/common.bash.

# qm_start DIR NAME CMD...: starts CMD in the background, output to DIR/NAME.log.
qm_start() {
    local dir="$1" name="$2"
    shift 2
    "$@" >"$dir/$name.log" 2>&1 &
    echo $! >"$dir/$name.pid"
}

# qm_wait_line LOG RE SECONDS: waits for a line matching RE in LOG.
qm_wait_line() {
    local log="$1" re="$2" i
    for ((i = 0; i < $3 * 50; i++)); do
        grep -q "$re" "$log" 2>/dev/null && return 0
        sleep 0.02
    done
    return 1
}

# qm_wait_exit PID SECONDS: waits for a child to exit; 124 after SECONDS.
qm_wait_exit() {
    local pid="$1" i
    for ((i = 0; i < $2 * 20; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.05
    done
    return 124
}

# qm_stop_all DIR: TERM, then KILL, every process started in DIR.
qm_stop_all() {
    local dir="$1" f pid
    for f in "$dir"/*.pid; do
        [[ -e "$f" ]] || continue
        pid="$(cat "$f")"
        kill -TERM "$pid" 2>/dev/null || true
        qm_wait_exit "$pid" 2 || kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}

# qm_verdict LOG: the role's verdict ("pass", "FAIL: ..."), or why there is none.
qm_verdict() {
    local v
    v="$(grep -m1 '^verdict ' "$1" 2>/dev/null | cut -c9-)"
    if [[ -n "$v" ]]; then
        echo "$v"
    elif [[ -e "$1" ]]; then
        echo "FAIL: no verdict ($(tail -n 1 "$1" | cut -c1-120))"
    else
        echo "FAIL: not started"
    fi
}

# qm_result_line LABEL DIR: `PASS LABEL: summary` or `FAIL LABEL: writer ...; reader ...`.
qm_result_line() {
    local label="$1" dir="$2" w r summary
    w="$(qm_verdict "$dir/writer.log")"
    r="$(qm_verdict "$dir/reader.log")"
    summary="$(grep -m1 '^summary ' "$dir/reader.log" 2>/dev/null | cut -c9-)"
    if [[ "$w" == pass && "$r" == pass ]]; then
        echo "PASS $label: ${summary:-ok}"
    else
        echo "FAIL $label: writer ${w}; reader ${r}${summary:+ [$summary]}"
    fi
}
