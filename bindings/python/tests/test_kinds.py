"""Unions, maps and bitmasks: declared in Python and from IDL, written by a Tessera writer and
read back by a Tessera reader in XCDR1 and XCDR2; and the values that do not fit them."""

import enum
from dataclasses import dataclass
from typing import Annotated

import pytest

import tessera
from test_types import roundtrip
from tessera.types import (
    IdlUnion, bitmask, bool_, bound, case, char, default, float32, int8, int16, int32, key,
    octet, topic, uint16, uint64,
)

REPRS = ["xcdr1", "xcdr2"]


class Color(enum.IntEnum):
    RED = 0
    GREEN = 5
    BLUE = 9


class ByInt(IdlUnion, discriminator=int32, name="k::ByInt"):
    small: Annotated[int16, case(1, 2)]
    text: Annotated[str, case(3)]
    other: Annotated[float, default]


class ByColor(IdlUnion, discriminator=Color, name="k::ByColor", extensibility="appendable"):
    red: Annotated[list[int32], case(Color.RED)]
    cool: Annotated[str, case(Color.GREEN, Color.BLUE)]


class ByChar(IdlUnion, discriminator=char, name="k::ByChar", extensibility="mutable"):
    a: Annotated[uint16, case("a")]
    table: Annotated[dict[str, int32], case("t")]


class ByBool(IdlUnion, discriminator=bool_, name="k::ByBool"):
    yes: Annotated[bytes, case(True)]


class ByOctet(IdlUnion, discriminator=octet, name="k::ByOctet", extensibility="appendable"):
    low: Annotated[int8, case(0)]
    rest: Annotated[ByInt, default]  # a union in a union


class ByU64(IdlUnion, discriminator=uint64, name="k::ByU64"):
    one: Annotated[float32, case(1)]


@bitmask(name="k::Perm", bit_bound=12)
class Perm(enum.IntFlag):
    READ = 1
    WRITE = 2
    EXEC = 32


def holder(ext: str):
    @topic(name=f"k::Holder_{ext}", extensibility=ext)
    @dataclass
    class Holder:
        id: Annotated[int32, key]
        i: ByInt
        c: ByColor
        ch: ByChar
        b: ByBool
        o: ByOctet
        u: ByU64
        perm: Perm
        counts: Annotated[dict[str, int32], bound(3)]
        by_id: dict[int32, ByColor]

    return Holder


def values(cls):
    return [
        cls(0, ByInt(small=-5), ByColor(red=[1, 2]), ByChar(a=7), ByBool(yes=b"\x01"),
            ByOctet(low=-1), ByU64(one=0.5), Perm.READ | Perm.EXEC, {"x": 1, "y": -2},
            {1: ByColor(cool="g"), 2: ByColor(discriminator=Color.BLUE, value="b")}),
        cls(1, ByInt(text="three"), ByColor(discriminator=9, value="blue"),
            ByChar(table={"k": 1}), ByBool(discriminator=False), ByOctet(rest=ByInt(other=2.5)),
            ByU64(discriminator=2**64 - 1), Perm(0), {}, {}),
        cls(2, ByInt(discriminator=-40, value=1.25), ByColor(cool="green"),
            ByChar(discriminator="z"), ByBool(yes=b""),
            ByOctet(discriminator=200, value=ByInt(discriminator=2, value=9)),
            ByU64(one=1.0), Perm.WRITE, {"a": 0, "b": 0, "c": 0}, {7: ByColor(red=[])}),
    ]


