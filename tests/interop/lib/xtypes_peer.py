"""The Python (Cyclone DDS 11) side of tests/interop/xtypes_cyclone_py.sh: the same two types
as crates/tessera/examples/xtypes_peer.rs, published or subscribed, one line a sample.

    python3 xtypes_peer.py pub|sub SECONDS
"""
import sys
import time
from dataclasses import dataclass
from typing import Optional

from cyclonedds.core import Qos, Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import key, appendable, mutable
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration
import cyclonedds.idl.types as types


@dataclass
@appendable
class ShapeType(IdlStruct, typename="ShapeType"):
    color: types.bounded_str[128]
    key("color")
    x: types.int32
    y: types.int32
    shapesize: types.int32
    additional_payload_size: types.sequence[types.byte]


@dataclass
@mutable
class Mut(IdlStruct, typename="xt::Mut"):
    id: types.int32
    key("id")
    text: str
    maybe: Optional[types.int64]
    list: types.sequence[types.int32]


def main():
    mode = sys.argv[1]
    secs = float(sys.argv[2])
    dp = DomainParticipant(0)
    ts = Topic(dp, "XtShape", ShapeType)
    tm = Topic(dp, "XtMut", Mut)
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)))
    end = time.time() + secs
    if mode == "pub":
        ws = DataWriter(dp, ts, qos=qos)
        wm = DataWriter(dp, tm, qos=qos)
        i = 0
        while time.time() < end:
            s = ShapeType(color="RED", x=i, y=-i, shapesize=5, additional_payload_size=[i % 256])
            m = Mut(id=i % 2, text=f"py{i}", maybe=(i * 7 if i % 2 else None), list=[i, i + 1, i + 2])
            ws.write(s)
            wm.write(m)
            print(f"sent {s} {m}", flush=True)
            i += 1
            time.sleep(0.1)
        return
    rs = DataReader(dp, ts, qos=qos)
    rm = DataReader(dp, tm, qos=qos)
    while time.time() < end:
        for r in (rs, rm):
            for s in r.take(N=64):
                print(f"got {s}", flush=True)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
