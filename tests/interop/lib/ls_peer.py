"""The Python (Cyclone DDS 11) side of tests/interop/ls_typeof.sh: endpoints whose QoS do not
match (a best-effort volatile writer and a reliable transient-local reader on LsQos), and a
writer of a nested @mutable type with an enum and an @optional member on LsType, for
`tessera ls` and `tessera typeof` to find.

    python3 ls_peer.py SECONDS
"""
import sys
import time
from dataclasses import dataclass
from typing import Optional

from cyclonedds.core import Qos, Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct, IdlEnum
from cyclonedds.idl.annotations import key, mutable
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration
import cyclonedds.idl.types as types


class Mode(IdlEnum, typename="ls::Mode"):
    IDLE = 0
    BUSY = 1


@dataclass
class Sample(IdlStruct, typename="ls::Sample"):
    value: types.float64
    mode: Mode


@dataclass
@mutable
class Report(IdlStruct, typename="ls::Report"):
    id: types.uint32
    key("id")
    name: types.bounded_str[16]
    note: Optional[str]
    samples: types.sequence[Sample]


@dataclass
class Plain(IdlStruct, typename="ls::Plain"):
    n: types.int32


def main():
    secs = float(sys.argv[1])
    dp = DomainParticipant(0)
    tq = Topic(dp, "LsQos", Plain)
    # Kept in variables: an endpoint without a reference is deleted at once.
    wq = DataWriter(dp, tq, qos=Qos(Policy.Reliability.BestEffort, Policy.Durability.Volatile))
    rq = DataReader(dp, tq, qos=Qos(Policy.Reliability.Reliable(duration(seconds=1)),
                                    Policy.Durability.TransientLocal))
    tt = Topic(dp, "LsType", Report)
    w = DataWriter(dp, tt, qos=Qos(Policy.Reliability.Reliable(duration(seconds=1))))
    end = time.time() + secs
    i = 0
    while time.time() < end:
        w.write(Report(id=i % 3, name="r", note=None, samples=[Sample(value=i, mode=Mode.BUSY)]))
        i += 1
        time.sleep(0.1)
    del wq, rq


if __name__ == "__main__":
    main()
