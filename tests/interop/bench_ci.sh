#!/usr/bin/env bash
# `tessera bench ci`: a short end-to-end run of every experiment kind (latency, throughput,
# 1-to-N, rate stepping, discovery, late joiner, reliability) with Tessera, Cyclone DDS, the raw
# UDP floor and a mixed pair. Checks that every point succeeded, that the result directory holds
# every file, and that nothing is left behind: no namespace, no link, no worker process — also
# after the run is interrupted with Ctrl-C (SIGINT).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

# `tessera bench` runs the tessera-bench binary beside tessera, which starts the workers:
# `tessera perf`, `tessera-bench udp` (the raw UDP floor), `tessera-bench worker`.
BENCH_BIN="$(dirname "$TESSERA_BIN")/tessera-bench"
[[ -x "$BENCH_BIN" ]] || fail "$BENCH_BIN missing (cargo build --release -p tessera-cli -p tessera-bench)"

leftovers() {
    local ns links procs
    ns="$(ip netns list 2>/dev/null | grep -c '^tb-' || true)"
    links="$(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -c '^tb' || true)"
    procs="$(pgrep -f "$TESSERA_BIN (perf|node|discovery-server)|$(dirname "$TESSERA_BIN")/tessera-node|$BENCH_BIN (udp|worker)|ddsperf" -c || true)"
    echo "$ns $links $procs"
}

out="$WORK/run"
log "running: tessera bench ci"
set +e
"$TESSERA_BIN" bench ci --out "$out" --no-progress --expect 'failed==0' >"$WORK/bench.log" 2>&1
rc=$?
set -e
cat "$WORK/bench.log"
[[ $rc -eq 0 ]] || fail "tessera bench ci exited $rc"

for f in results.json results.csv scenario.toml environment.json report.md report.html; do
    [[ -s "$out/$f" ]] || fail "missing $out/$f"
done
ls "$out"/charts/*.png >/dev/null 2>&1 || fail "no PNG charts"
grep -q "<svg" "$out/report.html" || fail "report.html has no inline SVG chart"

python3 - "$out/results.json" <<'PY' || fail "results.json check"
import json, sys
rs = json.load(open(sys.argv[1]))
kinds = {p["kind"] for p in rs["points"] if p["ok"]}
want = {"latency", "throughput", "rate_step", "discovery", "late_joiner", "reliability", "failure"}
missing = want - kinds
assert not missing, f"no successful point of kind(s) {missing}"
pairs = {p["pair"] for p in rs["points"] if p["ok"]}
for pair in ("tessera", "udp"):
    assert pair in pairs, f"no successful {pair} point"
central = [p for p in rs["points"] if p["kind"] == "discovery" and p["ok"]
           and p["params"].get("architecture") == "centralized"]
assert central, "no successful discovery point through a discovery server"
assert all(p["metrics"].get("discovery_datagrams", 0) > 0 for p in central), "no traffic counted"
fail = {p["params"]["architecture"]: p["metrics"] for p in rs["points"]
        if p["kind"] == "failure" and p["ok"]}
# One of two linked servers killed: data flows peer to peer, and the late reader is discovered.
red = fail["centralized-redundant"]
assert red["outage_flow_pct"] > 80 and "late_join_ms" in red, f"redundant servers: {red}"
# The publisher's node killed: nothing crosses until it is back, then both readers receive.
fed = fail["federated"]
assert fed["outage_flow_pct"] < 20 and "recovered_ms" in fed, f"federated: {fed}"
print("failure:", {a: {k: round(v) for k, v in m.items()} for a, m in fail.items()})
print("kinds:", sorted(kinds), "pairs:", sorted(pairs), "points:", len(rs["points"]))
PY

read -r ns links procs <<<"$(leftovers)"
[[ "$ns $links $procs" == "0 0 0" ]] || fail "left behind: $ns namespaces, $links links, $procs processes"
log "teardown after a full run: nothing left behind"

# Interrupt a run in the middle of a point and check the cleanup.
"$TESSERA_BIN" bench ci --out "$WORK/interrupted" --no-progress >"$WORK/interrupted.log" 2>&1 &
pid=$!
sleep 6
kill -INT "$pid"
set +e
wait "$pid"
rc=$?
set -e
sleep 0.5
cat "$WORK/interrupted.log" | tail -3
[[ $rc -eq 130 ]] || fail "interrupted run exited $rc, not 130"
read -r ns links procs <<<"$(leftovers)"
[[ "$ns $links $procs" == "0 0 0" ]] || fail "after Ctrl-C left behind: $ns namespaces, $links links, $procs processes"
log "teardown after Ctrl-C: nothing left behind"
log "PASS"
