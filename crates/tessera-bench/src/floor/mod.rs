//! The raw UDP floor: the same experiments as `tessera perf` with no middleware at all, so the
//! report can show what the network stack alone costs.
//!
//! ```text
//! tessera bench udp ping|pong|pub|sub [--size N] [--duration S] [--warmup S]
//!                                     [--peer IP:PORT] [--port P] [--rate R]
//! ```
//!
//! - `pong` (and `sub`) bind `--port` (default 7700) and run until `--duration` or SIGINT/SIGTERM;
//!   `pong` echoes every datagram to its sender.
//! - `ping` sends one sample of `--size` bytes to `--peer` (default 127.0.0.1:7700) and waits for
//!   its echo before sending the next (as fast as possible, or `--rate` pings per second). The
//!   latency recorded is half the round trip, like ddsperf's. A ping not answered within 1 s is
//!   replaced by the next one. `--warmup S`: round trips of the first S seconds after the first
//!   echo stay out of the whole-run histogram.
//! - `pub` sends sequence-numbered samples to `--peer` as fast as possible, or `--rate` samples
//!   per second (paced like ddsperf: 1 ms sleeps when ahead); `sub` counts them per second and
//!   counts sequence gaps as lost.
//!
//! Output: the JSON lines of `tessera perf --json` (`latency`, `pub`, `sub`, final `summary`
//! with the whole-run histogram of `ping`; `error` when `ping` got no answer at all, exit 1), so
//! [`super::parse::parse_tessera_json`] reads them. Every line is flushed as written.
//!
//! Wake-up strategy: blocking sockets without a receive timeout (as the DDS defaults: blocking
//! receive, no busy-poll, no `SO_RCVTIMEO` timer per receive). A watchdog thread ends a blocking
//! receive when needed (end of run, a ping unanswered for 1 s, a report due while idle) by
//! sending a small wake-up datagram to the socket itself. Socket buffers: 8 MiB requested
//! (`SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`, else the plain options), as Tessera does.
//!
//! Wire format of every datagram (little endian): magic `u32`, fragment index `u16`, fragment
//! count `u16`, sample size `u32`, reserved `u32`, sequence number `u64`, send time `u64` (ns,
//! the sender's monotonic clock), then padding. So a sample is at least [`HEADER`] = 32 bytes on
//! the wire; smaller `--size` values are sent as 32 bytes (and reported as the size asked for). A UDP datagram carries at most
//! 65507 bytes of payload; a sample larger than [`MAX_FRAGMENT`] = 65000 bytes is split into
//! `ceil(size / 65000)` datagrams (each with its own header, counted within the size) and counts
//! as received (or answered) only when all its datagrams arrived. Sizes up to 64 MiB.

mod cli;
mod clock;
mod latency;
mod socket;
mod throughput;
mod wire;

#[cfg(test)]
mod tests;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tessera_cli::perf::report::Reporter;

pub(crate) use cli::{option_pairs, secs, tool_main};
pub use cli::{parse_args, usage};
pub use wire::{fragment_lengths, Header};

use latency::{ping, pong};
use socket::bind;
use throughput::{publish, subscribe};

/// Bytes of the header every datagram starts with.
pub const HEADER: usize = 32;
/// Largest datagram the floor sends (below UDP's 65507-byte limit).
pub const MAX_FRAGMENT: usize = 65_000;
/// Largest `--size`.
pub const MAX_SIZE: usize = 64 << 20;
/// Default port of `pong` and `sub`, and of the default `--peer`.
pub const DEFAULT_PORT: u16 = 7700;
/// Requested receive buffer size (the send buffer keeps the host's default, as Tessera's).
pub const SOCKET_BUFFER: usize = 8 << 20;

const MAGIC_DATA: u32 = 0x5442_4644; // "TBFD"
const MAGIC_WAKE: u32 = 0x5442_4657; // "TBFW"
const SEC: i64 = 1_000_000_000;
/// A ping unanswered for this long is replaced by the next one.
const PING_TIMEOUT: i64 = SEC;
/// How often the watchdog looks.
const WATCH_PERIOD: Duration = Duration::from_millis(100);

/// What one floor process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Measures round trips against a `pong`.
    Ping,
    /// Echoes every datagram.
    Pong,
    /// Sends a stream of samples.
    Pub,
    /// Receives and counts the stream.
    Sub,
}

/// The command line of `tessera bench udp`.
#[derive(Debug, Clone, PartialEq)]
pub struct FloorConfig {
    /// The role.
    pub role: Role,
    /// Sample size in bytes (default 12, ddsperf's smallest sample).
    pub size: usize,
    /// Run time; `None`: until SIGINT/SIGTERM.
    pub duration: Option<Duration>,
    /// `ping`: seconds after the first echo whose round trips stay out of the summary.
    pub warmup: Option<Duration>,
    /// Where `ping` and `pub` send (default 127.0.0.1:7700).
    pub peer: SocketAddr,
    /// Local port (default 7700 for `pong`/`sub`, any for `ping`/`pub`).
    pub port: u16,
    /// `ping`: pings per second; `pub`: samples per second; `None`: as fast as possible.
    pub rate: Option<f64>,
}

/// Runs one floor process writing its JSON lines to `out`; `stop` ends it early. Returns the
/// exit status (0; 1 when `ping` got no answer; 2 on a socket error).
pub fn run<W: Write>(cfg: &FloorConfig, out: W, stop: Arc<AtomicBool>) -> i32 {
    let mut rep = Reporter::new(out, true);
    let sock = match bind(cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tessera bench udp: bind port {}: {e}", cfg.port);
            return 2;
        }
    };
    let r = match cfg.role {
        Role::Ping => ping(cfg, &sock, &mut rep, stop),
        Role::Pong => pong(cfg, &sock, &mut rep, stop),
        Role::Pub => publish(cfg, &sock, &mut rep, &stop),
        Role::Sub => subscribe(cfg, &sock, &mut rep, stop),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tessera bench udp: {e}");
            2
        }
    }
}

/// `tessera bench udp ...`: `args` are the words after `udp` (a leading `udp` is accepted).
/// Prints JSON lines on stdout; returns the exit status (3 for a bad command line).
pub fn main(args: &[String]) -> i32 {
    tool_main("udp", args, parse_args, usage, run)
}
