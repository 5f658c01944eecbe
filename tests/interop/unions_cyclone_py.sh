#!/usr/bin/env bash
# Unions and bitmasks against Cyclone DDS 11 (PyPI's cyclonedds 11.0.1): a Python writer of
# `xt::Kinds { @key long id; U u; M::V v; Perm p; }` (a final union over long with a default
# case, an appendable union over an enum, a 12-bit bitmask) and `tessera echo`, which learns
# the type over TypeLookup and prints the samples as `cyclonedds subscribe` does; then a
# Python reader and `tessera pub`, which learns the type from it and publishes JSON values the
# reader decodes; and `cyclonedds typeof` on the Tessera writer's topic, which prints the
# type Tessera announces (re-encoded from its objects: Cyclone checks their hashes).
# Maps are not part of it: cyclonedds-python builds no TypeObject for a `Dict` member (nor
# has Cyclone's C IDL compiler maps), so no Cyclone peer can announce or match one.
# TESSERA_BIN=target/debug/tessera runs it against a debug build.
# shellcheck source=lib/common.bash
source "$(dirname "$0")/lib/common.bash"

[[ -x "$TESSERA_BIN" ]] || fail "$TESSERA_BIN missing (cargo build --release -p tessera-cli)"
python3 -c 'import cyclonedds' 2>/dev/null ||
    fail "python cyclonedds missing (scripts/install-deps installs cyclonedds==11.0.1)"

cat >"$WORK/kinds.py" <<'PY'
import sys, time
from dataclasses import dataclass
from cyclonedds.core import Qos, Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, IdlUnion, IdlBitmask, IdlEnum
from cyclonedds.idl.annotations import key, appendable, bit_bound, position
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration
import cyclonedds.idl.types as types

class Color(IdlEnum, typename="Color"):
    RED = 0
    GREEN = 1
    BLUE = 2

class U(IdlUnion, discriminator=types.int32, typename="U"):
    a: types.case[[1, 2], types.int32]
    b: types.case[[3], str]
    c: types.default[types.float64]

@appendable
class V(IdlUnion, discriminator=Color, typename="M::V"):
    r: types.case[[Color.RED], types.int16]
    g: types.case[[Color.GREEN, Color.BLUE], types.sequence[types.uint8]]

@dataclass
@bit_bound(12)
class Perm(IdlBitmask, typename="Perm"):
    read: bool = False
    write: bool = False
    exec: bool = False
    position("exec", 5)

@dataclass
class Kinds(IdlStruct, typename="xt::Kinds"):
    id: types.int32
    key("id")
    u: U
    v: V
    p: Perm

mode, secs = sys.argv[1], float(sys.argv[2])
dp = DomainParticipant(0)
t = Topic(dp, "XtKinds", Kinds)
qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)))
end = time.time() + secs
if mode == "pub":
    w = DataWriter(dp, t, qos=qos)
    i = 0
    while time.time() < end:
        u = U(a=i) if i % 3 == 0 else (U(b=f"s{i}") if i % 3 == 1 else U(c=i / 2))
        v = V(r=-i) if i % 2 == 0 else V(g=[i % 256, 1])
        w.write(Kinds(id=i % 2, u=u, v=v, p=Perm(read=True, exec=i % 2 == 1)))
        i += 1
        time.sleep(0.1)
else:
    r = DataReader(dp, t, qos=qos)
    while time.time() < end:
        for s in r.take(N=20):
            print(f"got {s}", flush=True)
        time.sleep(0.05)
PY

# 1. Python publishes; Tessera learns the type and prints the samples.
start_bg py-pub python3 "$WORK/kinds.py" pub 14
start_bg echo "$TESSERA_BIN" echo XtKinds -n 12 -w 10
start_bg echo-json "$TESSERA_BIN" echo XtKinds --json -n 6 -w 10
wait_pid echo 25 || fail "tessera echo XtKinds failed"
wait_pid echo-json 25 || fail "tessera echo --json XtKinds failed"
stop_bg py-pub
u='U\[Union\]\(([12], [0-9]+|3, '"'"'s[0-9]+'"'"'|-?[0-9]+, [0-9.]+)\)'
v='V\[Union\]\((<Color\.RED: 0>, -?[0-9]+|<Color\.GREEN: 1>, \[[0-9]+, 1\])\)'
p='Perm\(read=True, write=False, exec=(True|False)\)'
n=$(grep -cE "^Kinds\(id=[01], u=$u, v=$v, p=$p\)$" "$WORK/echo.log" || true)
[[ $n -ge 12 ]] || fail "tessera echo printed $n Kinds samples (want 12)"
grep -qE "u=U\[Union\]\(3, 's[0-9]+'\)" "$WORK/echo.log" || fail "no sample of case b"
grep -qE "v=V\[Union\]\(<Color\.GREEN: 1>" "$WORK/echo.log" || fail "no sample of case g"
log "echo XtKinds: $n samples, e.g. $(grep -m1 -E '^Kinds' "$WORK/echo.log")"
m=$(grep -cE '^\{"id":[01],"p":(1|33),"u":\{.*"discriminator":-?[0-9]+.*\},"v":\{.*\}\}$' \
    "$WORK/echo-json.log" || true)
[[ $m -ge 6 ]] || fail "tessera echo --json printed $m Kinds samples (want 6)"
log "echo --json: $m samples, e.g. $(grep -m1 -E '^\{' "$WORK/echo-json.log")"

# 2. Python subscribes; Tessera learns the type from its reader and publishes.
start_bg py-sub python3 "$WORK/kinds.py" sub 16
sleep 1
start_bg pub "$TESSERA_BIN" pub XtKinds \
    '{"id": 1, "u": {"b": "t$i"}, "v": {"discriminator": "BLUE", "g": [$i, 2]}, "p": ["write", "exec"]}' \
    -n 10 -r 10 -w 10
wait_pid pub 25 || fail "tessera pub XtKinds failed"
# 3. cyclonedds typeof sees the Tessera writer's type while it runs.
start_bg pub2 "$TESSERA_BIN" pub XtKinds '{"id": 0, "u": {"a": $i}, "v": {"r": 1}, "p": 0}' \
    -n 40 -r 10 -w 10
sleep 2
cyclonedds typeof XtKinds >"$WORK/typeof.log" 2>&1 || true
wait_pid pub2 25 || fail "tessera pub XtKinds (second) failed"
wait_pid py-sub 20 || fail "the python subscriber failed"
n=$(grep -cE "^got Kinds\(id=1, u=U\[Union\]\(3, 't([0-9]+)'\), v=V\[Union\]\(<Color\.BLUE: 2>, \[\1, 2\]\), p=Perm\(read=False, write=True, exec=True\)\)$" \
    "$WORK/py-sub.log" || true)
[[ $n -ge 10 ]] || fail "the python reader got $n Kinds samples of tessera pub (want 10)"
log "python reader: $n samples, e.g. $(grep -m1 -E '^got Kinds' "$WORK/py-sub.log")"
grep -q "union U switch (int32)\|union U switch (long)" "$WORK/typeof.log" ||
    fail "cyclonedds typeof printed no union: $(head -c 600 "$WORK/typeof.log")"
grep -q "bitmask Perm" "$WORK/typeof.log" || fail "cyclonedds typeof printed no bitmask"
log "cyclonedds typeof: $(grep -c . "$WORK/typeof.log") lines, e.g. $(grep -m1 'union' "$WORK/typeof.log")"
log ok
