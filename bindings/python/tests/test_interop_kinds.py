"""Unions and bitmasks between this binding and Cyclone DDS 11's Python API (PyPI cyclonedds,
tests/cyclone_kinds_peer.py), both ways, in XCDR1 and XCDR2 where Cyclone writes the type in
both: `kinds::Flat` (final unions over long and over an enum; Tessera's side from IDL) and
`kinds::Ext` (an appendable union over short, a final one over uint8 with a default member;
Tessera's side declared in Python). Mutable unions are not part of it: cyclonedds-python
cannot serialize them (NotImplementedError). Maps are not either: cyclonedds-python builds no
TypeObject for a `Dict` member, so no Cyclone peer can announce one.
Every participant is in the test's network namespace (scripts/netns-run)."""

import enum
import subprocess
from dataclasses import dataclass
from typing import Annotated

import pytest
from test_interop import HERE, cyclone_python, wait_line

import tessera
from tessera.types import IdlUnion, bitmask, case, default, float32, int16, int32, key, topic
from tessera.types import uint8

N = 6

FLAT = tessera.from_idl("""
module kinds {
  enum Color { RED, GREEN, BLUE };
  union U switch (long) { case 1: case 2: long a; case 3: string b; default: double c; };
  union E switch (Color) { case RED: short r; case GREEN: case BLUE: sequence<uint8> g; };
  @bit_bound(12) bitmask Perm { read, write, @position(5) exec };
  struct Flat { @key long id; U u; E e; Perm p; };
};
""")
Flat, U, E, FPerm = (FLAT[f"kinds::{n}"] for n in ("Flat", "U", "E", "Perm"))


class V(IdlUnion, discriminator=int16, name="kinds::V", extensibility="appendable"):
    x: Annotated[float32, case(0)]
    s: Annotated[list[str], case(1, 2)]


class W(IdlUnion, discriminator=uint8, name="kinds::W"):
    n: Annotated[int, case(7)]
    t: Annotated[str, default]


@bitmask(name="kinds::Perm", bit_bound=12)
class Perm(enum.IntFlag):
    read = 1
    write = 2
    exec = 32


@topic(name="kinds::Ext", extensibility="appendable")
@dataclass
class Ext:
    id: Annotated[int32, key]
    v: V
    w: W
    p: Perm


def flat(i: int):
    """The values cyclone_kinds_peer.py's flat() writes."""
    u = U(a=i) if i % 3 == 0 else (U(b=f"s{i}") if i % 3 == 1 else U(discriminator=-i,
                                                                     value=i / 2))
    e = E(r=-i) if i % 2 == 0 else E(g=bytes([i % 256, 1]))
    return Flat(i, u, e, FPerm.read | (FPerm.exec if i % 2 == 1 else 0))


def ext(i: int) -> Ext:
    v = V(x=i / 4) if i % 2 == 0 else V(s=[f"e{i}", ""])
    w = W(n=-(i ** 3)) if i % 3 else W(discriminator=i % 7, value=f"d{i}")
    return Ext(i, v, w, Perm.write | (Perm.exec if i % 2 == 0 else 0))


def show(x) -> str:
    return repr(list(x)) if isinstance(x, (list, bytes)) else repr(x)


def line(s) -> str:
    """A sample as the peer prints it."""
    if isinstance(s, Ext):
        parts = [s.v.discriminator, show(s.v.value), s.w.discriminator, show(s.w.value)]
    else:
        parts = [s.u.discriminator, show(s.u.value), int(s.e.discriminator), show(s.e.value)]
    return " ".join(str(p) for p in [s.id, *parts, int(s.p)])


CASES = [("flat", "xcdr1"), ("flat", "xcdr2"), ("ext", "xcdr2")]
TYPES = {"flat": (Flat, flat, "PyKindsFlat"), "ext": (Ext, ext, "PyKindsExt")}


def peer(mode: str, kind: str, representation: str) -> subprocess.Popen:
    return subprocess.Popen([cyclone_python(), str(HERE / "cyclone_kinds_peer.py"), mode, kind,
                             representation, str(N)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("kind,representation", CASES)
def test_cyclone_writer_to_python_reader(kind, representation):
    cls, make, name = TYPES[kind]
    dp = tessera.DomainParticipant(0)
    r = dp.create_reader(dp.create_topic(name, cls), reliability="reliable",
                         history="keep_all")
    p = peer("pub", kind, representation)
    try:
        got = []
        for s in r.samples(timeout=20):
            got.append(s.data)
            if len(got) == N:
                break
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0, err
    got.sort(key=lambda s: s.id)
    assert [line(s) for s in got] == [line(make(i)) for i in range(N)]
    assert got == [make(i) for i in range(N)]


@pytest.mark.parametrize("kind,representation", CASES)
def test_python_writer_to_cyclone_reader(kind, representation):
    cls, make, name = TYPES[kind]
    p = peer("sub", kind, representation)
    try:
        wait_line(p, "ready")
        dp = tessera.DomainParticipant(0)
        w = dp.create_writer(dp.create_topic(name, cls), reliability="reliable",
                             history="keep_all", durability="transient_local",
                             data_representation=representation)
        assert w.wait_for_readers(1, timeout=20)
        wait_line(p, "matched")
        for i in range(N):
            w.write(make(i))
        w.wait_for_acknowledgments(timeout=10)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0, (out, err)
    assert sorted(out.splitlines()) == sorted(line(make(i)) for i in range(N))
