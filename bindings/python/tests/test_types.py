"""Topic types from dataclasses and from IDL, and the values that do and do not fit them."""

import enum
from dataclasses import dataclass, field
from typing import Annotated, Optional

import pytest

import tessera
from tessera.types import (
    array, bound, char, float32, int8, int16, int32, key, octet, topic, uint8, uint16, uint32,
    uint64,
)


class Color(enum.IntEnum):
    RED = 0
    GREEN = 5
    BLUE = 9


@dataclass
class Point:
    x: float32
    y: float32


@topic(name="test::Everything", extensibility="appendable")
@dataclass
class Everything:
    id: Annotated[int32, key]
    i8: int8
    u8: uint8
    o: octet
    i16: int16
    u16: uint16
    u32: uint32
    u64: uint64
    i64: int
    f64: float
    f32: float32
    flag: bool
    c: char
    name: Annotated[str, bound(16)]
    blob: bytes
    ints: list[int32]
    words: list[str]
    where: Point
    path: list[Point]
    grid: Annotated[list[list[int16]], array(2, 3)]
    color: Color
    note: Optional[str] = None
    extra: list[float] = field(default_factory=list)


def sample(i: int, note=None) -> Everything:
    return Everything(
        id=i, i8=-8, u8=200, o=7, i16=-30000, u16=60000, u32=4_000_000_000, u64=2**63 + 5,
        i64=-(2**62), f64=3.25, f32=1.5, flag=True, c="z", name="éa", blob=b"\x00\xff",
        ints=[1, -2, 3], words=["a", ""], where=Point(1.0, -2.0),
        path=[Point(0.5, 0.25), Point(3, 4)], grid=[[1, 2, 3], [4, 5, 6]], color=Color.GREEN,
        note=note, extra=[0.1],
    )


def roundtrip(participant, name, cls, values, **writer_qos):
    t = participant.create_topic(name, cls)
    r = participant.create_reader(t, reliability="reliable", history="keep_all")
    w = participant.create_writer(t, reliability="reliable", history="keep_all", **writer_qos)
    for v in values:
        w.write(v)
    got = []
    for s in r.samples(timeout=2.0):
        got.append(s.data)
        if len(got) == len(values):
            break
    return t, got


def test_every_kind_of_member_round_trips(participant, topic_name):
    values = [sample(1), sample(2, note="present")]
    t, got = roundtrip(participant, topic_name, Everything, values)
    assert t.type_name == "test::Everything"
    assert got == values
    assert isinstance(got[0].color, Color) and isinstance(got[0].where, Point)


def test_types_from_idl_round_trip(participant, topic_name):
    types = tessera.from_idl("""
        module geo {
          enum Kind { POINT, @value(7) AREA };
          typedef sequence<long, 8> Ids;
          struct Pos { double lat; double lon; };
          @appendable struct Site {
            @key string<32> name;
            Kind kind;
            Pos pos;
            Ids ids;
            octet tag[4];
            @optional long rank;
          };
        };
    """)
    assert set(types) == {"geo::Pos", "geo::Site", "geo::Kind"}  # the enum the structs use
    Site, Pos = types["geo::Site"], types["geo::Pos"]
    v = Site("home", 7, Pos(1.5, 2.5), [1, 2], b"abcd", None)
    w = Site("work", 0, Pos(0.0, 0.0), [], b"\x00\x00\x00\x01", 3)
    t, got = roundtrip(participant, topic_name, Site, [v, w])
    assert t.type_name == "geo::Site"
    assert got == [v, w]
    assert got[0].kind.name == "AREA"


def test_hints_without_an_idl_type_are_refused(participant, topic_name):
    @dataclass
    class Bad:
        d: dict

    with pytest.raises(TypeError, match=r"Bad\.d"):
        participant.create_topic(topic_name, Bad)


def test_values_that_do_not_fit_are_refused_naming_the_member(participant, topic_name):
    @dataclass
    class Small:
        a: int32
        b: Annotated[str, bound(3)]

    t = participant.create_topic(topic_name, Small)
    w = participant.create_writer(t)
    with pytest.raises(OverflowError):
        w.write(Small(2**40, "ok"))
    with pytest.raises(TypeError, match="member a"):
        w.write(Small("one", "ok"))
    with pytest.raises(ValueError):
        w.write(Small(1, "too long"))
    w.write(Small(1, "abc"))


def test_idl_errors_point_at_line_and_column():
    with pytest.raises(ValueError, match=r"robot\.idl:4:1"):
        tessera.from_idl("module m {\n struct S {\n  long x\n}; };", "robot.idl")


def test_same_name_with_another_type_is_refused(participant, topic_name):
    participant.create_topic(topic_name, Point)
    with pytest.raises(ValueError, match="exists"):
        participant.create_topic(topic_name, Everything)
