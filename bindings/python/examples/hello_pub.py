"""The Python half of the example pair: publishes `hello::Greeting` samples on `Greetings`
from a dataclass. Its Rust peer is `crates/tessera/examples/hello_sub.rs`:

    cargo run -p tessera --example hello_sub &     # prints what it receives
    python examples/hello_pub.py 10

The same type in IDL, for Cyclone DDS or Fast DDS peers:

    module hello { struct Greeting { @key long id; string message; sequence<double> values; }; };
"""

import sys
import time
from dataclasses import dataclass
from typing import Annotated

import tessera
from tessera.types import int32, key, topic


@topic(name="hello::Greeting")
@dataclass
class Greeting:
    id: Annotated[int32, key]
    message: str
    values: list[float]


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    wait_readers = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    dp = tessera.DomainParticipant(domain_id=0)
    greetings = dp.create_topic("Greetings", Greeting)
    writer = dp.create_writer(greetings, reliability="reliable", history="keep_all")
    if not writer.wait_for_readers(wait_readers, timeout=20):
        sys.exit("hello_pub: no reader matched in 20 s")
    for i in range(count):
        writer.write(Greeting(id=i % 3, message=f"hello {i}", values=[i, i / 2]))
        time.sleep(0.01)
    writer.wait_for_acknowledgments(timeout=10)
    print(f"hello_pub: wrote {count}")


if __name__ == "__main__":
    main()
