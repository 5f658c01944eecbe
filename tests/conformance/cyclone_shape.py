#!/usr/bin/env python3
"""A shape application on Cyclone DDS 11 (PyPI's `cyclonedds`), with the options and output
of the OMG interoperability suite's shape_main, so that tests/conformance/shape_suite.py can run
Tessera against Cyclone in both directions.

Cyclone has no SQL content filters, no Presentation and no per-reader time-based filtering in
this binding: those options print "not supported", as the suite expects of a program that lacks
a feature. Statuses are polled once per write or read period, like `tessera shape`.
"""

import signal
import sys
import time
from dataclasses import dataclass, field

from cyclonedds.core import InstanceState, Policy, Qos, ReadCondition, SampleState, ViewState
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import appendable, key
from cyclonedds.pub import DataWriter, Publisher
from cyclonedds.sub import DataReader, Subscriber
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
    additional_payload_size: types.sequence[types.uint8] = field(default_factory=list)


STOP = False


def on_signal(*_):
    global STOP
    STOP = True


def parse(argv):
    o = dict(role=None, domain=0, reliable=True, depth=None, deadline=None, strength=-1,
             topic="Square", color=None, partition=None, durability="v", xcdr=1, print_writes=False,
             size=20, use_read=False, write_period=33, read_period=100, lifespan=None,
             iterations=None, instances=1, topics=1, final=None, payload=0, take_read=False,
             size_modulo=None, unsupported=[])
    it = iter(argv)
    for a in it:
        v = (lambda: next(it))
        if a == "-P": o["role"] = "pub"
        elif a == "-S": o["role"] = "sub"
        elif a == "-d": o["domain"] = int(v())
        elif a == "-b": o["reliable"] = False
        elif a == "-r": o["reliable"] = True
        elif a == "-k": o["depth"] = int(v())
        elif a == "-f": o["deadline"] = int(v())
        elif a == "-s": o["strength"] = int(v())
        elif a == "-t": o["topic"] = v()
        elif a == "-c": o["color"] = v()
        elif a == "-p": o["partition"] = v()
        elif a == "-D": o["durability"] = v()
        elif a == "-x": o["xcdr"] = int(v())
        elif a == "-w": o["print_writes"] = True
        elif a == "-z": o["size"] = int(v())
        elif a == "-R": o["use_read"] = True
        elif a == "-v": v()
        elif a == "--write-period": o["write_period"] = int(v())
        elif a == "--read-period": o["read_period"] = int(v())
        elif a == "--lifespan": o["lifespan"] = int(v())
        elif a == "--num-iterations": o["iterations"] = int(v())
        elif a == "--num-instances": o["instances"] = max(1, int(v()))
        elif a == "--num-topics": o["topics"] = max(1, int(v()))
        elif a == "--final-instance-state": o["final"] = v()
        elif a == "--additional-payload-size": o["payload"] = int(v())
        elif a == "--take-read": o["take_read"] = True
        elif a == "--size-modulo": o["size_modulo"] = max(1, int(v()))
        elif a in ("--coherent", "--ordered"): o["unsupported"].append(a)
        elif a in ("--access-scope", "--coherent-sample-count", "--periodic-announcement",
                   "--datafrag-size", "--cft", "--time-filter"):
            v()
            o["unsupported"].append(a)
        else:
            raise SystemExit(f"unknown option {a}")
    if o["role"] is None:
        raise SystemExit("one of -P or -S is required")
    if o["role"] == "sub" and o["color"] is not None:
        o["unsupported"].append("-c (a content filter)")
    return o


def name(base, k):
    return base if k == 0 else f"{base}{k}"


def endpoint_qos(o, writer):
    ps = [Policy.Reliability.Reliable(duration(milliseconds=100)) if o["reliable"]
          else Policy.Reliability.BestEffort]
    d = o["durability"]
    ps.append({"v": Policy.Durability.Volatile, "l": Policy.Durability.TransientLocal,
               "t": Policy.Durability.Transient, "p": Policy.Durability.Persistent}[d])
    if o["depth"] is not None:
        history = Policy.History.KeepAll if o["depth"] <= 0 else Policy.History.KeepLast(o["depth"])
        ps.append(history)
        if writer and d != "v":
            # Cyclone keeps for late joiners what DURABILITY_SERVICE's history says (default
            # KEEP_LAST 1), not the writer's history: make them the same, as users do.
            ps.append(Policy.DurabilityService(0, history, -1, -1, -1))
    if o["deadline"] is not None:
        ps.append(Policy.Deadline(duration(milliseconds=o["deadline"])))
    if o["xcdr"] == 1:
        ps.append(Policy.DataRepresentation(use_cdrv0_representation=True))
    else:
        ps.append(Policy.DataRepresentation(use_xcdrv2_representation=True))
    if o["strength"] >= 0:
        ps.append(Policy.Ownership.Exclusive)
        if writer:
            ps.append(Policy.OwnershipStrength(o["strength"]))
    if writer and o["lifespan"] is not None:
        ps.append(Policy.Lifespan(duration(milliseconds=o["lifespan"])))
    if writer and o["final"] == "u":
        ps.append(Policy.WriterDataLifecycle(autodispose=False))
    return Qos(*ps)


def group_qos(o):
    return Qos(Policy.Partition([o["partition"]])) if o["partition"] else None


def sample_line(topic, s):
    line = "%-10s %-10s %03d %03d [%d]" % (topic, s.color, s.x, s.y, s.shapesize)
    if s.additional_payload_size:
        line += " {%d}" % s.additional_payload_size[-1]
    return line


