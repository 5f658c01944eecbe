#!/usr/bin/env python3
"""Conformance suite for shape applications, after the OMG DDS-RTPS interoperability suite.

Runs publisher and subscriber shape applications (`tessera shape`, or any program with
shape_main's options and output) through one test of every kind the OMG suite has, reading their
standard output the way its harness does, and checks the same outcomes: matching, incompatible
QoS, partitions and domains, data representation, deadline, ownership, lifespan, time-based
filter, content filters, large data, late joiners, instance states, several instances and
topics, read versus take. A program that prints "not supported" makes the test UNSUPPORTED,
which is reported, not failed.

Usage (inside a network namespace: scripts/netns-run):
    shape_suite.py --pub CMD --sub CMD [--filter SUBSTRING] [--list]
CMD is a command line such as "target/release/tessera-tools shape". Exit status 1 if any test
failed. Standard library only.
"""

import argparse
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

STEP = 15.0  # seconds the OMG harness waits for each expected line
SAMPLE = re.compile(r"^(\w+)\s+(\w+)\s+(-?\d+) (-?\d+) \[(-?\d+)\]( \{(\d+)\})?")
STATE = re.compile(r"^(\w+)\s+(\w+)\s+(NOT_ALIVE_\w+_INSTANCE_STATE)")


class Proc:
    """One shape application, its output collected line by line by a thread."""

    def __init__(self, cmd, args):
        argv = shlex.split(cmd) + shlex.split(args)
        self.argv = argv
        self.lines = []
        self.cond = threading.Condition()
        self.p = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
        )
        self.t = threading.Thread(target=self._pump, daemon=True)
        self.t.start()

    def _pump(self):
        for line in self.p.stdout:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.cond.notify_all()

    def wait_for(self, patterns, timeout=STEP, start=0, abort=None):
        """Index of the first pattern a line (from `start`) matches, with that line's index;
        (None, None) on timeout, exit, or once `abort()` is true."""
        end = time.monotonic() + timeout
        i = start
        if self.p.poll() is not None:
            self.t.join(timeout=5)  # a program that exited: read all it printed first
        while True:
            with self.cond:
                while i < len(self.lines):
                    for k, pat in enumerate(patterns):
                        if re.search(pat, self.lines[i]):
                            return k, i
                    i += 1
                left = end - time.monotonic()
                if left <= 0 or (not self.t.is_alive() and i >= len(self.lines)):
                    return None, None
            # Outside this process's lock: `abort` looks at the other processes, whose own
            # waits may be asking about this one.
            if abort is not None and abort():
                return None, None
            with self.cond:
                if len(self.lines) == i:
                    self.cond.wait(min(left, 0.2))

    def unsupported(self):
        if self.p.poll() is not None:
            self.t.join(timeout=5)
        with self.cond:
            return any("not supported" in l.lower() for l in self.lines)

    def samples(self):
        with self.cond:
            out = []
            for l in self.lines:
                m = SAMPLE.match(l)
                if m:
                    out.append(
                        {
                            "topic": m.group(1),
                            "color": m.group(2),
                            "size": int(m.group(5)),
                            "extra": int(m.group(7)) if m.group(7) else None,
                        }
                    )
            return out

    def states(self):
        with self.cond:
            return [STATE.match(l).groups() for l in self.lines if STATE.match(l)]

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.t.join(timeout=5)


def run_publisher(p, expects_samples, abort=None):
    """The OMG harness's publisher steps; returns its result code. `abort()` true: a peer
    said "not supported", so nothing will match (saves the 15 s wait)."""
    if p.wait_for([r"Create topic:"])[0] is None:
        return "TOPIC_NOT_CREATED"
    if p.wait_for([r"Create writer for topic"])[0] is None:
        return "WRITER_NOT_CREATED"
    k, _ = p.wait_for(
        [r"on_publication_matched\(\)", r"on_offered_incompatible_qos\(\)"], abort=abort
    )
    if k is None:
        return "UNSUPPORTED_FEATURE" if p.unsupported() else "READER_NOT_MATCHED"
    if k == 1:
        return "INCOMPATIBLE_QOS"
    if expects_samples:
        k, _ = p.wait_for([SAMPLE.pattern, r"on_offered_deadline_missed\(\)"])
        if k is None:
            return "DATA_NOT_SENT"
        if k == 1:
            return "DEADLINE_MISSED"
    return "OK"


