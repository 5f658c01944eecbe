"""Writers and readers as a user scripts them: take/read/dispose, QoS keywords and XML
profiles, listeners, wait sets, iteration (plain and async), and the GIL around blocking
calls."""

import asyncio
import threading
import time
from dataclasses import dataclass
from typing import Annotated

import pytest

import tessera
from tessera.types import int32, key


@dataclass
class Reading:
    sensor: Annotated[int32, key]
    value: float


def endpoints(participant, name, writer_qos=None, reader_qos=None):
    t = participant.create_topic(name, Reading)
    r = participant.create_reader(t, **(reader_qos or {"reliability": "reliable",
                                                      "history": "keep_all"}))
    w = participant.create_writer(t, **(writer_qos or {"history": "keep_all"}))
    return w, r


def test_take_read_and_dispose(participant, topic_name):
    w, r = endpoints(participant, topic_name)
    w.write(Reading(1, 20.5))
    w.write(Reading(2, 21.5))
    first = r.read(timeout=2.0)
    assert [s.data for s in first] == [Reading(1, 20.5), Reading(2, 21.5)]
    assert {s.info.sample_state for s in first} == {"not_read"}
    again = r.read()
    assert {s.info.sample_state for s in again} == {"read"}
    assert len(r.take()) == 2
    assert r.take() == []
    w.dispose(Reading(1, 0.0))
    (d,) = r.take(timeout=2.0)
    assert d.data is None and not d.info.valid_data
    assert d.info.instance_state == "disposed"


def test_keep_last_depth_keeps_the_newest_per_instance(participant, topic_name):
    w, r = endpoints(participant, topic_name, reader_qos={"reliability": "reliable", "depth": 1})
    for v in range(5):
        w.write(Reading(7, float(v)))
    w.write(Reading(8, 1.0))
    got = sorted((s.data.sensor, s.data.value) for s in r.take(timeout=2.0))
    assert got == [(7, 4.0), (8, 1.0)]


def test_transient_local_reaches_a_late_reader(participant, topic_name):
    t = participant.create_topic(topic_name, Reading)
    w = participant.create_writer(t, durability="transient_local", depth=3)
    for v in range(5):
        w.write(Reading(1, float(v)))
    late = participant.create_reader(t, reliability="reliable", durability="transient_local")
    volatile = participant.create_reader(t, reliability="reliable")
    # KEEP_LAST 1 on the readers: the newest of the three kept samples.
    assert [s.data.value for s in late.take(timeout=2.0)] == [4.0]
    assert volatile.take(timeout=0.3) == []


def test_incompatible_reliability_does_not_match(participant, topic_name):
    t = participant.create_topic(topic_name, Reading)
    w = participant.create_writer(t, reliability="best_effort")
    reliable = participant.create_reader(t, reliability="reliable")
    best_effort = participant.create_reader(t, reliability="best_effort")
    assert best_effort.wait_for_writers(1, timeout=2.0)
    assert not reliable.wait_for_writers(1, timeout=0.5)
    w.write(Reading(1, 1.0))
    assert len(best_effort.take(timeout=2.0)) == 1
    assert reliable.take() == []
    # Both sides count the mismatch; the writer counts its one match, the reader its writer
    # alive.
    assert w.offered_incompatible_qos() == 1
    assert reliable.requested_incompatible_qos() == 1
    assert best_effort.requested_incompatible_qos() == 0
    assert w.publication_matched() == (1, 1)
    assert best_effort.liveliness_changed() == (1, 0)


def test_qos_mistakes_raise(participant, topic_name):
    t = participant.create_topic(topic_name, Reading)
    with pytest.raises(ValueError, match="reliabilty"):
        participant.create_reader(t, reliabilty="reliable")
    with pytest.raises(ValueError, match="durability"):
        participant.create_writer(t, durability="forever")


