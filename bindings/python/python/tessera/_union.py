"""Discriminated unions (``tessera.types.IdlUnion``).

A union value holds a discriminator and the member it selects::

    class Mode(IdlUnion, discriminator=int32, name="demo::Mode", extensibility="final"):
        speed: Annotated[float32, case(1, 2)]   # case 1: case 2: float speed;
        label: Annotated[str, case(3)]          # case 3: string label;
        raw: Annotated[bytes, default]          # default: sequence<octet> raw;

    Mode(speed=2.5)                    # discriminator 1 (the member's first label)
    Mode(raw=b"x")                     # discriminator 0: the lowest value no case names
    Mode(discriminator=2, value=2.5)   # any label (or, for the default member, any other value)
    m.discriminator, m.value, m.case   # 2, 2.5, "speed"
    m.speed                            # 2.5; m.label raises AttributeError (not selected)
    m.label = "x"                      # selects label: discriminator 3

Labels are ints, bools (a ``boolean`` discriminator), one-character strs (``char``) or enum
members (an ``enum.IntEnum`` discriminator); the discriminator reads back in that form.
"""

from __future__ import annotations

import typing
from typing import Any, Optional

_UNSET = object()
# Attributes of every union: no member may be named so.
_RESERVED = ("discriminator", "value", "case")


class case:  # noqa: N801 (reads like an annotation)
    """A union member's labels: ``Annotated[float32, case(1, 2)]``."""

    def __init__(self, *labels: Any):
        if not labels:
            raise TypeError("case() needs at least one label")
        self.labels = labels

    def __repr__(self) -> str:
        return f"case{self.labels!r}"


class _Default:
    def __repr__(self) -> str:
        return "tessera.types.default"


#: Marks a union's default member, selected by every discriminator no case names:
#: ``Annotated[str, default]`` (with ``case(...)`` as well when it has labels too).
default = _Default()


def _label_int(x: Any) -> int:
    """A label or discriminator as the wire holds it (bool 0/1, a char its code)."""
    if isinstance(x, str):
        if len(x) != 1 or ord(x) > 0xFF:
            raise ValueError(f"{x!r} is not one ISO 8859-1 character")
        return ord(x)
    if isinstance(x, int):  # bool and enum members too
        return int(x)
    raise TypeError(f"a union label or discriminator is an int, bool, one-character str or "
                    f"enum member, not {type(x).__name__}")


class _UnionInfo:
    """What a union class needs per value: which member a discriminator selects, and the
    discriminator each member takes when given by name."""

    def __init__(self, cls, tree):
        _, _, name, _, disc, _, cases = tree
        self.name = name
        self.disc = disc
        self.by_label: dict[int, str] = {}
        self.default: Optional[str] = None
        self.first: dict[str, int] = {}
        for (m, _, labels, is_default, _) in cases:
            if m in _RESERVED or m.startswith("_"):
                raise ValueError(f"union {name}: a member cannot be named {m!r} in Python "
                                 f"(the union's own attributes are {', '.join(_RESERVED)})")
            for lab in labels:
                if lab in self.by_label:
                    raise ValueError(f"union {name}: label {lab} selects {self.by_label[lab]} "
                                     f"and {m}")
                self.by_label[lab] = m
            if is_default:
                if self.default is not None:
                    raise ValueError(f"union {name}: two default members")
                self.default = m
            if labels:
                self.first[m] = labels[0]
        if self.default is not None and self.default not in self.first:
            self.first[self.default] = self._unused()

    def _unused(self) -> int:
        """The discriminator of the default member: the first enum literal, or the lowest
        non-negative value, that no case names."""
        if isinstance(self.disc, tuple) and self.disc[0] == "enum":
            values = [v for (_, v) in self.disc[3]]
        elif self.disc == "bool":
            values = [0, 1]
        else:
            values = range(len(self.by_label) + 1)
        for v in values:
            if v not in self.by_label:
                return v
        raise ValueError(f"union {self.name}: every discriminator value has a case, so the "
                         f"default member can never be selected")

    def select(self, d: int) -> Optional[str]:
        return self.by_label.get(d, self.default)

    def to_py(self, d: int) -> Any:
        """The discriminator's Python form."""
        if self.disc == "bool":
            return bool(d)
        if self.disc == "char":
            return chr(d)
        if isinstance(self.disc, tuple) and self.disc[0] == "enum" and self.disc[1] is not None:
            return self.disc[1](d)  # ValueError for a value that is no literal
        return d