class Seen:
    def __init__(self):
        self.matched = self.incompatible = self.missed = 0

    def report(self, topic, names, matched, current, incompatible, policy, missed):
        def line(cb, details):
            print(f"{cb}() topic: '{topic}'  type: 'ShapeType' : {details}", flush=True)

        if matched > self.matched:
            self.matched = matched
            line(names[0], f"matched {names[1]} {current} (change = 1)")
        if incompatible > self.incompatible:
            self.incompatible = incompatible
            line(names[2], f"policy id {policy}")
        if missed > self.missed:
            self.missed = missed
            line(names[3], f"total count {missed}")


WRITER_NAMES = ("on_publication_matched", "readers", "on_offered_incompatible_qos",
                "on_offered_deadline_missed")
READER_NAMES = ("on_subscription_matched", "writers", "on_requested_incompatible_qos",
                "on_requested_deadline_missed")


def pause(ms):
    end = time.monotonic() + ms / 1000
    while not STOP and time.monotonic() < end:
        time.sleep(min(0.02, max(0.0, end - time.monotonic())))


def publish(o):
    dp = DomainParticipant(o["domain"])
    pub = Publisher(dp, qos=group_qos(o))
    color = o["color"] or "BLUE"
    writers = []
    for k in range(o["topics"]):
        t = name(o["topic"], k)
        print(f"Create topic: {t}", flush=True)
        topic = Topic(dp, t, ShapeType)
        print(f"Create writer for topic: {t} color: {color}", flush=True)
        writers.append((t, DataWriter(pub, topic, qos=endpoint_qos(o, True)), Seen()))
    colors = [name(color, k) for k in range(o["instances"])]
    pos = [[(17 * k) % 200, (31 * k) % 200, 1 + k % 5, 1 + (k * 3) % 5] for k in range(o["instances"])]
    payload = [0] * o["payload"]
    if payload:
        payload[-1] = 255
    counter = 0
    iteration = 0

    def statuses():
        for t, w, seen in writers:
            m = w.get_publication_matched_status()
            i = w.get_offered_incompatible_qos_status()
            d = w.get_offered_deadline_missed_status()
            seen.report(t, WRITER_NAMES, m.total_count, m.current_count, i.total_count,
                        i.last_policy_id, d.total_count)

    while not STOP and (o["iterations"] is None or iteration < o["iterations"]):
        statuses()
        if o["size"] == 0:
            counter += 1
            size = counter if o["size_modulo"] is None else (counter - 1) % o["size_modulo"] + 1
        else:
            size = o["size"]
        for t, w, _ in writers:
            for c, p in zip(colors, pos):
                lim = 240 - (0 if o["size"] == 0 else size)
                p[0] += p[2]
                p[1] += p[3]
                if not 0 <= p[0] <= lim:
                    p[2] = -p[2]
                    p[0] = min(max(p[0], 0), lim)
                if not 0 <= p[1] <= lim:
                    p[3] = -p[3]
                    p[1] = min(max(p[1], 0), lim)
                s = ShapeType(color=c, x=p[0], y=p[1], shapesize=size, additional_payload_size=payload)
                w.write(s)
                if o["print_writes"]:
                    print(sample_line(t, s), flush=True)
        iteration += 1
        pause(o["write_period"])
    if o["final"]:
        for _, w, _ in writers:
            for c in colors:
                k = ShapeType(color=c, x=0, y=0, shapesize=0)
                if o["final"] == "d":
                    w.dispose(k)
                else:
                    w.unregister_instance(k)
        pause(500)
    while not STOP:
        statuses()
        pause(o["write_period"])


def subscribe(o):
    dp = DomainParticipant(o["domain"])
    sub = Subscriber(dp, qos=group_qos(o))
    readers = []
    for k in range(o["topics"]):
        t = name(o["topic"], k)
        print(f"Create topic: {t}", flush=True)
        topic = Topic(dp, t, ShapeType)
        print(f"Create reader for topic: {t}", flush=True)
        r = DataReader(sub, topic, qos=endpoint_qos(o, False))
        cond = ReadCondition(r, SampleState.NotRead | ViewState.Any | InstanceState.Any)
        readers.append((t, r, Seen(), cond, {}))
    iteration = 0
    while not STOP and (o["iterations"] is None or iteration < o["iterations"]):
        for t, r, seen, cond, states in readers:
            m = r.get_subscription_matched_status()
            i = r.get_requested_incompatible_qos_status()
            d = r.get_requested_deadline_missed_status()
            seen.report(t, READER_NAMES, m.total_count, m.current_count, i.total_count,
                        i.last_policy_id, d.total_count)
            got = r.read(N=10000, condition=cond) if o["use_read"] else r.take(N=10000)
            last = {}
            for s in got:
                info = s.sample_info
                if info.valid_data:
                    states.setdefault(info.instance_handle, [s.color, InstanceState.Alive])
                    print(sample_line(t, s), flush=True)
                else:
                    states.setdefault(info.instance_handle, [s.key_sample.color, InstanceState.Alive])
                last[info.instance_handle] = info.instance_state
            for h, st in last.items():
                if states[h][1] == st:
                    continue
                states[h][1] = st
                label = {InstanceState.NotAliveDisposed: "NOT_ALIVE_DISPOSED_INSTANCE_STATE",
                         InstanceState.NotAliveNoWriters: "NOT_ALIVE_NO_WRITERS_INSTANCE_STATE"}.get(st)
                if label:
                    print("%-10s %-10s %s" % (t, states[h][0], label), flush=True)
        iteration += 1
        pause(o["read_period"])


def main():
    o = parse(sys.argv[1:])
    if o["unsupported"]:
        print(f"{', '.join(o['unsupported'])}: not supported by this Cyclone DDS peer", flush=True)
        return 1
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    (publish if o["role"] == "pub" else subscribe)(o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
