//! `tessera bench`: plans, runs, measures and reports pub/sub experiments — the seeds' DDS
//! Benchmark Environment, side by side with Cyclone DDS.
//!
//! - [`scenario`]: scenario files (TOML) and the built-in presets, expanded into points.
//! - [`runner`]: runs the points, interleaved, each in namespaces made for it ([`hosts`]),
//!   driving `tessera perf`, `ddsperf`, the raw UDP floor ([`floor`]) and the Tessera-only
//!   [`worker`]; reads their output ([`parse`]) and their /proc figures ([`procmon`]).
//! - [`stats`]: HdrHistogram summaries; [`results`]: the result model (`results.json`).
//! - [`report`]: results.json/csv, report.md, report.html with charts, the terminal table.
//! - [`compare`] two result directories; [`expect`] criteria for regression checks.
//! - [`env`]: the environment captured with every result.

pub mod compare;
pub mod env;
pub mod expect;
pub mod floor;
pub mod hosts;
pub mod parse;
pub mod procmon;
pub mod report;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod stats;
pub mod worker;
