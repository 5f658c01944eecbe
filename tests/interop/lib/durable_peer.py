"""The Cyclone DDS 11 (PyPI cyclonedds) writer of tests/interop/durability_cyclone_py.sh.

    python3 durable_peer.py KIND INSTANCES COUNT DEPTH INTERVAL_MS TIMEOUT_S

Writes COUNT values to each of INSTANCES instances of `Reading` on topic "Durable" (the type
and topic of crates/tessera-durability/examples/durable_peer.rs), durability KIND (transient or
persistent), KEEP_LAST DEPTH, sleeping INTERVAL_MS after each round; waits until every matched
reader (the durability services) acknowledged them, prints `acknowledged GUID` (hex) and stays
until killed.
"""
import sys
import time
from dataclasses import dataclass

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import key
from cyclonedds.pub import DataWriter
from cyclonedds.topic import Topic
from cyclonedds.util import duration
import cyclonedds.idl.types as types


@dataclass
class Reading(IdlStruct, typename="Reading"):
    sensor: types.uint32
    key("sensor")
    value: types.uint32


def main():
    kind, instances, count, depth, interval_ms, timeout = sys.argv[1:7]
    instances, count, depth = int(instances), int(count), int(depth)
    interval, timeout = int(interval_ms) / 1000.0, float(timeout)
    durability = {
        "transient": Policy.Durability.Transient,
        "persistent": Policy.Durability.Persistent,
    }[kind]
    dp = DomainParticipant(0)
    topic = Topic(dp, "Durable", Reading)
    qos = Qos(
        durability,
        Policy.Reliability.Reliable(duration(seconds=1)),
        Policy.History.KeepLast(depth),
        Policy.DurabilityService(0, Policy.History.KeepLast(depth), -1, -1, -1),
        Policy.WriterDataLifecycle(autodispose=False),
    )
    w = DataWriter(dp, topic, qos=qos)
    deadline = time.time() + timeout
    while not w.get_matched_subscriptions():
        if time.time() > deadline:
            print("no durability service matched", flush=True)
            sys.exit(1)
        time.sleep(0.01)
    print(f"matched {len(w.get_matched_subscriptions())}", flush=True)
    for value in range(count):
        for sensor in range(instances):
            w.write(Reading(sensor=sensor, value=value))
        if interval > 0:
            time.sleep(interval)
    if not w.wait_for_acks(duration(seconds=timeout)):
        print("not acknowledged", flush=True)
        sys.exit(1)
    print(f"acknowledged {w.guid.hex}", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
