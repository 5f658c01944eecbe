//! Library half of the `tessera` command-line tool, so that its parts can be unit tested and
//! reused by the benchmark harness.
//!
//! - [`bench`](mod@bench): `tessera bench`, the benchmark environment.
//! - [`perf`]: `tessera perf`, a twin of Cyclone DDS's `ddsperf` (same command-line grammar, same
//!   per-second report lines, same exit codes), plus a `--json` output mode.

pub mod bench;
pub mod perf;

/// Top-level usage text of the `tessera` binary.
pub fn top_usage(prog: &str) -> String {
    format!(
        "usage: {prog} COMMAND [ARGS...]\n\
         \n\
         COMMANDS:\n\
         \x20 perf [OPTIONS] MODE...   ddsperf-compatible latency/throughput tool\n\
         \x20                          (\"{prog} perf help\" for details)\n\
         \x20 bench [PRESET|FILE]      benchmark environment: experiments side by side\n\
         \x20                          with Cyclone DDS (\"{prog} bench help\")\n"
    )
}

/// Dispatches `argv` (including the program name at index 0) to a subcommand and returns the
/// process exit code.
pub fn dispatch(argv: &[String]) -> i32 {
    let prog = argv.first().map(String::as_str).unwrap_or("tessera");
    match argv.get(1).map(String::as_str) {
        Some("perf") => perf::main(&format!("{prog} perf"), &argv[2..]),
        Some("bench") => bench::main(&format!("{prog} bench"), &argv[2..]),
        _ => {
            print!("{}", top_usage(prog));
            perf::EXIT_BAD_ARGS
        }
    }
}