@pytest.mark.parametrize("representation", REPRS)
@pytest.mark.parametrize("ext", ["final", "appendable", "mutable"])
def test_declared_unions_maps_and_bitmasks_round_trip(participant, topic_name, ext,
                                                      representation):
    cls = holder(ext)
    want = values(cls)
    _, got = roundtrip(participant, topic_name, cls, want, data_representation=representation)
    assert got == want
    first, second, third = got
    assert first.i.case == "small" and first.i.discriminator == 1 and first.i.small == -5
    assert first.c.discriminator is Color.RED
    assert first.ch.discriminator == "a" and first.b.discriminator is True
    assert isinstance(first.perm, Perm) and first.perm == Perm.READ | Perm.EXEC
    assert first.by_id[2].discriminator is Color.BLUE and first.by_id[2].cool == "b"
    assert list(first.counts) == ["x", "y"]
    # The default member, by name (lowest value no case names) and by another value.
    assert second.o.rest.case == "other" and second.o.rest.discriminator == 0
    assert second.o.discriminator == 1 and third.o.discriminator == 200
    assert third.i.case == "other" and third.i.discriminator == -40
    # Discriminators selecting nothing: no value.
    assert second.b.case is None and second.b.value is None and second.b.discriminator is False
    assert third.ch.case is None and third.ch.discriminator == "z"
    assert second.u.case is None and second.u.discriminator == 2**64 - 1


UNIONS_IDL = """
enum Color { RED, GREEN, BLUE };
union U switch (long) {
  case 1: case 2: long a;
  case 3: string b;
  default: double c;
};
@bit_bound(12) bitmask Perm { read, write, @position(5) exec };
module M {
  @appendable union V switch (Color) {
    case RED: short r;
    case GREEN: case BLUE: sequence<uint8> g;
  };
};
@mutable union Mu switch (char) {
  case 'a': @id(7) unsigned short small_value;
  case 'b': map<string, long, 4> table;
};
union B switch (boolean) { case TRUE: string s; };
struct Holder {
  @key long id;
  U u;
  M::V v;
  Mu mu;
  B b;
  Perm p;
  map<long, M::V> by_id;
  sequence<Perm> perms;
};
"""


@pytest.mark.parametrize("representation", REPRS)
def test_idl_unions_maps_and_bitmasks_round_trip(participant, topic_name, representation):
    types = tessera.from_idl(UNIONS_IDL)
    assert {"Holder", "U", "M::V", "Mu", "B", "Perm", "Color"} <= set(types)
    Holder, U, V, Mu, B, Perm_, Color_ = (types[n] for n in
                                          ("Holder", "U", "M::V", "Mu", "B", "Perm", "Color"))
    assert issubclass(U, IdlUnion) and issubclass(Perm_, enum.IntFlag)
    vals = [
        Holder(1, U(a=4), V(r=-3), Mu(small_value=9), B(s="t"), Perm_.read | Perm_.exec,
               {5: V(g=[1, 2]), 6: V(discriminator=Color_.BLUE, value=[3])}, [Perm_.write, 0]),
        Holder(2, U(c=0.5), V(g=b"\x07"), Mu(table={"one": 1}), B(discriminator=False),
               Perm_(0), {}, []),
        Holder(3, U(discriminator=99, value=-1.0), V(discriminator=1, value=[]),
               Mu(discriminator="q"), B(discriminator=True, value=""), 0x21, {}, [0xFFF]),
    ]
    _, got = roundtrip(participant, topic_name, Holder, vals,
                       data_representation=representation)
    # A sequence<uint8> reads back as bytes.
    vals[0].by_id[5] = V(g=b"\x01\x02")
    vals[0].by_id[6] = V(discriminator=Color_.BLUE, value=b"\x03")
    vals[2].v = V(discriminator=Color_.GREEN, value=b"")
    assert got == vals
    assert got[0].u.discriminator == 1 and got[0].v.discriminator is Color_.RED
    assert got[1].u.discriminator == 0 and got[1].u.c == 0.5  # default: lowest free value
    assert got[2].u.discriminator == 99 and got[2].u.case == "c"
    assert got[0].mu.discriminator == "a" and got[2].mu.case is None
    assert got[0].p == Perm_.read | Perm_.exec and Perm_.exec in got[0].p
    assert got[2].p == 0x21 and isinstance(got[2].p, Perm_)


