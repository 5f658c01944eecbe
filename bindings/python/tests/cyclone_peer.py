"""The Cyclone DDS 11 side (PyPI's cyclonedds) of test_interop.py, one line a sample:

    python3 cyclone_peer.py sub-status N      # prints "ready", "matched" (a writer matched),
                                              # then N hello::Status samples
    python3 cyclone_peer.py pub-greeting N    # writes N hello::Greeting once a reader matched

The types are declared here with Cyclone's own Python IDL classes, not shared with Tessera's
binding, so that the test checks the two agree on the wire (type names, keys, XCDR).
"""
import sys
import time
from dataclasses import dataclass
from typing import Optional

import cyclonedds.idl.types as types
from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import appendable, key
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


@dataclass
@appendable
class Status(IdlStruct, typename="hello::Status"):
    id: types.int32
    key("id")
    text: types.bounded_str[32]
    values: types.sequence[types.float64]
    code: Optional[types.int32]


@dataclass
class Greeting(IdlStruct, typename="hello::Greeting"):
    id: types.int32
    key("id")
    message: str
    values: types.sequence[types.float64]


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    dp = DomainParticipant(0)
    qos = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll)
    end = time.time() + 20
    if mode == "sub-status":
        # TRANSIENT_LOCAL: Cyclone's volatile reader starts at the sequence number of the
        # first HEARTBEAT it gets from a writer, so samples written right after matching may
        # be counted as the writer's history and skipped; a transient-local one asks for them.
        tl = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.History.KeepAll,
                 Policy.Durability.TransientLocal)
        r = DataReader(dp, Topic(dp, "PyStatus", Status), qos=tl)
        print_samples(r, n, end, lambda s: f"{s.id} {s.text} {list(s.values)} {s.code}")
    w = DataWriter(dp, Topic(dp, "PyGreetings", Greeting), qos=qos)
    write_samples(w, (Greeting(id=i, message=f"from cyclone {i}", values=[i * 0.5])
                      for i in range(n)), end)


def print_samples(r, n: int, end: float, fmt) -> None:
    """Prints "ready", "matched" once a writer matched, then `fmt` of each of `n` samples;
    exits (1 when fewer came by `end`)."""
    print("ready", flush=True)
    while not r.get_matched_publications() and time.time() < end:
        time.sleep(0.01)
    print("matched", flush=True)
    got = 0
    while got < n and time.time() < end:
        for s in r.take(N=64):
            print(fmt(s), flush=True)
            got += 1
        time.sleep(0.01)
    sys.exit(0 if got >= n else 1)


def write_samples(w, samples, end: float) -> None:
    """Writes `samples` once a reader matched (or at `end`)."""
    while not w.get_matched_subscriptions() and time.time() < end:
        time.sleep(0.02)
    for s in samples:
        w.write(s)
    time.sleep(1.0)  # reliable delivery of the last samples before the process goes


if __name__ == "__main__":
    main()
