#!/usr/bin/env bash
# `tessera bench` with cyclone-perf, the C Cyclone DDS worker (workers/cyclone/): builds it with
# workers/cyclone/build.sh (idlc + cc against Debian's cyclonedds-dev), then lets the bench build
# and cache its own copy and run one short cell of each kind: latency counted to 2000 round
# trips for `cyclone-c` and both mixed pairs with Tessera (and ddsperf, duration-based, beside
# them), reliable throughput for the same pairs, and 1-to-2 latency of Tessera and cyclone-c with
# each ping's first and last answer. Checks the numbers (latency from a full histogram with
# p99.9 and stddev, the count reached, CPU per round trip and per ping), that no worker or
# namespace is left behind, and that without the worker the cyclone-c pairs are skipped with a
# note rather than failing the run.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/bench_worker.bash
source "$(dirname "$0")/lib/bench_worker.bash"

BENCH_BIN="$(dirname "$TESSERA_BIN")/tessera-bench"
[[ -x "$BENCH_BIN" ]] || fail "$BENCH_BIN missing (cargo build --release -p tessera-cli -p tessera-bench)"
[[ -e /usr/include/dds/dds.h ]] && command -v idlc >/dev/null && command -v cc >/dev/null ||
    fail "cyclonedds-dev, cyclonedds-tools or gcc missing (scripts/install-deps installs them)"

log "building workers/cyclone with build.sh"
"$REPO_ROOT/workers/cyclone/build.sh" "$WORK/cyclone-perf" || fail "build.sh failed"
[[ -x "$WORK/cyclone-perf" ]] || fail "build.sh wrote no binary"

cat >"$WORK/cyclonec.toml" <<'TOML'
name = "cyclonec-e2e"
rounds = 1
pairs = ["cyclone-c", "tessera>cyclone-c", "cyclone-c>tessera"]

[[experiment]]
name = "latency"
kind = "latency"
pairs = ["cyclone-c", "tessera>cyclone-c", "cyclone-c>tessera", "cyclone"]
size = 16
count = 2000
duration_s = 1.0
warmup_s = 0.3

[[experiment]]
name = "throughput"
kind = "throughput"
size = 1024
duration_s = 1.0

[[experiment]]
name = "latency_1_to_n"
kind = "latency"
pairs = ["tessera", "cyclone-c"]
size = 16
subscribers = 2
count = 2000
duration_s = 1.0
warmup_s = 0.3
TOML

out="$WORK/run"
log "running: tessera bench cyclonec.toml (builds cyclone-perf if not cached)"
set +e
"$TESSERA_BIN" bench "$WORK/cyclonec.toml" --out "$out" --no-progress --expect 'failed==0' \
    >"$WORK/bench.log" 2>&1
rc=$?
set -e
cat "$WORK/bench.log"
[[ $rc -eq 0 ]] || fail "tessera bench exited $rc"
worker_cached cyclone-perf

python3 - "$out/results.json" <<'PY' || fail "results.json check"
import json, sys
rs = json.load(open(sys.argv[1]))
def points(exp, pair):
    pts = [p for p in rs["points"] if p["experiment"] == exp and p["pair"] == pair]
    assert pts and all(p["ok"] for p in pts), f"{exp} {pair}: no successful point"
    return pts[0]
for pair in ("cyclone-c", "tessera>cyclone-c", "cyclone-c>tessera", "cyclone"):
    p = points("latency", pair)
    l, m = p["latency"], p["metrics"]
    cpu = m.get("cpu_us_per_sample")
    assert cpu and cpu > 0, f"latency {pair}: no CPU per round trip"
    if pair == "cyclone":
        # ddsperf cannot stop after a count: duration-based, per-second summaries.
        assert l["source"] == "intervals" and "count_target" not in m, f"{pair}: {l} {m}"
    else:
        assert m.get("count_target") == 2000 and l["count"] >= 2000, f"{pair}: {l} {m}"
        assert l["source"] == "hdr" and l["p999_us"] and l["stddev_us"] is not None, f"{pair}: {l}"
    print(f"latency {pair}: p50 {l['p50_us']:.1f} us, p99.9 {l['p999_us']}, "
          f"{l['count']} round trips, CPU {cpu:.1f} us")
for pair in ("cyclone-c", "tessera>cyclone-c", "cyclone-c>tessera"):
    p = points("throughput", pair)
    t, cpu = p["throughput"], p["metrics"].get("cpu_us_per_sample")
    assert t["samples_per_s"] > 0 and t["lost"] == 0 and cpu and cpu > 0, f"{pair}: {t}"
    print(f"throughput {pair}: {t['samples_per_s']:.0f} samples/s, CPU {cpu:.1f} us/sample")
for pair in ("tessera", "cyclone-c"):
    m = points("latency_1_to_n", pair)["metrics"]
    for k in ("first_answer_p50_us", "all_answers_p50_us", "cpu_us_per_ping"):
        assert m.get(k, 0) > 0, f"1-to-2 {pair}: no {k}: {m}"
    assert m["first_answer_p50_us"] <= m["all_answers_p50_us"], f"1-to-2 {pair}: {m}"
    print(f"1-to-2 {pair}: first {m['first_answer_p50_us']:.1f} us, "
          f"all {m['all_answers_p50_us']:.1f} us, CPU {m['cpu_us_per_ping']:.1f} us/ping")
notes = rs["notes"]
assert any("cyclone-perf" in n for n in notes), "no note on the C worker"
assert any("cannot stop after a count" in n for n in notes), "no note on ddsperf's duration"
PY
grep -q "## Latency modes and 1-to-N answers" "$out/report.md" ||
    fail "report.md has no section on latency modes and 1-to-N answers"

read -r ns procs <<<"$(worker_leftovers cyclone-perf)"
[[ "$ns $procs" == "0 0" ]] || fail "left behind: $ns namespaces, $procs worker processes"
log "nothing left behind"

# Without the worker (TESSERA_BENCH_CYCLONE_PERF empty): the cyclone-c pairs are skipped with a note and
# the rest of the run goes on.
worker_skip_check cyclone-c TESSERA_BENCH_CYCLONE_PERF "Cyclone DDS (C worker) skipped"
log "PASS"
