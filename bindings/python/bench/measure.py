"""Measures the issue's two Python targets (a measurement, not a test: it asserts nothing).

    scripts/netns-run VENV/bin/python bindings/python/bench/measure.py [--seconds 2] [--tessera PATH]

1. 16 B round trip: a Python ping and a Python pong process through the binding, against
   `tessera perf -T UK16 ping waitset` / `pong waitset` (the Rust API), each for `--seconds`.
   Target: the binding's median ≤ 1.5× the Rust API's. `tessera perf`, like ddsperf, reports
   half the round trip as its latency: the Rust round trip here is twice its figure. Beside
   each: CPU per round trip, ping and pong processes together (utime + stime from /proc over
   the measured window, so 10 ms ticks: a few % of noise over 2 s).
2. `for sample in reader` at 16 B: a Rust publisher (`tessera perf -T UK16 pub inf`) and a
   Python loop over the reader, in samples/s. Target: ≥ 200k samples/s.

The Python side uses ddsperf's own 16 B type (`Unkeyed16`: `unsigned long seq; octet
baggage[12];`) on its topics, so the numbers compare like for like. Build the wheel with
`maturin build --release` and `tessera` with `cargo build --release -p tessera-cli`: debug
builds measure the compiler, not the binding.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import tessera
from tessera.types import array, topic, uint32

REPO = Path(__file__).resolve().parents[3]


@topic(name="Unkeyed16")
@dataclass
class Unkeyed16:
    seq: uint32
    baggage: Annotated[bytes, array(12)]


QOS = dict(reliability="reliable", depth=1)
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    """The CPU seconds (user + system, all threads) process `pid` used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def pong(seconds: float) -> None:
    dp = tessera.DomainParticipant(0)
    ping = dp.create_reader(dp.create_topic("PyPing16", Unkeyed16), **QOS)
    out = dp.create_writer(dp.create_topic("PyPong16", Unkeyed16), **QOS)
    for s in ping.samples(timeout=seconds + 5):
        if s.data is not None:  # not the ping writer's unregistration at its end
            out.write(s.data)


def ping(seconds: float, pong_pid: int) -> tuple[list[float], float]:
    """The round trips (us) after a warm-up, and the CPU seconds both processes used then."""
    dp = tessera.DomainParticipant(0)
    out = dp.create_writer(dp.create_topic("PyPing16", Unkeyed16), **QOS)
    back = dp.create_reader(dp.create_topic("PyPong16", Unkeyed16), **QOS)
    out.wait_for_readers(1, 10)
    back.wait_for_writers(1, 10)
    rtts = []
    seq = 0
    end = time.monotonic() + seconds
    warm = time.monotonic() + 0.3
    cpu0 = None
    while time.monotonic() < end:
        seq += 1
        t0 = time.perf_counter_ns()
        out.write(Unkeyed16(seq, bytes(12)))
        while True:
            got = back.take(1, timeout=1.0)
            if not got or got[0].data.seq == seq:
                break
        if got and time.monotonic() > warm:
            rtts.append((time.perf_counter_ns() - t0) / 1000)
            if cpu0 is None:
                cpu0 = cpu_s(os.getpid()) + cpu_s(pong_pid)
    cpu = cpu_s(os.getpid()) + cpu_s(pong_pid) - (cpu0 or 0.0)
    return rtts, cpu


def rust_roundtrip(tessera_bin: str, seconds: float) -> tuple[list[str], float, int]:
    """`tessera perf` ping's report lines over a window of `seconds` (rounded, ≥ 1) after its
    first report, the CPU seconds both processes used in it and the round trips it counted."""
    window = max(1, round(seconds))
    pong_p = subprocess.Popen([tessera_bin, "perf", "-T", "UK16", "-D", str(window + 4), "pong",
                               "waitset"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Reports come once a second from t=2: CPU is read at the first and at the one `window`
    # seconds later, before the last, so that both processes are still there.
    ping_p = subprocess.Popen([tessera_bin, "perf", "-T", "UK16", "-D", str(window + 3), "ping",
                               "waitset"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True)
    lines, cpu, count, first, read_twice = [], 0.0, 0, None, False
    try:
        for line in ping_p.stdout:
            m = re.search(r"\] ([0-9.]+) .* cnt (\d+)", line)
            if not m:
                continue
            t = float(m.group(1))
            if first is None:
                first = t
                cpu = -(cpu_s(ping_p.pid) + cpu_s(pong_p.pid))
            elif t <= first + window + 0.5:
                lines.append(line.strip())
                count += int(m.group(2))
                if t > first + window - 0.5:
                    cpu += cpu_s(ping_p.pid) + cpu_s(pong_p.pid)
                    read_twice = True
        ping_p.wait(timeout=30)
    finally:
        ping_p.kill()
        pong_p.kill()
        ping_p.wait()
        pong_p.wait()
    return lines, cpu if read_twice else float("nan"), count


def python_throughput(tessera_bin: str, seconds: float) -> tuple[int, float]:
    dp = tessera.DomainParticipant(0)
    reader = dp.create_reader(dp.create_topic("DDSPerfRDataUK16", Unkeyed16),
                              reliability="reliable", history="keep_all")
    pub = subprocess.Popen([tessera_bin, "perf", "-T", "UK16", "-D", str(seconds + 3), "pub",
                            "inf"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        reader.wait_for_writers(1, 10)
        reader.take(100000, timeout=2.0)  # the first samples, then measure
        n = 0
        start = time.monotonic()
        end = start + seconds
        for _ in reader:
            n += 1
            if n & 1023 == 0 and time.monotonic() >= end:
                break
        return n, time.monotonic() - start
    finally:
        pub.kill()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--tessera", default=str(REPO / "target/release/tessera"))
    ap.add_argument("--rtt-only", action="store_true", help="skip the for-loop rate")
    ap.add_argument("--role", choices=["pong"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.role == "pong":
        pong(a.seconds)
        return
    pong_p = subprocess.Popen([sys.executable, __file__, "--role", "pong", "--seconds",
                               str(a.seconds)])
    try:
        rtts, cpu = ping(a.seconds, pong_p.pid)
    finally:
        pong_p.kill()
        pong_p.wait()
    med = statistics.median(rtts)
    print(f"python 16 B round trip: {len(rtts)} round trips, median {med:.1f} us, "
          f"p90 {statistics.quantiles(rtts, n=10)[-1]:.1f} us, "
          f"CPU {cpu / len(rtts) * 1e6:.1f} us per round trip")
    if not Path(a.tessera).is_file():
        print(f"{a.tessera} missing: no Rust comparison (cargo build --release -p tessera-cli)")
        return
    lines, rcpu, count = rust_roundtrip(a.tessera, a.seconds)
    print("rust (tessera perf, latency = half the round trip) 16 B:")
    print("  " + "\n  ".join(lines))
    halves = [float(m.group(1)) for m in (re.search(r"\b50% ([0-9.]+)us", x) for x in lines) if m]
    if halves and count:
        rust = 2 * statistics.median(halves)
        print(f"rust 16 B round trip: median {rust:.1f} us, "
              f"CPU {rcpu / count * 1e6:.1f} us per round trip")
        print(f"binding / Rust API, median round trip: {med / rust:.2f} (target <= 1.5)")
    if a.rtt_only:
        return
    n, secs = python_throughput(a.tessera, a.seconds)
    print(f"python `for sample in reader` at 16 B: {n} samples in {secs:.2f} s = "
          f"{n / secs / 1000:.0f}k samples/s (target 200k)")


if __name__ == "__main__":
    main()