def run_subscriber(s, abort=None):
    """The OMG harness's subscriber steps up to the first sample; returns its result code.
    `abort()` true: a publisher said "not supported" and exited, so no sample will come."""
    if s.wait_for([r"Create topic:"])[0] is None:
        return "UNSUPPORTED_FEATURE" if s.unsupported() else "TOPIC_NOT_CREATED"
    k, _ = s.wait_for([r"Create reader for topic", r"failed to create content filtered topic"])
    if k is None:
        return "READER_NOT_CREATED"
    if k == 1:
        return "FILTER_NOT_CREATED"
    k, _ = s.wait_for(
        [
            SAMPLE.pattern,
            STATE.pattern,
            r"on_requested_incompatible_qos\(\)",
            r"on_requested_deadline_missed\(\)",
        ],
        abort=abort,
    )
    if k is None:
        return "DATA_NOT_RECEIVED"
    if k == 2:
        return "INCOMPATIBLE_QOS"
    if k == 3:
        return "DEADLINE_MISSED"
    return "OK"


# --- check functions (on one subscriber's samples, after the run) -----------------------------

def sizes(samples, color=None):
    return [x["size"] for x in samples if color is None or x["color"] == color]


def in_order_no_loss(samples):
    v = sizes(samples)
    if len(v) < 10:
        return f"only {len(v)} samples"
    gaps = [b - a for a, b in zip(v, v[1:])]
    return None if all(g == 1 for g in gaps) else f"not consecutive: {v[:40]}"


def in_order(samples):
    v = sizes(samples)
    if len(v) < 5:
        return f"only {len(v)} samples"
    return None if all(b > a for a, b in zip(v, v[1:])) else f"out of order or repeated: {v[:40]}"


def first_size_is_one(samples):
    v = sizes(samples)
    return None if v and v[0] == 1 else f"the late joiner's first sample is {v[:5]}, not 1"


def first_size_at_least(n):
    def check(samples):
        v = sizes(samples)
        return None if v and v[0] >= n else f"a volatile late joiner got history: {v[:5]}"

    return check


def only_size_once_seen(n):
    """Exclusive ownership: once the reader has the strongest writer's samples, no other
    writer's sample. Checked from the strongest writer's second sample on: before it discovered
    that writer another writer owned the instance, and a reader that orders an instance by source
    timestamp (Fast DDS 2.9) lists the strongest writer's first sample, repaired after discovery,
    before a weaker writer's sample it accepted earlier but that was written later."""

    def check(samples):
        v = sizes(samples)
        strongest = [i for i, x in enumerate(v) if x == n]
        if len(strongest) < 2:
            return f"fewer than two samples of size {n} (the strongest writer's): {v[:10]}"
        after = v[strongest[1]:]
        bad = [x for x in after if x != n]
        if len(after) < 5:
            return f"only {len(after)} samples after the strongest writer's second"
        return None if not bad else f"{len(bad)} of {len(after)} samples from a weaker writer: {bad[:10]}"

    return check


def only_color(c):
    def check(samples):
        cs = {x["color"] for x in samples}
        return None if cs == {c} else f"colors received: {sorted(cs)}"

    return check


def all_sizes_at_most(n):
    def check(samples):
        v = sizes(samples)
        if len(v) < 5:
            return f"only {len(v)} samples"
        return None if max(v) <= n else f"sizes above {n} passed the filter: {[x for x in v if x > n][:10]}"

    return check


def spaced_at_least(n):
    """Time-based filter: with a 100 ms write period and a 1 s filter, one in ten."""

    def check(samples):
        v = sizes(samples)
        if len(v) < 3:
            return f"only {len(v)} samples"
        gaps = [b - a for a, b in zip(v, v[1:])]
        return None if min(gaps) >= n else f"samples closer than {n}: gaps {gaps[:20]}"

    return check


