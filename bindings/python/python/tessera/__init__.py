"""Tessera DDS for Python.

::

    import tessera
    from dataclasses import dataclass
    from typing import Annotated
    from tessera.types import int32, key

    @dataclass
    class HelloWorld:
        id: Annotated[int32, key]
        message: str

    dp = tessera.DomainParticipant(domain_id=0)
    topic = dp.create_topic("hello", HelloWorld)
    writer = dp.create_writer(topic, reliability="reliable")
    reader = dp.create_reader(topic, reliability="reliable", history="keep_all")
    writer.write(HelloWorld(1, "hi"))
    for sample in reader.samples(timeout=1.0):
        print(sample.data, sample.info.instance_state)

Samples are Tessera's dynamic types underneath: standard XCDR with XTypes type information
on the wire, so Cyclone DDS, Fast DDS and Rust programs using the same type interoperate.
Every blocking call releases the GIL.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, AsyncIterator, Iterator, Optional

from . import types
from ._tessera import (
    Condition,
    DdsError,
    DdsTimeout,
    QosProfiles,
    Sample,
    SampleInfo,
    TopicType,
    idl_structs,
)
from ._tessera import Participant as _Participant

__all__ = [
    "DomainParticipant", "Topic", "DataWriter", "DataReader", "Qos", "QosProfiles", "Listener",
    "WaitSet", "GuardCondition", "Condition", "Sample", "SampleInfo", "StatusMask", "DdsError",
    "DdsTimeout", "from_idl", "types",
]


class StatusMask:
    """Status bits, as listeners and status conditions use them."""

    REQUESTED_DEADLINE_MISSED = 1 << 2
    REQUESTED_INCOMPATIBLE_QOS = 1 << 6
    SAMPLE_LOST = 1 << 7
    SAMPLE_REJECTED = 1 << 8
    DATA_AVAILABLE = 1 << 10
    LIVELINESS_CHANGED = 1 << 12
    SUBSCRIPTION_MATCHED = 1 << 14


class Qos:
    """A set of QoS keywords (see the README's Python section), reusable across entities:
    ``Qos(reliability="reliable", durability="transient_local", depth=10, deadline=0.5)``.
    Keywords given to ``create_writer``/``create_reader`` override the object's."""

    def __init__(self, **policies: Any):
        self.policies = dict(policies)

    def __repr__(self) -> str:
        return f"Qos({', '.join(f'{k}={v!r}' for k, v in self.policies.items())})"


def from_idl(text: str, file: str = "<idl>") -> dict[str, type]:
    """Dataclasses for every struct in IDL ``text``, by scoped name (``"Module::Type"``);
    registered under that name, like Cyclone's and Fast DDS's generated types. The enums
    (``enum.IntEnum``), unions (``tessera.types.IdlUnion``) and bitmasks (``enum.IntFlag``)
    the structs use are there too, by their scoped names."""
    out = {}
    memo: dict = {}
    for name, tree in idl_structs(text, file):
        out[name] = types.dataclass_of(tree, memo)[1]
    for name, tree in memo.items():
        out.setdefault(name, tree[1])
    return out


_compiled: dict[type, TopicType] = {}


def _topic_type(cls) -> TopicType:
    t = _compiled.get(cls)
    if t is None:
        tree = cls.__dict__.get("__tessera_tree__") or types.describe(cls)
        t = _compiled[cls] = TopicType(tree)
    return t


def _qos_dict(qos: Optional[Qos], kwargs: dict) -> dict:
    d = dict(qos.policies) if qos is not None else {}
    d.update(kwargs)
    return d


class Topic:
    """A topic: a name and a dataclass type."""

    def __init__(self, native, data_type: type):
        self._t = native
        self.data_type = data_type

    @property
    def name(self) -> str:
        return self._t.name

    @property
    def type_name(self) -> str:
        return self._t.type_name


class Listener:
    """Subclass and override what you need. Called on a Tessera thread with the GIL held:
    keep it short (take the samples, hand them to a queue)."""

    def on_data_available(self, reader: "DataReader") -> None:
        pass

    def on_subscription_matched(self, reader: "DataReader", status: tuple[int, int]) -> None:
        """``status`` is ``(total_count, current_count)``."""

    def on_requested_deadline_missed(self, reader: "DataReader", total_count: int) -> None:
        pass

    def on_requested_incompatible_qos(self, reader: "DataReader", total_count: int) -> None:
        pass

    def on_liveliness_changed(self, reader: "DataReader", status: tuple[int, int]) -> None:
        """``status`` is ``(alive_count, not_alive_count)``."""

    def on_sample_lost(self, reader: "DataReader", total_count: int) -> None:
        pass

    def on_sample_rejected(self, reader: "DataReader", total_count: int) -> None:
        pass


class DataWriter:
    """Writes values of its topic's dataclass."""

    def __init__(self, native, topic: Topic):
        self._w = native
        self.topic = topic

    def write(self, sample, timestamp_ns: Optional[int] = None) -> None:
        self._w.write(sample, timestamp_ns)

    def dispose(self, sample) -> None:
        """Disposes the instance of ``sample``'s key (other members are ignored)."""
        self._w.dispose(sample)

    def unregister_instance(self, sample) -> None:
        self._w.unregister_instance(sample)

    def matched_count(self) -> int:
        return self._w.matched_count()

    def wait_for_readers(self, n: int = 1, timeout: float = 10.0) -> bool:
        return self._w.wait_for_readers(n, timeout)

    def publication_matched(self) -> tuple[int, int]:
        """PUBLICATION_MATCHED as ``(total_count, current_count)``."""
        return self._w.publication_matched()

    def offered_incompatible_qos(self) -> int:
        """OFFERED_INCOMPATIBLE_QOS's total count: readers asking for more than it offers."""
        return self._w.offered_incompatible_qos()

    def offered_deadline_missed(self) -> int:
        return self._w.offered_deadline_missed()

    def liveliness_lost(self) -> int:
        return self._w.liveliness_lost()

    def wait_for_acknowledgments(self, timeout: float = 10.0) -> None:
        self._w.wait_for_acknowledgments(timeout)


class DataReader:
    """Reads values of its topic's dataclass, as ``Sample``s (``.data``, ``.info``).

    ``for sample in reader`` takes samples as they come and waits forever;
    ``reader.samples(timeout)`` stops after ``timeout`` seconds without one. ``async for``
    works the same way (``reader.samples_async(timeout)``); the waits run in the event loop's
    default executor, with the GIL released."""

    def __init__(self, native, topic: Topic, listener: Optional[Listener] = None):
        self._r = native
        self.topic = topic
        self._listener = None
        if listener is not None:
            self.set_listener(listener)

    def take(self, max: int = 256, timeout: Optional[float] = None) -> list[Sample]:
        return self._r.take(max, timeout)

    def read(self, max: int = 256, timeout: Optional[float] = None) -> list[Sample]:
        return self._r.read(max, timeout)

    def wait(self, timeout: Optional[float] = None) -> bool:
        return self._r.wait(timeout)

    def samples(self, timeout: Optional[float] = None) -> Iterator[Sample]:
        return self._r.samples(timeout)

    def __iter__(self) -> Iterator[Sample]:
        return self._r.samples(None)

    async def samples_async(self, timeout: Optional[float] = None) -> AsyncIterator[Sample]:
        loop = asyncio.get_running_loop()
        while True:
            batch = self._r.take(256)
            if batch:
                for s in batch:
                    yield s
                continue
            # Short waits, so that a cancelled task does not leave an executor thread
            # blocked for long.
            step = 0.1 if timeout is None else min(timeout, 0.1)
            waited = 0.0
            while not await loop.run_in_executor(None, self._r.wait, step):
                waited += step
                if timeout is not None and waited >= timeout:
                    return

    def __aiter__(self) -> AsyncIterator[Sample]:
        return self.samples_async(None)

    def matched_count(self) -> int:
        return self._r.matched_count()

    def wait_for_writers(self, n: int = 1, timeout: float = 10.0) -> bool:
        return self._r.wait_for_writers(n, timeout)

    def read_condition(self) -> Condition:
        return self._r.read_condition()

    def status_condition(self, mask: int = StatusMask.DATA_AVAILABLE) -> Condition:
        return self._r.status_condition(mask)

    def subscription_matched(self) -> tuple[int, int]:
        return self._r.subscription_matched()

    def requested_deadline_missed(self) -> int:
        return self._r.requested_deadline_missed()

    def requested_incompatible_qos(self) -> int:
        """REQUESTED_INCOMPATIBLE_QOS's total count: writers offering less than it asks."""
        return self._r.requested_incompatible_qos()

    def liveliness_changed(self) -> tuple[int, int]:
        """LIVELINESS_CHANGED as ``(alive_count, not_alive_count)``."""
        return self._r.liveliness_changed()

    def sample_lost(self) -> int:
        """SAMPLE_LOST's total count: samples that never reached this reader."""
        return self._r.sample_lost()

    def sample_rejected(self) -> int:
        """SAMPLE_REJECTED's total count: samples its resource limits refused."""
        return self._r.sample_rejected()

    def set_listener(self, listener: Optional[Listener]) -> None:
        """Installs ``listener`` (``None`` removes it)."""
        self._listener = listener
        if listener is None:
            self._r.set_status_callback(None)
            return
        import weakref

        me = weakref.ref(self)  # the native reader must not keep this wrapper alive

        def dispatch(mask: int) -> None:
            r = me()
            if r is None or r._listener is None:
                return
            lst = r._listener
            if mask & StatusMask.DATA_AVAILABLE:
                lst.on_data_available(r)
            if mask & StatusMask.SUBSCRIPTION_MATCHED:
                lst.on_subscription_matched(r, r._r.subscription_matched())
            if mask & StatusMask.REQUESTED_DEADLINE_MISSED:
                lst.on_requested_deadline_missed(r, r._r.requested_deadline_missed())
            if mask & StatusMask.REQUESTED_INCOMPATIBLE_QOS:
                lst.on_requested_incompatible_qos(r, r._r.requested_incompatible_qos())
            if mask & StatusMask.LIVELINESS_CHANGED:
                lst.on_liveliness_changed(r, r._r.liveliness_changed())
            if mask & StatusMask.SAMPLE_LOST:
                lst.on_sample_lost(r, r._r.sample_lost())
            if mask & StatusMask.SAMPLE_REJECTED:
                lst.on_sample_rejected(r, r._r.sample_rejected())

        self._r.set_status_callback(dispatch)

    def close(self) -> None:
        """Removes the listener (the reader itself goes when unreferenced)."""
        self.set_listener(None)


def GuardCondition() -> Condition:  # noqa: N802 (a constructor to its users)
    """A condition the application triggers: ``g.set_trigger_value(True)``."""
    return Condition.guard()


from ._tessera import WaitSet  # noqa: E402  (after the classes it waits for)


class DomainParticipant:
    """A domain participant; its writers and readers share one publisher and one subscriber."""

    def __init__(self, domain_id: int = 0, profiles: Optional[QosProfiles] = None):
        self._p = _Participant(domain_id)
        self.profiles = profiles

    @property
    def domain_id(self) -> int:
        return self._p.domain_id

    def create_topic(self, name: str, data_type: type) -> Topic:
        """The topic ``name`` of the dataclass ``data_type`` (see ``tessera.types``) or of a
        class from ``tessera.from_idl``."""
        if not dataclasses.is_dataclass(data_type):
            raise TypeError(f"{data_type!r} is not a dataclass")
        return Topic(self._p.create_topic(name, _topic_type(data_type)), data_type)

    def _profiles(self, profiles, profile):
        p = profiles or self.profiles
        if profile is not None and p is None:
            p = QosProfiles.from_env()
            if p is None:
                raise ValueError(f"profile {profile!r} given, but no QoS profiles loaded")
        return p

    def create_writer(self, topic: Topic, qos: Optional[Qos] = None, *,
                      profile: Optional[str] = None, profiles: Optional[QosProfiles] = None,
                      **policies: Any) -> DataWriter:
        """A writer: QoS from ``profile`` (``"library::profile"``), then ``qos``, then
        keyword policies."""
        native = self._p.create_writer(topic._t, self._profiles(profiles, profile), profile,
                                       _qos_dict(qos, policies))
        return DataWriter(native, topic)

    def create_reader(self, topic: Topic, qos: Optional[Qos] = None, *,
                      profile: Optional[str] = None, profiles: Optional[QosProfiles] = None,
                      listener: Optional[Listener] = None, **policies: Any) -> DataReader:
        """A reader; QoS as for writers."""
        native = self._p.create_reader(topic._t, self._profiles(profiles, profile), profile,
                                       _qos_dict(qos, policies))
        return DataReader(native, topic, listener)