PROFILES = """
<dds xmlns="http://www.omg.org/dds/">
  <qos_library name="lib">
    <qos_profile name="base">
      <datareader_qos>
        <reliability><kind>RELIABLE_RELIABILITY_QOS</kind></reliability>
        <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>2</depth></history>
      </datareader_qos>
      <datawriter_qos>
        <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
      </datawriter_qos>
    </qos_profile>
    <qos_profile name="deep" base_name="lib::base">
      <datareader_qos>
        <history><kind>KEEP_LAST_HISTORY_QOS</kind><depth>4</depth></history>
      </datareader_qos>
    </qos_profile>
  </qos_library>
</dds>
"""


def test_xml_profiles_then_keywords(participant, topic_name):
    profiles = tessera.QosProfiles(xml=[PROFILES])
    assert {"lib::base", "lib::deep"} <= set(profiles.profile_names())
    t = participant.create_topic(topic_name, Reading)
    base = participant.create_reader(t, profiles=profiles, profile="lib::base")
    deep = participant.create_reader(t, profiles=profiles, profile="lib::deep")
    overridden = participant.create_reader(t, profiles=profiles, profile="lib::deep", depth=1)
    w = participant.create_writer(t, profiles=profiles, profile="lib::base")
    for v in range(6):
        w.write(Reading(3, float(v)))
    assert [s.data.value for s in base.take(timeout=2.0)] == [4.0, 5.0]
    assert [s.data.value for s in deep.take(timeout=2.0)] == [2.0, 3.0, 4.0, 5.0]
    assert [s.data.value for s in overridden.take(timeout=2.0)] == [5.0]
    with pytest.raises(ValueError):
        participant.create_reader(t, profiles=profiles, profile="lib::missing")


def test_a_qos_object_is_reusable(participant, topic_name):
    q = tessera.Qos(reliability="reliable", history="keep_all")
    t = participant.create_topic(topic_name, Reading)
    r = participant.create_reader(t, q)
    w = participant.create_writer(t, q)
    for v in range(3):
        w.write(Reading(1, float(v)))
    assert len(r.take(timeout=2.0)) == 3


class Collecting(tessera.Listener):
    def __init__(self):
        self.data = []
        self.matched = []
        self.deadlines = []
        self.rejected = []
        self.lost = []
        self.threads = set()
        self.got = threading.Event()

    def on_data_available(self, reader):
        self.threads.add(threading.get_ident())
        self.data.extend(s.data for s in reader.take())
        self.got.set()

    def on_subscription_matched(self, reader, status):
        self.matched.append(status)

    def on_requested_deadline_missed(self, reader, total):
        self.deadlines.append(total)

    def on_sample_rejected(self, reader, total):
        self.rejected.append(total)

    def on_sample_lost(self, reader, total):
        self.lost.append(total)


def test_listener_is_called_with_the_gil(participant, topic_name):
    listener = Collecting()
    t = participant.create_topic(topic_name, Reading)
    r = participant.create_reader(t, reliability="reliable", history="keep_all",
                                  listener=listener)
    w = participant.create_writer(t)
    assert r.wait_for_writers(1, timeout=2.0)
    w.write(Reading(5, 1.0))
    assert listener.got.wait(2.0)
    assert listener.data == [Reading(5, 1.0)]
    assert listener.matched and listener.matched[-1][1] == 1
    r.set_listener(None)
    w.write(Reading(5, 2.0))
    time.sleep(0.2)
    assert listener.data == [Reading(5, 1.0)]
    assert [s.data.value for s in r.take(timeout=1.0)] == [2.0]


def test_listener_hears_a_missed_deadline(participant, topic_name):
    listener = Collecting()
    t = participant.create_topic(topic_name, Reading)
    r = participant.create_reader(t, reliability="reliable", deadline=0.05, listener=listener)
    w = participant.create_writer(t, deadline=0.05)
    w.write(Reading(1, 1.0))
    end = time.time() + 2.0
    while not listener.deadlines and time.time() < end:
        time.sleep(0.02)
    assert listener.deadlines and listener.deadlines[-1] >= 1
    assert r.requested_deadline_missed() >= 1
    assert w.offered_deadline_missed() >= 1
    assert w.liveliness_lost() == 0


class Refusals(Collecting):
    """Takes nothing, so that the reader's history fills."""

    def on_data_available(self, reader):
        pass