def runs_at_most(n):
    """Lifespan shorter than the read period: a read pass finds only the samples written
    within the lifespan, so consecutive sizes come in short runs."""

    def check(samples):
        v = sizes(samples)
        if len(v) < 4:
            return f"only {len(v)} samples"
        runs, run = [], 1
        for a, b in zip(v, v[1:]):
            if b == a + 1:
                run += 1
            else:
                runs.append(run)
                run = 1
        runs.append(run)
        # The first and last runs may be cut by the start and end of the collection.
        inner = runs[1:-1] or runs
        return None if max(inner) <= n else f"runs of {inner} consecutive samples: {v[:30]}"

    return check


def many_consecutive(samples):
    v = sizes(samples)
    if len(v) < 10:
        return f"only {len(v)} samples"
    consecutive = sum(1 for a, b in zip(v, v[1:]) if b == a + 1)
    return None if consecutive >= len(v) * 3 // 4 else f"{consecutive} of {len(v)} consecutive"


def extra_255(samples):
    bad = [x for x in samples if x["extra"] != 255]
    if len(samples) < 3:
        return f"only {len(samples)} samples"
    return None if not bad else f"{len(bad)} samples without the additional payload's 255"


def colors_are(expected):
    def check(samples):
        cs = {x["color"] for x in samples}
        return None if cs == set(expected) else f"colors {sorted(cs)}, expected {sorted(expected)}"

    return check


def topics_are(expected):
    def check(samples):
        ts = {x["topic"] for x in samples}
        return None if ts == set(expected) else f"topics {sorted(ts)}, expected {sorted(expected)}"

    return check


PASS = re.compile(r"^Reading (coherent sets|with ordered access), iteration \d+")


def passes(proc):
    """The samples of each read pass that printed any, in order (a subscriber with
    presentation announces every pass)."""
    with proc.cond:
        lines = list(proc.lines)
    out, cur = [], None
    for l in lines:
        if PASS.match(l):
            if cur:
                out.append(cur)
            cur = []
            continue
        m = SAMPLE.match(l)
        if m and cur is not None:
            cur.append({"topic": m.group(1), "color": m.group(2), "size": int(m.group(5))})
    if cur:
        out.append(cur)
    return out


def whole_sets(n):
    """Coherent sets of n iterations (-z 0: the size counts iterations from 1): every read
    pass holds whole sets of each instance, never part of one."""

    def check(proc):
        ps = passes(proc)
        if len(ps) < 3:
            return f"only {len(ps)} read passes with samples"
        for p in ps:
            per = {}
            for x in p:
                per.setdefault((x["topic"], x["color"]), set()).add(x["size"])
            for inst, got in per.items():
                for size in got:
                    first = (size - 1) // n * n + 1
                    want = set(range(first, first + n))
                    if not want <= got:
                        return f"{inst}: part of a set in one pass: {sorted(got)}"
        return None

    return check


