"""The Cyclone DDS 11 side (PyPI's cyclonedds) of test_interop_kinds.py: unions and bitmasks.

    python3 cyclone_kinds_peer.py pub TYPE REPR N   # writes N samples once a reader matched
    python3 cyclone_kinds_peer.py sub TYPE REPR N   # prints "ready", "matched", then N lines

TYPE is "flat" (a final struct of final unions: XCDR1 or XCDR2) or "ext" (an appendable
struct, an appendable union over short and a final one over uint8 with a default member: XCDR2,
as Cyclone writes such types; cyclonedds-python has no mutable unions); REPR is "xcdr1" or "xcdr2", the one
representation the Cyclone writer uses or the reader accepts. Each sample prints as one line,
`line()` below, which the test computes from its own values too (the same values: `flat()`
and `ext()` below). Declared with Cyclone's own
classes, not shared with Tessera's binding, so that the test checks the two agree on the wire.
"""
import sys
import time
from dataclasses import dataclass

import cyclonedds.idl.types as types
from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlBitmask, IdlEnum, IdlStruct, IdlUnion
from cyclonedds.idl.annotations import appendable, bit_bound, key, position
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration
from cyclone_peer import print_samples, write_samples


class Color(IdlEnum, typename="kinds::Color"):
    RED = 0
    GREEN = 1
    BLUE = 2


class U(IdlUnion, discriminator=types.int32, typename="kinds::U"):
    a: types.case[[1, 2], types.int32]
    b: types.case[[3], str]
    c: types.default[types.float64]


class E(IdlUnion, discriminator=Color, typename="kinds::E"):
    r: types.case[[Color.RED], types.int16]
    g: types.case[[Color.GREEN, Color.BLUE], types.sequence[types.uint8]]


@appendable
class V(IdlUnion, discriminator=types.int16, typename="kinds::V"):
    x: types.case[[0], types.float32]
    s: types.case[[1, 2], types.sequence[str]]


class W(IdlUnion, discriminator=types.uint8, typename="kinds::W"):
    n: types.case[[7], types.int64]
    t: types.default[str]


@dataclass
@bit_bound(12)
class Perm(IdlBitmask, typename="kinds::Perm"):
    read: bool = False
    write: bool = False
    exec: bool = False
    position("exec", 5)


@dataclass
class Flat(IdlStruct, typename="kinds::Flat"):
    id: types.int32
    key("id")
    u: U
    e: E
    p: Perm


@dataclass
@appendable
class Ext(IdlStruct, typename="kinds::Ext"):
    id: types.int32
    key("id")
    v: V
    w: W
    p: Perm


def perm_bits(p) -> int:
    return int(p.read) | int(p.write) << 1 | int(p.exec) << 5


def flat(i: int) -> Flat:
    # The default member with an explicit discriminator: Cyclone leaves it None locally.
    u = U(a=i) if i % 3 == 0 else (U(b=f"s{i}") if i % 3 == 1 else U(discriminator=-i, value=i / 2))
    e = E(r=-i) if i % 2 == 0 else E(g=[i % 256, 1])
    return Flat(id=i, u=u, e=e, p=Perm(read=True, exec=i % 2 == 1))


def ext(i: int) -> Ext:
    v = V(x=i / 4) if i % 2 == 0 else V(s=[f"e{i}", ""])
    w = W(n=-(i ** 3)) if i % 3 else W(discriminator=i % 7, value=f"d{i}")
    return Ext(id=i, v=v, w=w, p=Perm(write=True, exec=i % 2 == 0))


def show(x) -> str:
    """A member's value as both sides print it (sequences as lists, floats with repr)."""
    if isinstance(x, (list, bytes)):
        return repr(list(x))
    return repr(x)


def line(s) -> str:
    if isinstance(s, Flat):
        color = getattr(s.e.discriminator, "value", s.e.discriminator)  # an IdlEnum read back
        parts = [s.u.discriminator, show(s.u.value), color, show(s.e.value)]
    else:
        parts = [s.v.discriminator, show(s.v.value), s.w.discriminator, show(s.w.value)]
    return " ".join(str(p) for p in [s.id, *parts, perm_bits(s.p)])


def main():
    mode, kind, representation, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cls, make, name = (Flat, flat, "PyKindsFlat") if kind == "flat" else (Ext, ext, "PyKindsExt")
    repr_policy = Policy.DataRepresentation(use_cdrv0_representation=representation == "xcdr1",
                                            use_xcdrv2_representation=representation == "xcdr2")
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll,
              Policy.Durability.TransientLocal, repr_policy)
    dp = DomainParticipant(0)
    topic = Topic(dp, name, cls)
    end = time.time() + 20
    if mode == "sub":
        print_samples(DataReader(dp, topic, qos=qos), n, end, line)
    write_samples(DataWriter(dp, topic, qos=qos), (make(i) for i in range(n)), end)


if __name__ == "__main__":
    main()