def _declared_tree(cls) -> tuple:
    """The description tree of a union declared in Python (``class U(IdlUnion, ...)``)."""
    from .types import _field_type

    disc, name, ext, disc_key = cls.__tessera_decl__
    disc_desc, _, _ = _field_type(disc, f"{cls.__name__} discriminator")
    enum_disc = isinstance(disc_desc, tuple) and disc_desc[0] == "enum"
    hints = typing.get_type_hints(cls, include_extras=True)
    cases = []
    for i, (m, hint) in enumerate(
            (m, h) for m, h in hints.items() if typing.get_origin(h) is not typing.ClassVar):
        extras = typing.get_args(hint)[1:] if typing.get_origin(hint) is typing.Annotated else ()
        labels = [_label_int(lab) for x in extras if isinstance(x, case) for lab in x.labels]
        is_default = any(isinstance(x, _Default) for x in extras)
        if not labels and not is_default:
            raise TypeError(f"{cls.__name__}.{m}: a union member needs case(...) or default "
                            f"in Annotated[...]")
        if enum_disc:
            literals = {v for (_, v) in disc_desc[3]}
            bad = [lab for lab in labels if lab not in literals]
            if bad:
                raise ValueError(f"{cls.__name__}.{m}: label {bad[0]} is no literal of "
                                 f"{disc_desc[2]}")
        desc, is_key, optional = _field_type(hint, f"{cls.__name__}.{m}")
        if is_key or optional:
            raise TypeError(f"{cls.__name__}.{m}: a union member is neither a key nor optional")
        cases.append((m, i, labels, is_default, desc))
    return ("union", cls, name, ext, disc_desc, disc_key, cases)


class IdlUnion:
    """Base class of discriminated unions: ``class U(IdlUnion, discriminator=int32)`` with
    members ``Annotated[T, case(label, ...)]`` or ``Annotated[T, default]``; keywords
    ``name`` (the registered name, default: the class name), ``extensibility`` (``"final"``,
    ``"appendable"``, ``"mutable"``) and ``discriminator_key``. See ``tessera._union``."""

    __slots__ = ("_d", "_value", "_case")

    def __init_subclass__(cls, discriminator: Any = None, name: Optional[str] = None,
                          extensibility: str = "final", discriminator_key: bool = False,
                          **kw: Any):
        super().__init_subclass__(**kw)
        if "__tessera_tree__" in cls.__dict__:
            return  # made from IDL, with its tree
        if discriminator is None:
            raise TypeError(f"class {cls.__name__}(IdlUnion, discriminator=...): the "
                            f"discriminator type is missing")
        cls.__tessera_decl__ = (discriminator, name or cls.__name__, extensibility,
                                discriminator_key)

    @classmethod
    def _tree(cls) -> tuple:
        # Built on first use, not at class creation: type hints may name later classes.
        if cls.__dict__.get("__tessera_tree__") is None:
            cls.__tessera_tree__ = _declared_tree(cls)
        return cls.__tessera_tree__

    @classmethod
    def _info(cls) -> _UnionInfo:
        info = cls.__dict__.get("__tessera_info__")
        if info is None:
            info = cls.__tessera_info__ = _UnionInfo(cls, cls._tree())
        return info

    def __init__(self, discriminator: Any = _UNSET, value: Any = _UNSET, **member: Any):
        cls = type(self)
        info = cls._info()
        if member:
            if len(member) != 1 or discriminator is not _UNSET or value is not _UNSET:
                raise TypeError(f"{cls.__name__}: give one member ({cls.__name__}(m=...)) or "
                                f"discriminator= and value=")
            ((m, value),) = member.items()
            if m not in info.first:
                raise TypeError(f"{cls.__name__} has no member {m!r}")
            d = info.first[m]
        elif discriminator is _UNSET:
            raise TypeError(f"{cls.__name__}() needs a member ({cls.__name__}(m=...)) or "
                            f"discriminator= and value=")
        else:
            d = _label_int(discriminator)
            m = info.select(d)
            if m is not None and value is _UNSET:
                raise TypeError(f"{cls.__name__}: discriminator {discriminator!r} selects "
                                f"{m}: give its value")
            if value is _UNSET:
                value = None
            elif m is None and value is not None:
                raise ValueError(f"{cls.__name__}: discriminator {discriminator!r} selects no "
                                 f"member, but a value is given")
        object.__setattr__(self, "_d", info.to_py(d))
        object.__setattr__(self, "_value", value)
        object.__setattr__(self, "_case", m)

    @property
    def discriminator(self) -> Any:
        return self._d

    @property
    def value(self) -> Any:
        """The selected member's value (``None`` when the discriminator selects none)."""
        return self._value

    @property
    def case(self) -> Optional[str]:
        """The selected member's name (``None`` when the discriminator selects none)."""
        return self._case

    def __getattr__(self, name: str) -> Any:
        # Only reached for names the class does not have: the members.
        if not name.startswith("_") and name in type(self)._info().first:
            if name == self._case:
                return self._value
            raise AttributeError(f"{type(self).__name__}.{name} is not selected: discriminator "
                                 f"{self._d!r} selects {self._case or 'no member'}")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        info = type(self)._info()
        if name in info.first:
            object.__setattr__(self, "_d", info.to_py(info.first[name]))
            object.__setattr__(self, "_value", value)
            object.__setattr__(self, "_case", name)
        elif name in _RESERVED:
            raise AttributeError(f"set a member ({type(self).__name__.lower()}.m = x), or "
                                 f"make a new value with discriminator= and value=")
        else:
            object.__setattr__(self, name, value)

    def __eq__(self, other: Any) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return _label_int(self._d) == _label_int(other._d) and self._value == other._value

    __hash__ = None  # type: ignore[assignment]  (mutable, like a dataclass)

    def __repr__(self) -> str:
        name = type(self).__name__
        if self._case is not None and type(self)._info().first[self._case] == _label_int(self._d):
            return f"{name}({self._case}={self._value!r})"
        return f"{name}(discriminator={self._d!r}, value={self._value!r})"