def whole_group_sets(n, topics):
    """GROUP-scope coherent sets of n iterations over several topics: a read pass holds a
    set in every topic and instance or in none."""
    per_instance = whole_sets(n)

    def check(proc):
        problem = per_instance(proc)
        if problem:
            return problem
        ps = passes(proc)
        for p in ps:
            seen = {}
            for x in p:
                seen.setdefault((x["size"] - 1) // n, set()).add(x["topic"])
            for s, ts in seen.items():
                if ts != set(topics):
                    return f"set {s} shown in {sorted(ts)} only, expected {topics}"
        return None

    return check


def ordered_across_topics(topics):
    """GROUP-scope ordered access: within a pass, samples come in the publisher's write order
    (each iteration writes every topic in turn), across topics and instances."""

    def check(proc):
        ps = passes(proc)
        mixed = [p for p in ps if len({x["topic"] for x in p}) > 1]
        if len(mixed) < 2:
            return f"only {len(mixed)} passes with several topics"
        for p in mixed:
            v = [(x["size"], topics.index(x["topic"])) for x in p if x["topic"] in topics]
            if any(b < a for a, b in zip(v, v[1:])):
                return f"not in write order: {[(x['topic'], x['size']) for x in p][:20]}"
        return None

    return check


def ordered_across_instances(proc):
    """TOPIC-scope ordered access: within a pass, samples come in write order across
    instances (sizes never go back), not instance by instance."""
    ps = passes(proc)
    mixed = [p for p in ps if len({x["color"] for x in p}) > 1 and len({x["size"] for x in p}) > 1]
    if len(mixed) < 2:
        return f"only {len(mixed)} passes with several instances and iterations"
    for p in mixed:
        v = [x["size"] for x in p]
        if any(b < a for a, b in zip(v, v[1:])):
            return f"not in write order: {[(x['color'], x['size']) for x in p][:20]}"
    return None


def in_order_per_instance(samples):
    colors = {x["color"] for x in samples}
    if len(colors) < 2:
        return f"colors received: {sorted(colors)}"
    for c in colors:
        v = sizes(samples, c)
        if any(b <= a for a, b in zip(v, v[1:])):
            return f"{c} out of order: {v[:30]}"
    return None


def lines_in(pub, sub):
    def check(pubs, subs):
        missing = []
        if not any(re.search(pub, l) for l in pubs[0].lines):
            missing.append(f"publisher printed no {pub}")
        if not any(re.search(sub, l) for l in subs[0].lines):
            missing.append(f"subscriber printed no {sub}")
        return "; ".join(missing) or None

    return check


def lines_absent(pattern):
    def check(pubs, subs):
        bad = [l for p in pubs + subs for l in p.lines if re.search(pattern, l)]
        return None if not bad else f"unexpected: {bad[0]}"

    return check


def state_is(state):
    def check(proc):
        return None if any(s[2] == state for s in proc.states()) else f"no {state} line"

    return check


# --- the tests: (name, publishers, subscribers, expected pub code, expected sub code, check) ---
# A check takes the first subscriber's samples, or its Proc when `proc_check` is set.

W = "-w -z 0 --write-period 20"
TESTS = [
    ("Reliability_reliable_keep_all", [f"-P -t Square -r -k 0 {W}"], ["-S -t Square -r -k 0"],
     "OK", "OK", in_order_no_loss),
    ("Reliability_best_effort", [f"-P -t Square -b {W}"], ["-S -t Square -b -k 0"],
     "OK", "OK", in_order),
    ("Reliability_default_writer_best_effort_reader", [f"-P -t Square {W}"],
     ["-S -t Square -b -k 0"], "OK", "OK", in_order),
    ("Reliability_best_effort_writer_reliable_reader", [f"-P -t Square -b {W}"],
     ["-S -t Square -r"], "INCOMPATIBLE_QOS", "INCOMPATIBLE_QOS", None),
    ("Durability_volatile_writer_transient_local_reader", [f"-P -t Square -D v {W}"],
     ["-S -t Square -D l"], "INCOMPATIBLE_QOS", "INCOMPATIBLE_QOS", None),
    ("Durability_late_joiner_transient_local", [f"-P -t Square -D l -k 0 {W}"],
     ["-S -t Square -D l -k 0"], "OK", "OK", first_size_is_one, 2.0),
    ("Durability_late_joiner_volatile", [f"-P -t Square -D v -k 0 {W}"],
     ["-S -t Square -D v -k 0"], "OK", "OK", first_size_at_least(5), 2.0),
    ("Partition_different", [f"-P -t Square -p p1 {W}"], ["-S -t Square -p p2"],
     "READER_NOT_MATCHED", "DATA_NOT_RECEIVED", None),
    ("Partition_wildcard", [f"-P -t Square -p p1 {W}"], ["-S -t Square -p 'p*' -k 0"],
     "OK", "OK", in_order),
    ("Domain_different", [f"-P -t Square -d 0 {W}"], ["-S -t Square -d 1"],
     "READER_NOT_MATCHED", "DATA_NOT_RECEIVED", None),
    ("DataRepresentation_xcdr1", [f"-P -t Square -x 1 {W}"], ["-S -t Square -x 1 -k 0"],
     "OK", "OK", in_order),
    ("DataRepresentation_xcdr1_writer_xcdr2_reader", [f"-P -t Square -x 1 {W}"],
     ["-S -t Square -x 2"], "INCOMPATIBLE_QOS", "INCOMPATIBLE_QOS", None),
    ("Deadline_missed", ["-P -t Square -f 100 --write-period 300"],
     ["-S -t Square -f 100"], "OK", ("OK", "DEADLINE_MISSED"),
     ("procs", lines_in(pub=r"on_offered_deadline_missed\(\)",
                        sub=r"on_requested_deadline_missed\(\)"))),
    ("Deadline_met", ["-P -t Square -f 300 --write-period 50"],
     ["-S -t Square -f 300"], "OK", "OK",
     ("procs", lines_absent(r"deadline_missed\(\)"))),
    ("Deadline_offered_longer_than_requested", ["-P -t Square -f 300 -w"],
     ["-S -t Square -f 50"], "INCOMPATIBLE_QOS", "INCOMPATIBLE_QOS", None),
    ("Ownership_exclusive_strongest_wins",
     ["-P -t Square -s 10 -z 20 -w", "-P -t Square -s 20 -z 30 -w"],
     ["-S -t Square -s 0 -k 0"], "OK", "OK", only_size_once_seen(30)),
    ("Ownership_shared_reader_exclusive_writer", ["-P -t Square -s 10 -w"],
     ["-S -t Square"], "INCOMPATIBLE_QOS", "INCOMPATIBLE_QOS", None),
    ("Lifespan_short", ["-P -t Square -k 0 -w -z 0 --write-period 100 --lifespan 250"],
     ["-S -t Square -k 0 --read-period 500"], "OK", "OK", runs_at_most(3), 0.5, 4.0),
    ("Lifespan_long", ["-P -t Square -k 0 -w -z 0 --write-period 100 --lifespan 10000"],
     ["-S -t Square -k 0 --read-period 500"], "OK", "OK", many_consecutive),
    ("TimeBasedFilter_one_in_ten", ["-P -t Square -w -z 0 --write-period 100"],
     ["-S -t Square -k 0 --time-filter 1000"], "OK", "OK", spaced_at_least(8), 0.5, 4.0),
    ("Cft_color", ["-P -t Square -c RED -w", "-P -t Square -c BLUE -w"],
     ["-S -t Square -c RED -k 0"], "OK", "OK", only_color("RED")),
    ("Cft_expression", [f"-P -t Square {W} --size-modulo 40"],
     ["-S -t Square -k 0 --cft 'shapesize <= 20'"], "OK", "OK", all_sizes_at_most(20)),
    ("LargeData_100000", ["-P -t Square -w --additional-payload-size 100000 --write-period 100"],
     ["-S -t Square -k 0"], "OK", "OK", extra_255),
    ("FinalInstanceState_dispose",
     [f"-P -t Square {W} --num-iterations 150 --final-instance-state d"],
     ["-S -t Square -k 0"], "OK", "OK", ("proc", state_is("NOT_ALIVE_DISPOSED_INSTANCE_STATE")), 0.5, 5.0),
    ("FinalInstanceState_unregister",
     [f"-P -t Square {W} --num-iterations 150 --final-instance-state u"],
     ["-S -t Square -k 0"], "OK", "OK",
     ("proc", state_is("NOT_ALIVE_NO_WRITERS_INSTANCE_STATE")), 0.5, 5.0),
    ("MultipleInstances", [f"-P -t Square {W} --num-instances 3"], ["-S -t Square -k 0"],
     "OK", "OK", colors_are(["BLUE", "BLUE1", "BLUE2"])),
    ("MultipleTopics", [f"-P -t Square {W} --num-topics 3"],
     ["-S -t Square -k 0 --num-topics 3"], "OK", "OK", topics_are(["Square", "Square1", "Square2"])),
    ("History_read_not_take", [f"-P -t Square -r -k 0 {W}"], ["-S -t Square -r -k 0 -R"],
     "OK", "OK", in_order_no_loss),
    ("History_take_read", [f"-P -t Square -r -k 0 {W}"],
     ["-S -t Square -r -k 0 --take-read"], "OK", "OK", in_order_no_loss),
    ("CoherentSets_topic_scope",
     [f"-P -t Square --coherent --access-scope t --coherent-sample-count 3 --num-instances 2 -k 0 {W}"],
     ["-S -t Square --coherent --access-scope t -k 0"], "OK", "OK", ("proc", whole_sets(3))),
    ("CoherentSets_instance_scope",
     [f"-P -t Square --coherent --access-scope i --coherent-sample-count 4 -k 0 {W}"],
     ["-S -t Square --coherent --access-scope i -k 0"], "OK", "OK", ("proc", whole_sets(4))),
    # The end-of-set markers are no samples for a reader without coherent access (against a
    # Cyclone DDS subscriber: it takes Tessera's coherent stream as a plain one).
    ("CoherentSets_reader_without_coherent_access",
     [f"-P -t Square --coherent --access-scope t --coherent-sample-count 3 -r -k 0 {W}"],
     ["-S -t Square -r -k 0"], "OK", "OK", in_order_no_loss),
    ("CoherentSets_writer_without_coherent_access", [f"-P -t Square --access-scope t {W}"],
     ["-S -t Square --coherent --access-scope t"], "INCOMPATIBLE_QOS", "INCOMPATIBLE_QOS", None),
    # GROUP scope: one set across the publisher's topics, shown in all the readers together
    # (a peer without it prints "not supported").
    ("CoherentSets_group_scope",
     [f"-P -t Square --coherent --access-scope g --coherent-sample-count 3 --num-topics 2 "
      f"--num-instances 2 -k 0 {W}"],
     ["-S -t Square --coherent --access-scope g --num-topics 2 -k 0"], "OK", "OK",
     ("proc", whole_group_sets(3, ["Square", "Square1"]))),
    ("OrderedAccess_topic_scope",
     [f"-P -t Square --ordered --access-scope t --num-instances 3 -k 0 {W}"],
     ["-S -t Square --ordered --access-scope t -k 0 --take-read"], "OK", "OK",
     ("proc", ordered_across_instances)),
    ("OrderedAccess_instance_scope",
     [f"-P -t Square --ordered --access-scope i --num-instances 3 -k 0 {W}"],
     ["-S -t Square --ordered --access-scope i -k 0"], "OK", "OK", in_order_per_instance),
    ("OrderedAccess_group_scope",
     [f"-P -t Square --ordered --access-scope g --num-topics 2 --num-instances 2 -k 0 {W}"],
     ["-S -t Square --ordered --access-scope g --num-topics 2 -k 0"], "OK", "OK",
     ("proc", ordered_across_topics(["Square", "Square1"]))),
]

def verbose():
    return "-v" in sys.argv or "--verbose" in sys.argv


# How long a test's subscriber keeps receiving after its first sample, before the check.
COLLECT = 2.0


def run_test(test, pub_cmd, sub_cmd):
    name, pubs, subs, exp_pub, exp_sub, check = test[:6]
    sub_delay = test[6] if len(test) > 6 else 0.5
    collect = test[7] if len(test) > 7 else COLLECT
    procs = []
    try:
        pub_procs = []
        for a in pubs:
            pub_procs.append(Proc(pub_cmd, a))
            procs.append(pub_procs[-1])
            time.sleep(0.3)
        time.sleep(sub_delay)
        sub_procs = []
        for a in subs:
            sub_procs.append(Proc(sub_cmd, a))
            procs.append(sub_procs[-1])
        expects_samples = ["-w" in a.split() for a in pubs]
        results = {}

        def subs_unsupported():
            return any(s.p.poll() is not None and s.unsupported() for s in sub_procs)

        def pubs_unsupported():
            return any(p.p.poll() is not None and p.unsupported() for p in pub_procs)

        def pub_job(i, p):
            results[("pub", i)] = run_publisher(p, expects_samples[i], subs_unsupported)

        def sub_job(i, s):
            results[("sub", i)] = run_subscriber(s, pubs_unsupported)

        jobs = [threading.Thread(target=pub_job, args=(i, p)) for i, p in enumerate(pub_procs)]
        jobs += [threading.Thread(target=sub_job, args=(i, s)) for i, s in enumerate(sub_procs)]
        for j in jobs:
            j.start()
        for j in jobs:
            j.join()
        got_pub = results[("pub", 0)]
        got_sub = results[("sub", 0)]
        # Unsupported wins wherever it was said, as in the OMG harness.
        if any(p.unsupported() for p in pub_procs):
            got_pub = "UNSUPPORTED_FEATURE"
        if any(s.unsupported() for s in sub_procs):
            got_sub = "UNSUPPORTED_FEATURE"
        problems = []
        # An expectation is a code, or a tuple of codes a race may give either of.
        if got_pub not in (exp_pub if isinstance(exp_pub, tuple) else (exp_pub,)):
            problems.append(f"publisher {got_pub}, expected {exp_pub}")
        if got_sub not in (exp_sub if isinstance(exp_sub, tuple) else (exp_sub,)):
            problems.append(f"subscriber {got_sub}, expected {exp_sub}")
        if not problems and check is not None:
            time.sleep(collect)
            if isinstance(check, tuple) and check[0] == "procs":
                why = check[1](pub_procs, sub_procs)
            elif isinstance(check, tuple):
                why = check[1](sub_procs[0])
            else:
                why = check(sub_procs[0].samples())
            if why:
                problems.append(why)
                if verbose():
                    for p in pub_procs + sub_procs:
                        print(f"--- {' '.join(p.argv)}", *p.lines[-8:], sep="\n")
        return got_pub, got_sub, problems
    finally:
        for p in procs:
            p.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pub", required=True, help="publisher command")
    ap.add_argument("--sub", required=True, help="subscriber command")
    ap.add_argument("--filter", default="", help="run the tests whose name contains this")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="print the output of failures")
    ap.add_argument(
        "--allow-unsupported",
        action="store_true",
        help="a program reporting a feature not supported is not a failure (other vendors)",
    )
    ap.add_argument(
        "--peer-defect",
        action="append",
        default=[],
        metavar="TEST=REASON",
        help="a known defect of the other vendor's program: that test failing is reported as "
        "PEER-DEFECT with the reason, not counted as failed (repeatable)",
    )
    o = ap.parse_args()
    defects = dict(d.split("=", 1) for d in o.peer_defect)
    unknown = [name for name in defects if not any(t[0] == name for t in TESTS)]
    if unknown:
        ap.error(f"--peer-defect names no test: {', '.join(unknown)}")
    tests = [t for t in TESTS if o.filter in t[0]]
    if o.list:
        for t in tests:
            print(t[0])
        return 0
    passed = failed = unsupported = peer = 0
    started = time.monotonic()
    for t in tests:
        t0 = time.monotonic()
        got_pub, got_sub, problems = run_test(t, o.pub, o.sub)
        took = time.monotonic() - t0
        said_unsupported = "UNSUPPORTED_FEATURE" in (got_pub, got_sub)
        if problems and said_unsupported and o.allow_unsupported:
            unsupported += 1
            print(f"UNSUPPORTED {t[0]} ({took:.1f} s): " + "; ".join(problems), flush=True)
        elif problems and t[0] in defects:
            peer += 1
            print(f"PEER-DEFECT {t[0]} ({took:.1f} s): {defects[t[0]]}: " + "; ".join(problems),
                  flush=True)
        elif problems:
            failed += 1
            print(f"FAIL {t[0]} ({took:.1f} s): " + "; ".join(problems), flush=True)
        elif said_unsupported:
            unsupported += 1
            print(f"UNSUPPORTED {t[0]} ({took:.1f} s)", flush=True)
        else:
            passed += 1
            note = " (listed as a peer defect, passes)" if t[0] in defects else ""
            print(f"ok {t[0]} ({took:.1f} s): publisher {got_pub}, subscriber {got_sub}{note}",
                  flush=True)
    defects_text = f", {peer} peer defects" if peer else ""
    print(
        f"shape suite: {passed} passed, {failed} failed, {unsupported} not supported"
        f"{defects_text} of {len(tests)} in {time.monotonic() - started:.0f} s"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
