#!/usr/bin/env bash
# The ATOMIC fault harness, short: `tessera-jepsen run` with 3 member processes on namespace
# hosts, 20 s of a seeded schedule with a partition (m1 cut off, 7.6-13.8 s) and a kill -9 with
# restart (m2, 15.9-18.6 s). Checks that the history is clean, that writes committed before and
# after the faults, that the restarted member caught up, and that no namespace or link of the
# run is left. Then it injects a violation into the recorded history (a delivery repeated) and
# checks that `tessera-jepsen check` reports it. The long runs (≥ 200 seeds of 60 s) are not
# here; see the README.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"
# shellcheck source=lib/jepsen.bash
source "$(dirname "$0")/lib/jepsen.bash"

out="$WORK/run"
jepsen_run --members 3 --seed 2 --duration 20 --nemesis kill,partition --out "$out"
grep -q "== seed 2: 0 violation(s)" "$WORK/jepsen.log" || fail "no clean verdict"
grep -q "partition m1 | rest" "$WORK/jepsen.log" || fail "the schedule changed: no partition"
grep -q "kill -9 m2" "$WORK/jepsen.log" || fail "the schedule changed: no kill"

ok="$(sed -n 's/^  writes: \([0-9]*\) ok.*/\1/p' "$WORK/jepsen.log")"
[[ "${ok:-0}" -ge 200 ]] || fail "only ${ok:-0} writes acknowledged (expected hundreds)"
# The restarted incarnation m2.1 ended the run up and delivered everything the others did.
deliveries="$(sed -n 's/^  deliveries: //p' "$WORK/jepsen.log")"
m0="$(grep -o 'm0\.0=[0-9]*' <<<"$deliveries" | cut -d= -f2)"
m21="$(grep -o 'm2\.1=[0-9]*' <<<"$deliveries" | cut -d= -f2)"
[[ -n "$m21" && "$m21" == "$m0" ]] || fail "m2.1 delivered ${m21:-nothing}, m0 $m0"

run_dir="$(ls -d "$out"/seed-2-*)"
run_id="${run_dir##*-}"
if ip netns list | grep -q "^tj-$run_id-" || ip -o link show | grep -q "tj$run_id"; then
    fail "namespaces or links of run $run_id left behind"
fi

log "injecting a violation: m0.0 delivers one value twice"
line="$(grep -m1 '^deliver ' "$run_dir/m0.0.history")"
value="$(cut -d' ' -f2 <<<"$line")"
last="$(grep -c '^deliver ' "$run_dir/m0.0.history")"
sed -i "/^stop end/i deliver $value $((last + 1))" "$run_dir/m0.0.history"
set +e
"$JEPSEN_BIN" check "$run_dir" >"$WORK/check.log" 2>&1
rc=$?
set -e
cat "$WORK/check.log"
[[ $rc -eq 1 ]] || fail "check exited $rc on a broken history"
grep -q "VIOLATION Duplicate { member: \"m0.0\", value: $value }" "$WORK/check.log" ||
    fail "the duplicate was not reported"
log "ok: clean run, $ok writes acknowledged; the injected duplicate was caught"
