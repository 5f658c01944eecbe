"""Python (this binding) against other DDS programs, all in the test's network namespace:
the Rust example `hello_sub` (crates/tessera/examples/hello_sub.rs) and Cyclone DDS 11's own
Python API (PyPI cyclonedds, tests/cyclone_peer.py), with the same IDL types."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tessera

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]

STATUS_IDL = """
module hello {
  @appendable struct Status {
    @key long id;
    string<32> text;
    sequence<double> values;
    @optional long code;
  };
};
"""


def example(name: str) -> Path:
    """The example binary: $TESSERA_EXAMPLES_DIR, else target/release or target/debug."""
    dirs = [os.environ.get("TESSERA_EXAMPLES_DIR")] + [
        REPO / "target" / p / "examples" for p in ("release", "debug")]
    for d in filter(None, dirs):
        if (Path(d) / name).is_file():
            return Path(d) / name
    pytest.fail(f"{name} not built: cargo build -p tessera --example {name}")


def cyclone_python() -> str:
    """An interpreter that imports cyclonedds: this one, else the system's python3."""
    for exe in (sys.executable, "python3"):
        ok = subprocess.run([exe, "-c", "import cyclonedds"], capture_output=True).returncode
        if ok == 0:
            return exe
    pytest.fail("python cyclonedds missing (scripts/install-deps installs cyclonedds==11.0.1)")


def wait_line(proc, want: str, timeout: float = 20.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        line = proc.stdout.readline()
        if line.strip() == want:
            return
        if not line and proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"peer did not print {want!r}: {proc.stderr.read()}")


def test_python_writer_to_rust_example_reader():
    sub = subprocess.Popen([str(example("hello_sub")), "6"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        wait_line(sub, "ready")
        pub = subprocess.run([sys.executable, str(REPO / "bindings/python/examples/hello_pub.py"),
                              "6"], capture_output=True, text=True, timeout=60)
        assert pub.returncode == 0, pub.stderr
        out, err = sub.communicate(timeout=30)
    finally:
        sub.kill()
    assert sub.returncode == 0, err
    lines = out.splitlines()
    assert lines == [f"{i % 3} hello {i} [{float(i)}, {i / 2}]" for i in range(6)], out


def test_python_writer_to_cyclone_reader_same_idl():
    status = tessera.from_idl(STATUS_IDL)["hello::Status"]
    peer = subprocess.Popen([cyclone_python(), str(HERE / "cyclone_peer.py"), "sub-status", "8"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_line(peer, "ready")
        dp = tessera.DomainParticipant(0)
        t = dp.create_topic("PyStatus", status)
        w = dp.create_writer(t, reliability="reliable", history="keep_all",
                             durability="transient_local")
        assert w.wait_for_readers(1, timeout=20)
        wait_line(peer, "matched")
        for i in range(8):
            w.write(status(i, f"t{i}", [i, 0.25], i * 10 if i % 2 else None))
        w.wait_for_acknowledgments(timeout=10)
        out, err = peer.communicate(timeout=30)
    finally:
        peer.kill()
    assert peer.returncode == 0, (out, err)
    want = [f"{i} t{i} [{float(i)}, 0.25] {i * 10 if i % 2 else None}" for i in range(8)]
    assert sorted(out.splitlines()) == sorted(want), out


def test_cyclone_writer_to_python_reader(participant):
    from dataclasses import dataclass
    from typing import Annotated

    from tessera.types import int32, key, topic

    @topic(name="hello::Greeting")
    @dataclass
    class Greeting:
        id: Annotated[int32, key]
        message: str
        values: list[float]

    t = participant.create_topic("PyGreetings", Greeting)
    r = participant.create_reader(t, reliability="reliable", history="keep_all")
    peer = subprocess.Popen([cyclone_python(), str(HERE / "cyclone_peer.py"), "pub-greeting",
                             "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        got = []
        for s in r.samples(timeout=20):
            got.append(s.data)
            if len(got) == 5:
                break
        peer.communicate(timeout=30)
    finally:
        peer.kill()
    assert sorted(got, key=lambda g: g.id) == [
        Greeting(i, f"from cyclone {i}", [i * 0.5]) for i in range(5)]
