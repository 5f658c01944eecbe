"""Topic types from Python dataclasses.

A field's type hint says its IDL type::

    from dataclasses import dataclass
    from typing import Annotated, Optional
    from tessera.types import int32, float32, key, bound, array, topic

    @topic(name="demo::Reading", extensibility="appendable")
    @dataclass
    class Reading:
        sensor: Annotated[int32, key]          # @key long
        value: float32                         # float
        label: Annotated[str, bound(32)]       # string<32>
        history: list[float]                   # sequence<double>
        raw: bytes                             # sequence<octet>
        pose: Annotated[list[float], array(3)] # double pose[3]
        note: Optional[str] = None             # @optional string
        limits: Annotated[dict[str, float], bound(8)]  # map<string, double, 8>
        mode: Mode                             # a union (an IdlUnion subclass, below)
        perms: Perm                            # a bitmask (an enum.IntFlag)

    class Mode(IdlUnion, discriminator=int32, name="demo::Mode"):
        speed: Annotated[float32, case(1, 2)]  # case 1: case 2: float speed;
        label: Annotated[str, case(3)]         # case 3: string label;
        raw: Annotated[bytes, default]         # default: sequence<octet> raw;

    @bitmask(name="demo::Perm", bit_bound=8)
    class Perm(enum.IntFlag):
        READ = 1                               # @position(0)
        EXEC = 4                               # @position(2)

Plain ``int`` is ``int64``, ``float`` is ``float64``, ``str`` an unbounded ``string``, ``bool``
``boolean``, ``bytes`` ``sequence<octet>``, ``list[T]`` ``sequence<T>``, ``dict[K, V]``
``map<K, V>``, a nested dataclass a nested struct, an ``enum.IntEnum`` an enum, an
``enum.IntFlag`` a bitmask and an ``IdlUnion`` subclass a union. Member ids are sequential
from 0.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
import typing
from typing import Annotated, Any

__all__ = [
    "bool_", "octet", "char", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64",
    "uint64", "float32", "float64", "key", "bound", "array", "topic", "describe", "IdlUnion",
    "case", "default", "bitmask",
]


class _Prim:
    """Marks a field's primitive IDL type (inside ``Annotated``)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"tessera.types.{self.name}"


bool_ = Annotated[bool, _Prim("bool")]
octet = Annotated[int, _Prim("octet")]
char = Annotated[str, _Prim("char")]
int8 = Annotated[int, _Prim("int8")]
uint8 = Annotated[int, _Prim("uint8")]
int16 = Annotated[int, _Prim("int16")]
uint16 = Annotated[int, _Prim("uint16")]
int32 = Annotated[int, _Prim("int32")]
uint32 = Annotated[int, _Prim("uint32")]
int64 = Annotated[int, _Prim("int64")]
uint64 = Annotated[int, _Prim("uint64")]
float32 = Annotated[float, _Prim("float32")]
float64 = Annotated[float, _Prim("float64")]


class _Key:
    def __repr__(self) -> str:
        return "tessera.types.key"


#: Marks a key member: ``Annotated[int32, key]``.
key = _Key()


@dataclasses.dataclass(frozen=True)
class bound:  # noqa: N801 (reads like an annotation)
    """The bound of a string or sequence: ``Annotated[str, bound(16)]``."""

    n: int


@dataclasses.dataclass(frozen=True)
class array:  # noqa: N801
    """Makes a ``list[T]`` (or ``bytes``) field an array: ``Annotated[list[int32], array(4)]``;
    several dimensions as ``array(2, 3)``."""

    def __init__(self, *dims: int):
        object.__setattr__(self, "dims", tuple(dims))

    dims: tuple = ()


def topic(name: str | None = None, extensibility: str = "final"):
    """Sets a dataclass's registered type name (default: the class name) and extensibility
    (``"final"``, ``"appendable"`` or ``"mutable"``)."""

    def mark(cls):
        cls.__tessera_type__ = (name or cls.__name__, extensibility)
        return cls

    return mark


_PLAIN = {int: "int64", float: "float64", bool: "bool", str: ("string", 0)}


def _field_type(hint: Any, owner: str) -> tuple[Any, bool, bool]:
    """(description, key, optional) of a type hint."""
    is_key = False
    optional = False
    prim = None
    bnd = 0
    dims = None
    origin = typing.get_origin(hint)
    if origin is Annotated:
        hint, *extras = typing.get_args(hint)
        for x in extras:
            if isinstance(x, _Prim):
                prim = x.name
            elif isinstance(x, _Key):
                is_key = True
            elif isinstance(x, bound):
                bnd = x.n
            elif isinstance(x, array):
                dims = list(x.dims)
        origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or (sys.version_info >= (3, 10) and origin is _union_type()):
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(rest) == len(args):
            raise TypeError(f"{owner}: only Optional[T] unions are supported, not {hint}")
        desc, inner_key, _ = _field_type(rest[0], owner)
        return desc, inner_key or is_key, True
    if prim is not None:
        desc: Any = prim
    elif hint is bytes:
        desc = ("sequence", "octet", bnd)
    elif origin is list:
        (el,) = args
        el_desc, _, _ = _field_type(el, owner)
        desc = ("sequence", el_desc, bnd)
    elif origin is dict:
        k, v = args
        desc = ("map", _field_type(k, owner)[0], _field_type(v, owner)[0], bnd)
    elif hint is str:
        desc = ("string", bnd)
    elif hint in _PLAIN:
        desc = _PLAIN[hint]
    elif isinstance(hint, type) and issubclass(hint, enum.IntFlag):
        desc = _bitmask_tree(hint)
    elif isinstance(hint, type) and issubclass(hint, IdlUnion):
        desc = hint._tree()
    elif isinstance(hint, type) and issubclass(hint, enum.IntEnum):
        desc = ("enum", hint, getattr(hint, "__tessera_name__", hint.__name__),
                [(m.name, int(m.value)) for m in hint])
    elif dataclasses.is_dataclass(hint):
        desc = describe(hint)
    else:
        raise TypeError(f"{owner}: no IDL type for {hint!r}")
    if dims is not None:
        # array(2, 3) on list[list[T]]: one list level per dimension.
        el = desc
        for _ in dims:
            if not (isinstance(el, tuple) and el[0] == "sequence"):
                raise TypeError(f"{owner}: array{tuple(dims)} needs {len(dims)} levels of list[...]")
            el = el[1]
        desc = ("array", el, dims)
    return desc, is_key, optional


