//! `tessera perf`: a drop-in twin of Cyclone DDS's `ddsperf` (cyclonedds-tools 0.10.2).
//!
//! Same command line ([`args`]), same topics, types, QoS and peer protocol ([`protocol`], and
//! `docs/ddsperf-protocol.md`), same statistics ([`stats`]) and report lines ([`report`]), same
//! exit codes. The DCPS-facing driver lives in the private `run` module.

pub mod args;
pub mod cnum;
pub mod loan;
pub mod peers;
pub mod protocol;
pub mod report;
pub mod stats;
pub mod sysinfo;

mod run;
pub mod types;

pub use args::{parse, usage_text, ArgsError, PerfConfig};

/// Exit status: all is well.
pub const EXIT_OK: i32 = 0;
/// Exit status: a success criterion failed (matching, loss, -Q criteria).
pub const EXIT_CRITERIA: i32 = 1;
/// Exit status: a DDS operation failed.
pub const EXIT_DDS_ERROR: i32 = 2;
/// Exit status: bad command line (also after printing the help).
pub const EXIT_BAD_ARGS: i32 = 3;

/// Runs `tessera perf` with `args` (the words after `perf`) and returns the exit status. `prog`
/// is how the tool was invoked, for the usage text and diagnostics.
pub fn main(prog: &str, args: &[String]) -> i32 {
    use std::io::Write;
    let cfg = match args::parse(prog, args) {
        Ok(cfg) => cfg,
        Err(ArgsError::Usage { diagnostic }) => {
            if let Some(d) = diagnostic {
                eprintln!("{d}");
            }
            print!("{}", usage_text(prog));
            let _ = std::io::stdout().flush();
            return EXIT_BAD_ARGS;
        }
        Err(ArgsError::Invalid(msg)) => {
            println!("{msg}");
            let _ = std::io::stdout().flush();
            return EXIT_BAD_ARGS;
        }
    };
    if let Some(nl) = &cfg.netload {
        if !sysinfo::netload_device_exists(&nl.device) {
            println!(
                "can't get network utilization information for device {}",
                nl.device
            );
            return EXIT_BAD_ARGS;
        }
    }
    run::run(&cfg)
}
