#!/usr/bin/env bash
# `tessera ls`, `tessera typeof` and `tessera spy` against live peers, in a private network namespace:
# 1. Tessera's `perf pub` and Cyclone's `ddsperf sub`: `ls` lists both participants (vendor,
#    ddsperf's user data), the ddsperf topics with their writers and readers, and no mismatch
#    that matters (ddsperf pairs its pong endpoints by partition on purpose); `--json` says the
#    same; `typeof DDSPerfRDataKS` prints KeyedSeq, served by Tessera's TypeLookup.
# 2. Cyclone's `ddsperf pub` alone: `ls` sees its writer, `typeof` gets KeyedSeq from
#    Cyclone's TypeLookup service.
# 3. A Python cyclonedds 11 peer (lib/ls_peer.py) with a best-effort volatile writer and a
#    reliable transient-local reader on one topic: `ls` flags RELIABILITY and DURABILITY with
#    both values; `typeof LsType` fetches a nested @mutable type with an enum and an @optional
#    member from Cyclone's TypeLookup service and prints its IDL.
# 4. `tessera spy` measures each writer's rate (Tessera at 50 Hz, ddsperf at 20 Hz).
# 5. `typeof` of a topic nobody has exits 1.
# Uses $TESSERA_BIN (target/release/tessera by default; any build works).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
[[ -x "$DDSPERF" ]] || fail "ddsperf missing (apt-get install cyclonedds-tools)"
python3 -c 'import cyclonedds' 2>/dev/null ||
    fail "python cyclonedds missing (scripts/install-deps installs cyclonedds==11.0.1)"
PYPEER="$REPO_ROOT/tests/interop/lib/ls_peer.py"

# json_check LOG PYTHON_EXPR: evaluates EXPR with `d` the JSON document in $WORK/LOG.
json_check() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" \
        "$WORK/$1" || fail "$1: $2 is false"
}

# --- 1. Tessera and ddsperf ----------------------------------------------------------------
start_bg tessera-pub "$TESSERA_BIN" perf pub 20Hz
start_bg ddsperf-sub "$DDSPERF" sub
sleep 1
"$TESSERA_BIN" ls --wait 2 >"$WORK/ls1.log" 2>&1 || fail "ls exited $?"
grep -q "^PARTICIPANTS (2)" "$WORK/ls1.log" || fail "ls: not two participants"
grep -qE "Cyclone DDS  user_data \"DDSPerf:1:" "$WORK/ls1.log" || fail "ls: no ddsperf subscriber"
grep -qE "Tessera  user_data \"DDSPerf:0:" "$WORK/ls1.log" || fail "ls: no tessera publisher"
grep -qE "^  DDSPerfRDataKS  type KeyedSeq  writers [1-9][0-9]*  readers [1-9][0-9]*$" "$WORK/ls1.log" ||
    fail "ls: DDSPerfRDataKS without writers or readers"
grep -q "^NOT MATCHED (0)" "$WORK/ls1.log" || fail "ls: flagged a mismatch"
log "ls: $(grep -c '^  [0-9a-f]\{8\}:' "$WORK/ls1.log") endpoints listed"

"$TESSERA_BIN" ls --wait 1 --json >"$WORK/ls1.json" 2>"$WORK/ls1-json.log" || fail "ls --json"
json_check ls1.json "sorted(p['vendor'] for p in d['participants']) == ['Cyclone DDS', 'Tessera']"
json_check ls1.json "any(w['topic'] == 'DDSPerfRDataKS' and w['qos']['reliability'] == 'reliable' \
    and w['qos']['history'] == 'keep-all' for w in d['writers'])"
json_check ls1.json "d['not_matched'] == []"

"$TESSERA_BIN" typeof DDSPerfRDataKS -w 5 >"$WORK/typeof1.log" 2>&1 || fail "typeof exited $?"
for line in "struct KeyedSeq {" "  unsigned long seq;" "  @key unsigned long keyval;" \
    "  sequence<octet> baggage;"; do
    grep -qxF "$line" "$WORK/typeof1.log" || fail "typeof: no '$line'"
done
log "typeof: $(tr -s ' \n' ' ' <"$WORK/typeof1.log")"
stop_bg tessera-pub
stop_bg ddsperf-sub

