#!/usr/bin/env bash
# Dynamic types against Cyclone DDS 11 (PyPI's cyclonedds 11.0.1): `tessera echo` learns the
# type of a Cyclone writer's topic over TypeLookup (it has no compiled-in type) and prints its
# samples, text and JSON — from the Python peer's @appendable ShapeType and @mutable type with
# an @optional member (tests/interop/lib/xtypes_peer.py), and from Cyclone's C ddsperf when it
# is installed; a type with a union prints as Cyclone prints it (unions_cyclone_py.sh tests
# unions and bitmasks in depth); then `tessera pub` learns the type from a Python reader and
# publishes JSON values that the Python reader decodes.
# TESSERA_BIN=target/debug/tessera runs it against a debug build.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
PYPEER="$REPO_ROOT/tests/interop/lib/xtypes_peer.py"
python3 -c 'import cyclonedds' 2>/dev/null ||
    fail "python cyclonedds missing (scripts/install-deps installs cyclonedds==11.0.1)"

# 1. Python (Cyclone) publishes; Tessera discovers the types and prints the samples.
start_bg py-pub python3 "$PYPEER" pub 12
start_bg echo-mut "$TESSERA_BIN" echo XtMut -n 12 -w 10
start_bg echo-shape "$TESSERA_BIN" echo XtShape --json -n 12 -w 10
wait_pid echo-mut 25 || fail "tessera echo XtMut failed"
wait_pid echo-shape 25 || fail "tessera echo XtShape failed"
stop_bg py-pub

n=$(grep -cE "^Mut\(id=[01], text='py[0-9]+', maybe=(None|[0-9]+), list=\[[0-9]+, [0-9]+, [0-9]+\]\)$" \
    "$WORK/echo-mut.log" || true)
[[ $n -ge 12 ]] || fail "tessera echo printed $n Mut samples (want 12)"
# Odd samples carry the optional member (7 i), even ones leave it out.
grep -qE "^Mut\(id=1, text='py([0-9]+)', maybe=[0-9]+" "$WORK/echo-mut.log" ||
    fail "no Mut sample with its optional member"
grep -qE "^Mut\(id=0, text='py[0-9]+', maybe=None" "$WORK/echo-mut.log" ||
    fail "no Mut sample without its optional member"
grep -q "XtMut: type xt::Mut" "$WORK/echo-mut.log" || fail "echo did not name the type"
log "echo XtMut: $n samples, e.g. $(grep -m1 -E '^Mut\(id=1' "$WORK/echo-mut.log")"
n=$(grep -cE '^\{"additional_payload_size":\[([0-9]+)\],"color":"RED","shapesize":5,"x":\1,"y":-\1\}$' \
    "$WORK/echo-shape.log" || true)
[[ $n -ge 12 ]] || fail "tessera echo --json printed $n ShapeType samples (want 12)"
log "echo XtShape --json: $n samples, e.g. $(grep -m1 -E '^\{' "$WORK/echo-shape.log")"

# 2. Cyclone's C ddsperf (KeyedSeq on DDSPerfRDataKS), when installed.
if [[ -x "$DDSPERF" ]]; then
    start_bg ddsperf "$DDSPERF" -D 20 pub 50Hz size 20
    start_bg echo-ks "$TESSERA_BIN" echo DDSPerfRDataKS -n 10 -w 10
    wait_pid echo-ks 25 || fail "tessera echo DDSPerfRDataKS failed"
    stop_bg ddsperf
    # size 20: seq, keyval and 8 octets of baggage.
    n=$(grep -cE '^KeyedSeq\(seq=[0-9]+, keyval=[0-9]+, baggage=\[([0-9]+, ){7}[0-9]+\]\)$' \
        "$WORK/echo-ks.log" || true)
    [[ $n -ge 10 ]] || fail "tessera echo printed $n KeyedSeq samples of ddsperf (want 10)"
    log "echo DDSPerfRDataKS: $n samples, e.g. $(grep -m1 -E '^KeyedSeq' "$WORK/echo-ks.log" | cut -c1-100)"
else
    log "ddsperf not installed: its part skipped"
fi

# 3. A type with a union: echo prints it as `cyclonedds subscribe` does.
cat >"$WORK/union_pub.py" <<'PY'
import sys, time
from dataclasses import dataclass
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, IdlUnion
from cyclonedds.pub import DataWriter
from cyclonedds.topic import Topic
import cyclonedds.idl.types as types

class U(IdlUnion, discriminator=types.int32, typename="xt::U"):
    a: types.case[0, types.int32]
    b: types.case[1, str]

@dataclass
class WithUnion(IdlStruct, typename="xt::WithUnion"):
    id: types.int32
    u: U

dp = DomainParticipant(0)
w = DataWriter(dp, Topic(dp, "XtUnion", WithUnion))
end = time.time() + float(sys.argv[1])
while time.time() < end:
    w.write(WithUnion(id=1, u=U(a=5)))
    time.sleep(0.1)
PY
start_bg py-union python3 "$WORK/union_pub.py" 8
rc=0
"$TESSERA_BIN" echo XtUnion -n 1 -w 6 >"$WORK/echo-union.log" 2>&1 || rc=$?
stop_bg py-union
[[ $rc -eq 0 ]] || fail "tessera echo of a union type exited with $rc (want 0)"
grep -qE '^WithUnion\(id=1, u=U\[Union\]\(0, 5\)\)$' "$WORK/echo-union.log" ||
    fail "tessera echo did not print the union: $(tail -n2 "$WORK/echo-union.log")"
log "echo XtUnion: $(grep -m1 "^WithUnion(" "$WORK/echo-union.log")"

# 4. Python subscribes; Tessera learns the types from its readers and publishes.
start_bg py-sub python3 "$PYPEER" sub 14
sleep 1
start_bg pub-mut "$TESSERA_BIN" pub XtMut \
    '{"id": 2, "text": "dyn$i", "maybe": $i, "list": [$i, -5]}' -n 10 -r 10 -w 10
start_bg pub-shape "$TESSERA_BIN" pub XtShape \
    '{"color": "GREEN", "x": $i, "y": 3, "shapesize": 9, "additional_payload_size": [$i, 1]}' \
    -n 10 -r 10 -w 10
wait_pid pub-mut 25 || fail "tessera pub XtMut failed"
wait_pid pub-shape 25 || fail "tessera pub XtShape failed"
wait_pid py-sub 20 || fail "the python subscriber failed"
n=$(grep -cE "^got Mut\(id=2, text='dyn([0-9]+)', maybe=\1, list=\[\1, -5\]\)$" "$WORK/py-sub.log" || true)
[[ $n -ge 10 ]] || fail "the python reader got $n Mut samples of tessera pub (want 10)"
m=$(grep -cE "^got ShapeType\(color='GREEN', x=([0-9]+), y=3, shapesize=9, additional_payload_size=\[\1, 1\]\)$" \
    "$WORK/py-sub.log" || true)
[[ $m -ge 10 ]] || fail "the python reader got $m ShapeType samples of tessera pub (want 10)"
log "python reader: $n Mut and $m ShapeType samples, e.g. $(grep -m1 -E '^got Mut' "$WORK/py-sub.log")"
log ok
