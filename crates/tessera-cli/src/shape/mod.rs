//! `tessera shape`: the OMG DDS-RTPS interoperability suite's shape application (`shape_main`),
//! so that the suite's harness can run Tessera against every other vendor.
//!
//! Same options, same ShapeType (`@appendable`, key `color`), same output lines: the harness
//! reads them from standard output (`Create topic: ...`, `Create writer for topic: ...`,
//! `on_publication_matched()`, one line per sample as `printf("%-10s %-10s %03d %03d [%d]")`,
//! instance states, listener lines). Built on the public API only. Features Tessera does not
//! have (a custom SPDP period or fragment size) print a line containing "not supported",
//! which the harness records as an unsupported feature.
//!
//! Presentation as the reference does it: with `--coherent` (or `--ordered`) and
//! `--coherent-sample-count N` the publisher opens a coherent set every N iterations
//! ("Started Coherent Set"), writes N samples per instance and topic, and closes it
//! ("Finished Coherent Set"); the subscriber's publisher and subscriber QoS carry PRESENTATION
//! with `--access-scope`, and each read pass is announced ("Reading coherent sets, iteration
//! N", "Reading with ordered access, iteration N") and bracketed by begin/end_access. At
//! GROUP scope a publisher's set spans all its topics and shows in all the subscriber's
//! readers together; with `--ordered` a pass reads the readers in the order
//! `Subscriber::get_datareaders` gives (the publisher's write order across topics).
//!
//! Statuses are polled once per write or read period rather than taken from listeners: a
//! listener set after `create_datawriter` could miss a match that happened in between, and
//! the suite only needs to see each status change once.

use std::time::{Duration, Instant};

use crate::stop;

use tessera::TopicType;

mod args;
mod publish;
mod qos;
mod status;
mod subscribe;

pub use args::{parse, usage, FinalState, Role, ShapeArgs};
use publish::publish;
use subscribe::subscribe;

/// Exit status for bad arguments.
pub const EXIT_BAD_ARGS: i32 = 3;
/// Exit status when an entity could not be created.
pub const EXIT_FAILED: i32 = 1;

/// The suite's ShapeType: `@appendable struct ShapeType { @key string<128> color; long x;
/// long y; long shapesize; sequence<octet> additional_payload_size; }`.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "ShapeType", extensibility = "appendable")]
pub struct ShapeType {
    /// The instance key.
    #[key]
    #[bound(128)]
    pub color: String,
    /// Position.
    pub x: i32,
    /// Position.
    pub y: i32,
    /// Size, or a per-sample counter with `-z 0`.
    pub shapesize: i32,
    /// Extra bytes (`--additional-payload-size`); the last one is 255. IDL `uint8`, as the
    /// suite declares it (not `octet`): Cyclone 11 refuses a type whose identifiers differ.
    #[uint8]
    pub additional_payload_size: Vec<u8>,
}

/// Sleeps `d` unless a signal asks to stop first.
fn pause(d: Duration) {
    let end = Instant::now() + d;
    while !stop::requested() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Names the suite gives the k-th topic or instance: `Square`, `Square1`, `Square2`, ...
fn nth_name(base: &str, k: u32) -> String {
    if k == 0 {
        base.to_string()
    } else {
        format!("{base}{k}")
    }
}

/// The reference application's sample line.
fn sample_line(topic: &str, s: &ShapeType) -> String {
    let mut line = format!(
        "{:<10} {:<10} {:03} {:03} [{}]",
        topic, s.color, s.x, s.y, s.shapesize
    );
    if let Some(last) = s.additional_payload_size.last() {
        line.push_str(&format!(" {{{last}}}"));
    }
    line
}

/// `tessera shape ARGS`: runs until the iterations are done or SIGINT/SIGTERM.
pub fn main(prog: &str, args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{}", usage(prog));
        return 0;
    }
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{prog}: {e}");
            eprint!("{}", usage(prog));
            return EXIT_BAD_ARGS;
        }
    };
    if !a.unsupported.is_empty() {
        // The suite records a line with these words as an unsupported feature, not a failure.
        println!("{}: not supported by Tessera", a.unsupported.join(", "));
        return EXIT_FAILED;
    }
    crate::stop::install();
    let result = match a.role {
        Role::Publish => publish(&a),
        Role::Subscribe => subscribe(&a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            println!("{e}");
            EXIT_FAILED
        }
    }
}

#[cfg(test)]
mod tests;
