//! The `tessera` command-line tool.
//!
//! Subcommands:
//! - `tessera perf ...`: a drop-in twin of Cyclone DDS's `ddsperf` (see `tessera_cli::perf`).
//! - `tessera discovery-server -i ID [-l ADDR] [-p PORT]`: a discovery server (Fast DDS 2.9's
//!   protocol) for clients configured with `ROS_DISCOVERY_SERVER`.
//! - `tessera bench ...`: runs the `tessera-bench` binary installed next to this one.
//! - `tessera echo TOPIC` / `tessera pub TOPIC VALUE`: samples of a topic of a discovered type.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = tessera_cli::dispatch(&args);
    std::process::exit(code);
}
