//! The `tessera` command-line tool.
//!
//! Subcommands:
//! - `tessera perf ...`: a drop-in twin of Cyclone DDS's `ddsperf` (see `tessera_cli::perf`).
//! - `tessera bench ...`: runs the `tessera-bench` binary installed next to this one.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let code = tessera_cli::dispatch(&args);
    std::process::exit(code);
}