def test_a_full_reader_rejects_and_its_listener_hears_it(participant, topic_name):
    listener = Refusals()
    t = participant.create_topic(topic_name, Reading)
    r = participant.create_reader(t, reliability="reliable", history="keep_all", max_samples=2,
                                  listener=listener)
    w = participant.create_writer(t, history="keep_all")
    assert r.wait_for_writers(1, timeout=5.0)
    for v in range(5):
        w.write(Reading(1, float(v)))
    end = time.time() + 5.0
    while not listener.rejected and time.time() < end:
        time.sleep(0.02)
    assert listener.rejected and r.sample_rejected() >= 1
    # Reliable: nothing refused is lost, it comes once the reader made room.
    got = []
    end = time.time() + 10.0
    while len(got) < 5 and time.time() < end:
        got.extend(s.data.value for s in r.take())
        time.sleep(0.05)
    assert got == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert r.sample_lost() == 0 and not listener.lost


def test_waitset_wakes_for_a_guard_and_for_data(participant, topic_name):
    w, r = endpoints(participant, topic_name)
    guard = tessera.GuardCondition()
    data = r.read_condition()
    ws = tessera.WaitSet()
    ws.attach(guard)
    ws.attach(data)
    assert ws.wait(0.1) == []
    threading.Timer(0.1, guard.set_trigger_value, (True,)).start()
    assert ws.wait(2.0) == [guard]
    guard.set_trigger_value(False)
    threading.Timer(0.1, w.write, (Reading(1, 1.0),)).start()
    assert ws.wait(2.0) == [data]
    r.take()
    assert not data.trigger_value


def test_for_sample_in_reader(participant, topic_name):
    w, r = endpoints(participant, topic_name)

    def produce():
        for v in range(50):
            w.write(Reading(v % 4, float(v)))

    threading.Thread(target=produce).start()
    got = []
    for sample in r:
        got.append(sample.data)
        if len(got) == 50:
            break
    # Every sample once, each instance's in writing order (a take groups by instance).
    assert sorted(d.value for d in got) == [float(v) for v in range(50)]
    for k in range(4):
        mine = [d.value for d in got if d.sensor == k]
        assert mine == sorted(mine) and len(mine) in (12, 13)
    assert list(r.samples(timeout=0.1)) == []


def test_async_for(participant, topic_name):
    w, r = endpoints(participant, topic_name)

    async def main():
        async def produce():
            for v in range(10):
                await asyncio.sleep(0.01)
                w.write(Reading(1, float(v)))

        task = asyncio.create_task(produce())
        got = []
        async for sample in r:
            got.append(sample.data.value)
            if len(got) == 10:
                break
        await task
        rest = [s async for s in r.samples_async(timeout=0.2)]
        return got, rest

    got, rest = asyncio.run(main())
    assert got == [float(v) for v in range(10)]
    assert rest == []


def spin_while(blocking_call):
    """Runs `blocking_call` while another Python thread spins, noting the time now and then;
    the call's result, how long it took, and whether the spinner ran in the middle of it."""
    stamps = []
    stop = threading.Event()

    def spin():
        n = 0
        while not stop.is_set():
            n += 1
            if n % 500 == 0:
                stamps.append(time.monotonic())

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    start = time.monotonic()
    result = blocking_call()
    elapsed = time.monotonic() - start
    stop.set()
    t.join()
    # With the GIL held across the wait, the spinner runs only at its edges (around the
    # short calls that do release it), never 100 ms into it.
    middle = [x for x in stamps if start + 0.1 < x < start + elapsed - 0.1]
    return result, elapsed, len(middle)


def test_another_thread_runs_while_take_waits(participant, topic_name):
    _, r = endpoints(participant, topic_name)
    result, elapsed, middle = spin_while(lambda: r.take(timeout=0.5))
    assert result == []
    assert elapsed >= 0.45
    assert middle > 10, middle


def test_another_thread_runs_while_a_waitset_waits(participant, topic_name):
    _, r = endpoints(participant, topic_name)
    ws = tessera.WaitSet()
    ws.attach(r.read_condition())
    result, elapsed, middle = spin_while(lambda: ws.wait(0.5))
    assert result == [] and elapsed >= 0.45
    assert middle > 10, middle