def _union_type():
    import types as _t

    return _t.UnionType


def describe(cls) -> tuple:
    """The description tree the native module compiles (see ``src/types.rs``)."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not a dataclass")
    name, ext = getattr(cls, "__dict__", {}).get("__tessera_type__", (cls.__name__, "final"))
    hints = typing.get_type_hints(cls, include_extras=True)
    members = []
    for i, f in enumerate(dataclasses.fields(cls)):
        desc, is_key, optional = _field_type(hints[f.name], f"{cls.__name__}.{f.name}")
        members.append((f.name, i, desc, is_key, optional))
    return ("struct", cls, name, ext, members)


def dataclass_of(tree, memo: dict | None = None):
    """Makes dataclasses for a description tree from IDL (whose classes are ``None``); the
    tree with the classes filled in. ``memo`` (scoped name → filled tree) makes a struct used
    in several places one class."""
    memo = {} if memo is None else memo
    kind = tree[0] if isinstance(tree, tuple) else None
    if kind == "sequence":
        return ("sequence", dataclass_of(tree[1], memo), tree[2])
    if kind == "array":
        return ("array", dataclass_of(tree[1], memo), tree[2])
    if kind == "map":
        return ("map", dataclass_of(tree[1], memo), dataclass_of(tree[2], memo), tree[3])
    if kind not in ("struct", "enum", "union", "bitmask"):
        return tree
    name = tree[2]
    if name in memo:
        return memo[name]
    short = name.split("::")[-1]
    if kind == "enum":
        memo[name] = ("enum", enum.IntEnum(short, dict(tree[3])), name, tree[3])
        return memo[name]
    if kind == "bitmask":
        _, _, _, bit_bound, flags = tree
        cls = enum.IntFlag(short, {f: 1 << p for f, p in flags})
        cls.__module__ = "tessera.idl"
        cls.__tessera_name__, cls.__tessera_bit_bound__ = name, bit_bound
        memo[name] = ("bitmask", cls, name, bit_bound, flags)
        return memo[name]
    if kind == "union":
        _, _, _, ext, disc, disc_key, cases = tree
        cls = type(short, (IdlUnion,), {"__module__": "tessera.idl", "__tessera_tree__": None})
        filled = [(m, i, labels, d, dataclass_of(t, memo)) for (m, i, labels, d, t) in cases]
        cls.__tessera_tree__ = ("union", cls, name, ext, dataclass_of(disc, memo), disc_key,
                                filled)
        cls._info()  # refuses member names that clash with the union's attributes
        memo[name] = cls.__tessera_tree__
        return memo[name]
    _, _, _, ext, members = tree
    filled = [(m, i, dataclass_of(t, memo), k, o) for (m, i, t, k, o) in members]
    # Optional members default to None, as long as no required member follows one (a
    # dataclass's rule); positional order stays the IDL's either way.
    all_default = not _defaults_last(filled)
    fields = [(m, object, dataclasses.field(default=None)) if (o or all_default) else (m, object)
              for (m, _, _, _, o) in filled]
    cls = dataclasses.make_dataclass(short, fields)
    cls.__module__ = "tessera.idl"
    cls.__tessera_type__ = (name, ext)
    cls.__tessera_tree__ = ("struct", cls, name, ext, filled)
    memo[name] = cls.__tessera_tree__
    return memo[name]


def _defaults_last(members) -> bool:
    seen_optional = False
    for (_, _, _, _, optional) in members:
        if optional:
            seen_optional = True
        elif seen_optional:
            return False
    return True


def _bitmask_tree(cls) -> tuple:
    """An ``enum.IntFlag``'s tree: its single-bit members are the flags (combinations and
    aliases are not)."""
    flags: dict[int, str] = {}
    for n, m in cls.__members__.items():
        v = int(m.value)
        if v > 0 and v & (v - 1) == 0:
            flags.setdefault(v.bit_length() - 1, n)
    return ("bitmask", cls, getattr(cls, "__tessera_name__", cls.__name__),
            getattr(cls, "__tessera_bit_bound__", 32), [(n, p) for p, n in sorted(flags.items())])


def bitmask(name: str | None = None, bit_bound: int = 32):
    """Sets an ``enum.IntFlag`` class's registered name (default: the class name) and
    ``@bit_bound`` (1 to 64; 32 by default, as in IDL). Its single-bit members are the flags,
    at the positions of their bits."""
    if not 1 <= bit_bound <= 64:
        raise ValueError(f"bit_bound {bit_bound} is not within 1 to 64")

    def mark(cls):
        if not (isinstance(cls, type) and issubclass(cls, enum.IntFlag)):
            raise TypeError(f"@bitmask goes on an enum.IntFlag class, not {cls!r}")
        cls.__tessera_name__ = name or cls.__name__
        cls.__tessera_bit_bound__ = bit_bound
        return cls

    return mark


from ._union import IdlUnion, case, default  # noqa: E402  (it uses _field_type)
