#!/usr/bin/env bash
# XTypes against Cyclone DDS 11 (PyPI's cyclonedds 11.0.1 tools): `cyclonedds typeof` resolves
# a Tessera topic's type over the TypeLookup service and prints its IDL, and
# `cyclonedds subscribe` (which needs our minimal TypeObjects to match) prints Tessera's
# samples, as it does against Cyclone's own ddsperf. Then the same with
# TESSERA_TYPE_INFORMATION=0: the tools find no type (they list only endpoints with type
# information), which shows the switch works. Last, samples of an @appendable ShapeType and a
# @mutable type with an @optional member, XCDR2, both ways between
# crates/tessera/examples/xtypes_peer.rs and a Python peer (tests/interop/lib/xtypes_peer.py).
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
PEER="$REPO_ROOT/target/release/examples/xtypes_peer"
[[ -x "$PEER" ]] || fail "$PEER missing (cargo build --release -p tessera --examples)"
PYPEER="$REPO_ROOT/tests/interop/lib/xtypes_peer.py"
python3 -c 'import cyclonedds' 2>/dev/null ||
    fail "python cyclonedds missing (scripts/install-deps installs cyclonedds==11.0.1)"
CYCLONEDDS_PY=(python3 -m cyclonedds.tools.cli.main)
python3 -c 'import cyclonedds.tools.cli.main' 2>/dev/null || CYCLONEDDS_PY=(cyclonedds)

TOPIC=DDSPerfRDataKS

# typeof_out NAME: runs `cyclonedds typeof` on $TOPIC, output to $WORK/NAME.log.
typeof_out() {
    timeout 30 "${CYCLONEDDS_PY[@]}" typeof "$TOPIC" --suppress-progress-bar -r 2s \
        >"$WORK/$1.log" 2>&1 || true
}

# subscribe_out NAME: `cyclonedds subscribe` on $TOPIC for 8 s (it runs until interrupted).
subscribe_out() {
    start_bg "$1" "${CYCLONEDDS_PY[@]}" subscribe "$TOPIC" -r 2s --suppress-progress-bar
    sleep 8
    kill -INT "$(bg_pid "$1")" 2>/dev/null || true
    wait_pid "$1" 5 || true
}

start_bg tessera-pub "$TESSERA_BIN" perf -D 40 pub 20Hz
sleep 1

typeof_out typeof
grep -q "struct KeyedSeq" "$WORK/typeof.log" || fail "typeof printed no KeyedSeq"
for member in "unsigned long seq;" "@key unsigned long keyval;" "baggage;"; do
    grep -qF "$member" "$WORK/typeof.log" || fail "typeof: no '$member'"
done
log "typeof: $(tr -s ' \n' ' ' <"$WORK/typeof.log")"

subscribe_out subscribe
n=$(grep -cE 'KeyedSeq\(seq=[0-9]+, keyval=[0-9]+, baggage=' "$WORK/subscribe.log" || true)
[[ $n -ge 10 ]] || fail "cyclonedds subscribe printed $n samples (want >= 10)"
log "subscribe: $n samples, e.g. $(grep -m1 -E 'KeyedSeq\(' "$WORK/subscribe.log")"
stop_bg tessera-pub

# Type information off: the same publisher is invisible to the tools.
TESSERA_TYPE_INFORMATION=0 start_bg tessera-pub-noti "$TESSERA_BIN" perf -D 20 pub 20Hz
sleep 1
typeof_out typeof-noti
if grep -q "struct KeyedSeq" "$WORK/typeof-noti.log"; then
    fail "typeof resolved the type with TESSERA_TYPE_INFORMATION=0"
fi
log "typeof without type information: $(tr -s ' \n' ' ' <"$WORK/typeof-noti.log" | cut -c1-120)"
stop_bg tessera-pub-noti

# check_got LOG SHAPE_RE MUT_RE: at least 10 samples of each type, with the values expected.
check_got() {
    local ns nm
    ns=$(grep -cE "$2" "$WORK/$1.log" || true)
    nm=$(grep -cE "$3" "$WORK/$1.log" || true)
    [[ $ns -ge 10 && $nm -ge 10 ]] || fail "$1: $ns ShapeType and $nm Mut samples (want >= 10 each)"
    log "$1: $ns ShapeType and $nm Mut samples, e.g. $(grep -m1 -E "$3" "$WORK/$1.log")"
}

# Python publishes, Tessera subscribes: optional present on odd i (7 i), absent on even.
start_bg tessera-sub "$PEER" sub 8
sleep 0.5
start_bg py-pub python3 "$PYPEER" pub 5
wait_pid py-pub 20 || fail "the python publisher failed"
wait_pid tessera-sub 20 || fail "the tessera subscriber failed"
check_got tessera-sub \
    'got Shape \{ color: "RED", x: ([0-9]+), y: -\1, shapesize: 5, additional_payload_size: \[\1\] \}' \
    'got Mut \{ id: [01], text: "py[0-9]+", maybe: (None|Some\([0-9]+\)), list: \[[0-9]+, [0-9]+, [0-9]+\] \}'
grep -qE 'got Mut \{ id: 1, text: "py1", maybe: Some\(7\)' "$WORK/tessera-sub.log" ||
    fail "tessera-sub: no Mut py1 with maybe = 7"

# Tessera publishes, Python subscribes.
start_bg py-sub python3 "$PYPEER" sub 9
sleep 2
start_bg tessera-pub2 "$PEER" pub 5
wait_pid tessera-pub2 20 || fail "the tessera publisher failed"
wait_pid py-sub 20 || fail "the python subscriber failed"
check_got py-sub \
    "got ShapeType\(color='BLUE', x=([0-9]+), y=[0-9]+, shapesize=30, additional_payload_size=\[\1, \1, \1\]\)" \
    "got Mut\(id=[012], text='t[0-9]+', maybe=(None|[0-9]+000), list=\[[0-9]+, -[0-9]+\]\)"
grep -qE "got Mut\(id=2, text='t2', maybe=2000, list=\[2, -2\]\)" "$WORK/py-sub.log" ||
    fail "py-sub: no Mut t2 with maybe = 2000"
log ok