# --- 2. ddsperf alone ----------------------------------------------------------------------
start_bg ddsperf-pub "$DDSPERF" pub 10Hz
sleep 1
"$TESSERA_BIN" ls --wait 2 --json >"$WORK/ls2.json" 2>"$WORK/ls2-json.log" || fail "ls --json"
json_check ls2.json "[p['vendor'] for p in d['participants']] == ['Cyclone DDS']"
json_check ls2.json "any(w['topic'] == 'DDSPerfRDataKS' for w in d['writers'])"
# Here only Cyclone can serve the type.
"$TESSERA_BIN" typeof DDSPerfRDataKS -w 5 >"$WORK/typeof2.log" 2>&1 || fail "typeof exited $?"
grep -qxF "  @key unsigned long keyval;" "$WORK/typeof2.log" || fail "typeof: no KeyedSeq from ddsperf"
log "typeof (ddsperf alone): $(tr -s ' \n' ' ' <"$WORK/typeof2.log")"
stop_bg ddsperf-pub

# --- 3. a Python cyclonedds peer -----------------------------------------------------------
start_bg py-peer python3 "$PYPEER" 30
sleep 2
"$TESSERA_BIN" ls --wait 2 >"$WORK/ls3.log" 2>&1 || fail "ls exited $?"
grep -q "^NOT MATCHED (1)" "$WORK/ls3.log" || fail "ls: not one mismatch"
grep -qF "RELIABILITY: writer offers best-effort, reader requests reliable" "$WORK/ls3.log" ||
    fail "ls: reliability not flagged"
grep -qF "DURABILITY: writer offers volatile, reader requests transient-local" "$WORK/ls3.log" ||
    fail "ls: durability not flagged"
log "ls: $(grep -A2 '^NOT MATCHED' "$WORK/ls3.log" | tr -s ' \n' ' ')"

"$TESSERA_BIN" typeof LsType -w 5 >"$WORK/typeof3.log" 2>&1 || fail "typeof LsType exited $?"
for line in "module ls {" "  enum Mode {" "    IDLE," "  struct Sample {" "    ls::Mode mode;" \
    "  @mutable" "  struct Report {" "    @key unsigned long id;" "    string<16> name;" \
    "    @optional string note;" "    sequence<ls::Sample> samples;"; do
    grep -qxF "$line" "$WORK/typeof3.log" || fail "typeof LsType: no '$line'"
done
log "typeof LsType: $(tr -s ' \n' ' ' <"$WORK/typeof3.log")"
stop_bg py-peer

# --- 4. tessera spy: each writer's rate --------------------------------------------------
start_bg tessera-pub50 "$TESSERA_BIN" perf pub 50Hz
start_bg ddsperf-pub20 "$DDSPERF" pub 20Hz
sleep 1
"$TESSERA_BIN" spy --duration 3 --json >"$WORK/spy.json" 2>"$WORK/spy.log" || fail "spy exited $?"
tail -n 1 "$WORK/spy.json" >"$WORK/spy-last.json"
# Writer GUIDs start with the vendor: 01a7 Tessera, 0110 Cyclone.
rate() {
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); \
print(sum(w['samples_per_s'] for w in d['writers'] \
    if w['topic'] == 'DDSPerfRDataKS' and w['guid'].startswith(sys.argv[2])))" \
        "$WORK/spy-last.json" "$1"
}
t=$(rate 01a7)
c=$(rate 0110)
python3 -c "import sys; t, c = float(sys.argv[1]), float(sys.argv[2]); \
sys.exit(0 if 35 <= t <= 65 and 12 <= c <= 28 else 1)" "$t" "$c" ||
    fail "spy: Tessera's writer at $t/s (want ~50), ddsperf's at $c/s (want ~20)"
log "spy: Tessera's writer $t samples/s, ddsperf's $c samples/s"
stop_bg tessera-pub50
stop_bg ddsperf-pub20

# --- 5. nobody ------------------------------------------------------------------------------
rc=0
"$TESSERA_BIN" typeof Nobody -w 1 >"$WORK/typeof4.log" 2>&1 || rc=$?
[[ $rc -eq 1 ]] || fail "typeof of an unknown topic exited $rc, not 1"
log ok
