# shellcheck shell=bash
# What the bench scripts of built-on-demand workers (fastdds-perf, cyclone-perf) share; sourced
# after common.bash, with BENCH_BIN set.

# "NAMESPACES PROCESSES" left: the bench's namespaces, and this tree's `tessera perf` and WORKER
# processes (other test runs may share the machine).
worker_leftovers() { # WORKER
    local ns procs
    ns="$(ip netns list 2>/dev/null | grep -c '^tb-' || true)"
    procs="$(pgrep -f "$TESSERA_BIN perf|$(dirname "$BENCH_BIN")/$1" -c || true)"
    echo "$ns $procs"
}

# Runs a 16 B latency cell of `tessera` and PAIR with the worker disabled (ENV_VAR empty): the
# PAIR cells must be skipped with a note starting with NOTE and the run go on.
worker_skip_check() { # PAIR ENV_VAR NOTE
    local pair="$1" var="$2" note="$3"
    cat >"$WORK/skip.toml" <<TOML
name = "worker-skip"
rounds = 1
pairs = ["tessera", "$pair"]
[[experiment]]
name = "latency"
kind = "latency"
size = 16
duration_s = 1.0
warmup_s = 0.2
TOML
    local rc=0
    env "$var=" "$TESSERA_BIN" bench "$WORK/skip.toml" --out "$WORK/skip" \
        --no-progress --expect 'failed==0' >"$WORK/skip.log" 2>&1 || rc=$?
    [[ $rc -eq 0 ]] || { cat "$WORK/skip.log"; fail "the run without $pair's worker exited $rc"; }
    python3 - "$WORK/skip/results.json" "$note" <<'PY' || fail "skip check"
import json, sys
rs = json.load(open(sys.argv[1]))
assert {p["pair"] for p in rs["points"]} == {"tessera"}, rs["points"]
assert any(n.startswith(sys.argv[2]) for n in rs["notes"]), rs["notes"]
PY
    log "without the worker: $pair skipped with a note"
}

# Fails unless a WORKER binary is cached where the bench looks: beside the bench binary, in the
# same target directory's release or dist profile, or under the user's cache directory.
worker_cached() { # WORKER
    local target dir
    target="$(dirname "$(dirname "$BENCH_BIN")")"
    for dir in "$(dirname "$BENCH_BIN")" "$target/release" "$target/dist" \
        "${XDG_CACHE_HOME:-$HOME/.cache}/tessera"; do
        compgen -G "$dir/$1-*" >/dev/null && return 0
    done
    fail "no $1 binary was built"
}