def test_union_value_api():
    u = ByInt(small=3)
    assert (u.discriminator, u.value, u.case, u.small) == (1, 3, "small", 3)
    with pytest.raises(AttributeError, match="not selected"):
        u.text
    u.text = "now"
    assert (u.discriminator, u.case, u.text) == (3, "text", "now")
    assert u == ByInt(discriminator=3, value="now") and u != ByInt(text="other")
    assert repr(u) == "ByInt(text='now')"
    assert repr(ByInt(discriminator=2, value=1)) == "ByInt(discriminator=2, value=1)"
    with pytest.raises(TypeError, match="one member"):
        ByInt(small=1, text="x")
    with pytest.raises(TypeError, match="no member"):
        ByInt(nothing=1)
    with pytest.raises(TypeError, match="needs a member"):
        ByInt()
    with pytest.raises(TypeError, match="give its value"):
        ByInt(discriminator=3)
    with pytest.raises(ValueError, match="selects no member"):
        ByBool(discriminator=False, value=b"x")
    with pytest.raises(ValueError):
        ByColor(discriminator=4, value="no such literal")
    with pytest.raises(ValueError, match="ISO 8859-1"):
        ByChar(discriminator="ab")
    with pytest.raises(AttributeError):
        u.discriminator = 1


def test_union_declaration_mistakes():
    with pytest.raises(TypeError, match="discriminator"):
        class NoDisc(IdlUnion):
            x: Annotated[int32, case(1)]

    class NoLabel(IdlUnion, discriminator=int32):
        x: int32

    with pytest.raises(TypeError, match="case"):
        NoLabel(x=1)

    class Twice(IdlUnion, discriminator=int32):
        x: Annotated[int32, case(1)]
        y: Annotated[int32, case(1)]

    with pytest.raises(ValueError, match="label 1"):
        Twice(x=1)

    class Reserved(IdlUnion, discriminator=int32):
        value: Annotated[int32, case(1)]

    with pytest.raises(ValueError, match="value"):
        Reserved(discriminator=1, value=1)
    with pytest.raises(ValueError, match="cannot be named 'value'"):
        tessera.from_idl("union W switch (long) { case 1: long value; };\n"
                         "struct S { W w; };")


def test_values_that_do_not_fit_raise_typed_errors(participant, topic_name):
    @topic(name="k::Fit")
    @dataclass
    class Fit:
        u: ByInt
        perm: Perm
        counts: Annotated[dict[str, int32], bound(2)]

    t = participant.create_topic(topic_name, Fit)
    w = participant.create_writer(t)
    ok = Fit(ByInt(small=1), Perm.READ, {"a": 1})
    w.write(ok)
    bad = [
        (Fit("not a union", Perm.READ, {}), TypeError, "member u"),
        (Fit(ByInt(small="x"), Perm.READ, {}), TypeError, "case small"),
        (Fit(ByInt(discriminator=2**40, value=1.0), Perm.READ, {}), ValueError, "out of range"),
        (Fit(ByInt(small=1), 1 << 12, {}), ValueError, "bit bound 12"),
        (Fit(ByInt(small=1), -1, {}), ValueError, "negative"),
        (Fit(ByInt(small=1), "READ", {}), TypeError, "is an int"),
        (Fit(ByInt(small=1), Perm.READ, {"a": 1, "b": 2, "c": 3}), ValueError, "bound 2"),
        (Fit(ByInt(small=1), Perm.READ, [("a", 1)]), TypeError, "expected a dict"),
        (Fit(ByInt(small=1), Perm.READ, {1: 1}), TypeError, "key 1"),
        (Fit(ByInt(small=1), Perm.READ, {"a": "one"}), TypeError, "'a'"),
    ]
    for value, exc, msg in bad:
        with pytest.raises(exc, match=msg):
            w.write(value)


def test_bitmask_declaration():
    @bitmask()
    class Plain(enum.IntFlag):
        A = 1
        B = 4
        AB = 5  # a combination, not a flag

    @dataclass
    class H:
        p: Plain

    _, _, name, bit_bound, flags = tessera.types.describe(H)[4][0][2]
    assert (name, bit_bound, flags) == ("Plain", 32, [("A", 0), ("B", 2)])
    with pytest.raises(ValueError):
        bitmask(bit_bound=65)
    with pytest.raises(TypeError):
        bitmask()(Color)


def test_data_representation_keyword(participant, topic_name):
    t = participant.create_topic(topic_name, holder("final"))
    participant.create_reader(t, data_representation=["xcdr2", "xcdr1"])
    for bad in ("xml", [], 2):
        with pytest.raises((ValueError, TypeError)):
            participant.create_writer(t, data_representation=bad)
