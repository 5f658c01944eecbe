//! The DCPS-facing driver of `tessera perf` (entities, threads, the once-per-second main loop).
//!
//! Not wired yet: the DCPS API of the `tessera` crate is being written in parallel. The plan
//! (entity creation order, listeners/waitsets, the main loop) is in `docs/ddsperf-protocol.md`
//! ("Implementation plan for tessera"); everything it needs that does not touch DDS is in the
//! sibling modules.

use super::args::PerfConfig;
use super::EXIT_DDS_ERROR;

/// Runs the benchmark described by `cfg` and returns the exit status.
pub fn run(cfg: &PerfConfig) -> i32 {
    let _ = cfg;
    println!("tessera perf: the DDS runtime is not available in this build yet");
    EXIT_DDS_ERROR
}
