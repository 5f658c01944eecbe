"""The Python (Cyclone DDS 11) side of tests/interop/cft_cyclone_py.sh.

    python3 cft_peer.py pub SECONDS   writes cft::Reading, labels "keep"/"drop" in turn
    python3 cft_peer.py sub SECONDS   reads it (a plain reader)
"""
import sys
import time
from dataclasses import dataclass

from cyclonedds.core import Qos, Policy
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import key
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration
import cyclonedds.idl.types as types


@dataclass
class Reading(IdlStruct, typename="cft::Reading"):
    id: types.int32
    key("id")
    seq: types.int32
    label: str


def main():
    mode = sys.argv[1]
    secs = float(sys.argv[2])
    dp = DomainParticipant(0)
    topic = Topic(dp, "CftReading", Reading)
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)))
    end = time.time() + secs
    if mode == "pub":
        w = DataWriter(dp, topic, qos=qos)
        seq = 0
        while time.time() < end:
            label = "keep" if seq % 2 == 0 else "drop"
            s = Reading(id=seq % 3, seq=seq, label=f"{label}{seq}")
            w.write(s)
            print(f"sent {s}", flush=True)
            seq += 1
            time.sleep(0.05)
        print(f"matched {len(w.get_matched_subscriptions())}", flush=True)
        return
    r = DataReader(dp, topic, qos=qos)
    while time.time() < end:
        for s in r.take(N=64):
            print(f"got {s}", flush=True)
        time.sleep(0.02)


if __name__ == "__main__":
    main()
