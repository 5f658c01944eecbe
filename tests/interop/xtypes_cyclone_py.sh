#!/usr/bin/env bash
# XTypes against Cyclone DDS 11 (PyPI's cyclonedds 11.0.1 tools): `cyclonedds typeof` resolves
# a Tessera topic's type over the TypeLookup service and prints its IDL, and
# `cyclonedds subscribe` (which needs our minimal TypeObjects to match) prints Tessera's
# samples, as it does against Cyclone's own ddsperf. Then the same with
# TESSERA_TYPE_INFORMATION=0: the tools find no type (they list only endpoints with type
# information), which shows the switch works.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
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
log ok
