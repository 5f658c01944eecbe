#!/usr/bin/env bash
# Content filters against Cyclone DDS 11 (PyPI's cyclonedds 11.0.1). Cyclone writes, a Tessera
# reader of a content-filtered topic reads: Cyclone matches the reader although its SEDP
# announcement carries PID_CONTENT_FILTER_PROPERTY, sends it every sample (Cyclone does no
# writer-side SQL filtering), and the reader keeps exactly those passing its filter. Then
# Tessera writes and a plain Cyclone reader gets every sample (a Tessera writer filters only
# for Tessera readers that announced a filter).
#
#   CFT_PEER=target/debug/examples/cft_peer tests/interop/cft_cyclone_py.sh
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

PEER="${CFT_PEER:-$REPO_ROOT/target/release/examples/cft_peer}"
[[ -x "$PEER" ]] || fail "$PEER missing (cargo build --release -p tessera --example cft_peer)"
PYPEER="$REPO_ROOT/tests/interop/lib/cft_peer.py"
python3 -c 'import cyclonedds' 2>/dev/null ||
    fail "python cyclonedds missing (scripts/install-deps installs cyclonedds==11.0.1)"

# Cyclone publishes, Tessera subscribes through its filter (seq >= 10, label keep*).
start_bg tessera-sub "$PEER" sub 9
sleep 1
start_bg py-pub python3 "$PYPEER" pub 6
wait_pid py-pub 20 || fail "the python publisher failed"
wait_pid tessera-sub 20 || fail "the tessera subscriber failed"
grep -q "^matched 1" "$WORK/py-pub.log" || fail "Cyclone's writer did not match the filtered reader"
got=$(grep -c '^got ' "$WORK/tessera-sub.log" || true)
sent=$(grep -c '^sent ' "$WORK/py-pub.log" || true)
[[ $got -ge 20 ]] || fail "tessera-sub got $got samples (want >= 20 of $sent)"
bad=$(grep '^got ' "$WORK/tessera-sub.log" |
    grep -vE 'got Reading \{ id: [0-9]+, seq: ([0-9]+), label: "keep\1" \}' || true)
[[ -z "$bad" ]] || fail "samples the filter should drop: $bad"
if grep -qE 'seq: [0-9] ,|seq: [0-9],' "$WORK/tessera-sub.log"; then
    fail "a sample with seq < 10 passed"
fi
dropped=$(sed -n 's/^filtered_out //p' "$WORK/tessera-sub.log")
[[ ${dropped:-0} -ge 15 ]] || fail "the reader dropped ${dropped:-0} samples (want >= 15)"
log "Cyclone -> Tessera filtered reader: $got of $sent kept, $dropped dropped by the reader"

# Tessera publishes, a plain Cyclone reader reads every sample.
start_bg py-sub python3 "$PYPEER" sub 9
sleep 2
start_bg tessera-pub "$PEER" pub 5
wait_pid tessera-pub 20 || fail "the tessera publisher failed"
wait_pid py-sub 20 || fail "the python subscriber failed"
n=$(grep -cE "got Reading\(id=[0-9]+, seq=[0-9]+, label='(keep|drop)[0-9]+'\)" "$WORK/py-sub.log" || true)
odd=$(grep -cE "got Reading\(id=[0-9]+, seq=[0-9]*[13579]," "$WORK/py-sub.log" || true)
[[ $n -ge 40 && $odd -ge 20 ]] || fail "py-sub: $n samples, $odd odd (want >= 40 and >= 20)"
log "Tessera -> Cyclone plain reader: $n samples ($odd odd)"
log ok
