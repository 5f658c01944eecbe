//! The Rust peer workers, built on demand: `rustdds-perf` (RustDDS 0.15), `dust_dds-perf`
//! (dust_dds 0.16) and `zenoh-perf` (Zenoh 1.10, peer mode).
//!
//! Each is a crate of its own under `workers/` (its own Cargo.lock and target directory,
//! outside Tessera's workspace, so the default build never compiles them) that shares
//! `workers/common/perf_core.rs`: ddsperf's command grammar and `tessera perf --json`'s output
//! lines, which the bench reads with the parser it has. The first run that needs one runs
//! `cargo build --release --locked` in its directory (Zenoh's first build takes about ten
//! minutes on 2 cores; RustDDS and dust_dds under one); later runs find cargo's build current
//! in well under a second. A worker that cannot be built — no source tree beside this binary,
//! no cargo, no registry — is skipped with a note, never a failure of the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::results::Implementation;

/// A Rust peer worker: its directory under `workers/`, binary and override variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// The pair name it serves.
    pub implementation: Implementation,
    /// Directory under `workers/`.
    pub dir: &'static str,
    /// The binary cargo builds.
    pub binary: &'static str,
    /// A path to use as is instead of building (empty: leave the worker's pairs out).
    pub override_env: &'static str,
}

/// The three workers.
pub const SPECS: [Spec; 3] = [
    Spec {
        implementation: Implementation::RustDds,
        dir: "rustdds",
        binary: "rustdds-perf",
        override_env: "TESSERA_BENCH_RUSTDDS_PERF",
    },
    Spec {
        implementation: Implementation::DustDds,
        dir: "dust_dds",
        binary: "dust_dds-perf",
        override_env: "TESSERA_BENCH_DUST_DDS_PERF",
    },
    Spec {
        implementation: Implementation::Zenoh,
        dir: "zenoh",
        binary: "zenoh-perf",
        override_env: "TESSERA_BENCH_ZENOH_PERF",
    },
];

/// The spec of `implementation`, if it is a Rust peer.
pub fn spec(implementation: Implementation) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.implementation == implementation)
}

/// Overrides the source tree the workers are built in (default: the one this binary was
/// compiled from).
pub const WORKERS_DIR_ENV: &str = "TESSERA_BENCH_WORKERS_DIR";

/// Why a worker is not available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The worker's crate is not where the bench looks.
    #[error("its source is not in {0} (set {WORKERS_DIR_ENV} to a checkout's workers/)")]
    NoSource(String),
    /// `cargo` is not on `PATH`.
    #[error("cargo was not found")]
    NoCargo,
    /// The override variable is set to something that is not an executable.
    #[error("{0} is {1:?}: not an executable file (empty: disabled)")]
    Override(&'static str, String),
    /// cargo ran and failed (no registry access, a compile error).
    #[error("`cargo build --release` in {dir} failed: {tail}")]
    Failed {
        /// The worker's directory.
        dir: String,
        /// cargo's error lines.
        tail: String,
    },
}

/// The `workers/` directory: [`WORKERS_DIR_ENV`], or the source tree of this build.
pub fn workers_dir() -> PathBuf {
    match std::env::var_os(WORKERS_DIR_ENV).filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../workers"),
    }
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| crate::env::is_executable(&d.join(program))))
        .unwrap_or(false)
}

/// The worker binary for `spec`: the override, or a (cached) cargo build under `workers`.
pub fn ensure_worker(spec: &Spec, workers: &Path) -> Result<PathBuf, BuildError> {
    if let Some(o) = std::env::var_os(spec.override_env) {
        let p = PathBuf::from(&o);
        return if crate::env::is_executable(&p) {
            Ok(p)
        } else {
            Err(BuildError::Override(
                spec.override_env,
                o.to_string_lossy().into_owned(),
            ))
        };
    }
    let dir = workers.join(spec.dir);
    if !dir.join("Cargo.toml").is_file() {
        return Err(BuildError::NoSource(dir.display().to_string()));
    }
    if !on_path("cargo") {
        return Err(BuildError::NoCargo);
    }
    // Cargo decides whether anything changed; the lock file pins what crates.io serves.
    // Offline first: a built worker needs no registry (the bench's own network namespaces
    // have none); only a first build downloads.
    let build = |offline: bool| {
        let mut c = Command::new("cargo");
        c.args(["build", "--release", "--locked", "--quiet"]);
        if offline {
            c.arg("--offline");
        }
        c.current_dir(&dir)
            .env_remove("CARGO_TARGET_DIR")
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| BuildError::Failed {
                dir: dir.display().to_string(),
                tail: format!("running cargo: {e}"),
            })
    };
    let mut out = build(true)?;
    if !out.status.success() {
        out = build(false)?;
    }
    let bin = dir.join("target/release").join(spec.binary);
    if !out.status.success() || !crate::env::is_executable(&bin) {
        return Err(BuildError::Failed {
            dir: dir.display().to_string(),
            tail: error_tail(&String::from_utf8_lossy(&out.stderr), out.status.code()),
        });
    }
    Ok(bin)
}

/// The last few lines of cargo's stderr that say what went wrong, on one line.
fn error_tail(stderr: &str, code: Option<i32>) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("error"))
        .unwrap_or(lines.len().saturating_sub(3));
    let tail: Vec<&str> = lines[start..].iter().take(3).copied().collect();
    if tail.is_empty() {
        format!("exit status {code:?}")
    } else {
        tail.join(" | ")
    }
}

/// Why a mixed pair of a Rust peer with another implementation cannot run `kind` (`latency`
/// or `throughput`), found by running them against Tessera in a network namespace
/// (`tessera ls` showed the endpoints and the reasons); `None` when it can.
pub fn mixed_pair_gap(pair: crate::results::Pair, kind: &str) -> Option<String> {
    let (w, r) = (pair.writer, pair.reader);
    if pair.is_same() || !(w.is_rust_peer() || r.is_rust_peer()) {
        return None;
    }
    if w == Implementation::Zenoh || r == Implementation::Zenoh {
        return Some("Zenoh is not DDS: it pairs only with itself".into());
    }
    if w.is_rust_peer() && r.is_rust_peer() {
        return Some("Rust peers pair with Tessera only".into());
    }
    if (r == Implementation::DustDds || w == Implementation::DustDds) && kind == "latency" {
        return Some(
            "ddsperf's answer-me flag (the ping's odd source timestamp) does not survive \
             dust_dds 0.16: it turns the RTPS fraction into nanoseconds by truncating and back \
             by rounding (rtps_messages/types.rs), so a timestamp that crosses it often comes \
             back 1 ns off and even, and the side that should answer (or count the answer) \
             does not: the next ping waits for the 1 s watchdog (2 round trips in 2 s with \
             Tessera pinging; with dust_dds pinging, thousands in one run and 1 in another)"
                .into(),
        );
    }
    // RustDDS with Tessera: RTPS data flows both ways; what is missing is ddsperf's layer.
    let rustdds = w == Implementation::RustDds || r == Implementation::RustDds;
    if rustdds && kind == "latency" {
        return Some(
            "RustDDS 0.15 has no PARTITION QoS and sends no participant USER_DATA (both are \
             commented out in its SEDP/SPDP code), so Tessera does not take it for a ddsperf \
             peer and addresses its pongs to the pinger's GUID partition, which a RustDDS \
             reader cannot join"
                .into(),
        );
    }
    None
}

/// Whether a Tessera writer facing `reader` must publish without waiting for a ddsperf peer
/// (`-Qminmatch:0`): RustDDS announces no `DDSPerf:` USER_DATA, so Tessera never counts it.
pub fn writer_cannot_count(reader: Implementation) -> bool {
    reader == Implementation::RustDds
}

/// Builds (or finds) the worker of every Rust peer `scenario` uses; drops the pairs of those
/// that cannot be built from `scenario`, with a note each. Returns the binaries by
/// implementation.
pub fn prepare(
    scenario: &mut crate::scenario::Scenario,
    notes: &mut Vec<String>,
) -> BTreeMap<Implementation, PathBuf> {
    prepare_in(scenario, notes, &workers_dir())
}

/// [`prepare`] with the workers' source tree at `workers`.
pub fn prepare_in(
    scenario: &mut crate::scenario::Scenario,
    notes: &mut Vec<String>,
    workers: &Path,
) -> BTreeMap<Implementation, PathBuf> {
    let mut found = BTreeMap::new();
    for s in &SPECS {
        let used = scenario.experiments.iter().any(|e| {
            e.pairs
                .iter()
                .any(|p| p.writer == s.implementation || p.reader == s.implementation)
        });
        if !used {
            continue;
        }
        match ensure_worker(s, workers) {
            Ok(bin) => {
                found.insert(s.implementation, bin);
            }
            Err(e) => {
                scenario.drop_implementation(s.implementation);
                notes.push(format!(
                    "{} skipped: `{}` could not be built: {e}; every {} pair is left out of \
                     this run.",
                    s.implementation.display(),
                    s.binary,
                    s.implementation.display()
                ));
            }
        }
    }
    found
}

/// What a reader of the report needs to know about the Rust peers `used`.
pub fn standing_notes(used: impl Fn(Implementation) -> bool) -> Vec<String> {
    let mut notes = Vec::new();
    if used(Implementation::RustDds) {
        notes.push(
            "RustDDS 0.15 runs as `rustdds-perf` (workers/rustdds/): ddsperf's topics, type, \
             reliability and history, UDPv4, its other settings at their defaults. It has no \
             PARTITION or USER_DATA, so it answers pings with one pong writer in the default \
             partition; it takes RESOURCE_LIMITS' -1 literally (nothing is delivered), so its \
             KEEP_ALL endpoints have no limits where ddsperf sets max_samples 10000; and its \
             KEEP_ALL writer does not block when the reader falls behind: the history moves \
             on and the subscriber counts the samples it never got as lost. Unpaced, a RustDDS \
             flow delivered about 8000 samples in its first second and then almost none \
             (seen at 1 and 4 KiB, alone and with Tessera on either side): a RustDDS \
             throughput point may fail with no samples in its measured window."
                .to_string(),
        );
    }
    if used(Implementation::DustDds) {
        notes.push(
            "dust_dds 0.16 runs as `dust_dds-perf` (workers/dust_dds/): ddsperf's whole \
             protocol (USER_DATA, per-peer pong writers in the peer's GUID partition), UDPv4, \
             its readers woken by a WaitSet. Its KeyedSeq declares `sequence<octet>` by hand: \
             dust_dds derives `Vec<u8>` as `sequence<uint8, 4294967295>` and matches remote \
             endpoints on the XTypes type hash, so with the derived type it matched no ddsperf \
             peer. Its KEEP_ALL endpoints have no resource limits: \
             with ddsperf's max_samples 10000, a dust_dds reader stopped after 10000 samples."
                .to_string(),
        );
    }
    if used(Implementation::Zenoh) {
        notes.push(
            "Zenoh 1.10 runs as `zenoh-perf` (workers/zenoh/) in peer mode with its default \
             configuration (multicast scouting, TCP/UDP links as it picks them). Not DDS: the \
             topics are key expressions, the KeyedSeq sample is a byte payload of the same \
             size (a 24-byte header instead of ddsperf's 12 plus the same baggage), \
             RELIABLE + KEEP_ALL is congestion control Block, best effort is Drop, and there \
             is no history depth. Samples are sent at once (`express`)."
                .to_string(),
        );
    }
    if used(Implementation::RustDds) || used(Implementation::DustDds) || used(Implementation::Zenoh)
    {
        notes.push(
            "The Rust peers are built on demand (`cargo build --release` in workers/*/, \
             cached by cargo) and read with a thread per reader, whatever `read_mode` says."
                .to_string(),
        );
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Pair;

    fn pair(s: &str) -> Pair {
        Pair::from_label(s).unwrap()
    }

    #[test]
    fn mixed_pairs_say_why_they_cannot_run() {
        assert_eq!(mixed_pair_gap(pair("rustdds"), "latency"), None);
        assert_eq!(mixed_pair_gap(pair("tessera>cyclone"), "latency"), None);
        assert_eq!(mixed_pair_gap(pair("tessera>rustdds"), "throughput"), None);
        assert_eq!(mixed_pair_gap(pair("rustdds>tessera"), "throughput"), None);
        assert!(mixed_pair_gap(pair("tessera>rustdds"), "latency")
            .unwrap()
            .contains("PARTITION"));
        assert_eq!(mixed_pair_gap(pair("dust_dds>tessera"), "throughput"), None);
        assert_eq!(mixed_pair_gap(pair("tessera>dust_dds"), "throughput"), None);
        for p in ["tessera>dust_dds", "dust_dds>tessera"] {
            assert!(mixed_pair_gap(pair(p), "latency")
                .unwrap()
                .contains("odd source timestamp"));
        }
        assert!(mixed_pair_gap(pair("tessera>zenoh"), "throughput")
            .unwrap()
            .contains("not DDS"));
        assert!(mixed_pair_gap(pair("rustdds>dust_dds"), "throughput").is_some());
    }

    #[test]
    fn a_worker_without_source_is_skipped_with_a_reason() {
        let empty = std::env::temp_dir().join(format!("tessera-rustpeers-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        for s in &SPECS {
            if std::env::var_os(s.override_env).is_some() {
                continue;
            }
            match ensure_worker(s, &empty) {
                Err(BuildError::NoSource(d)) => assert!(d.ends_with(s.dir), "{d}"),
                other => panic!("{other:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&empty);
    }

    #[test]
    fn pairs_of_a_worker_that_cannot_be_built_are_skipped_with_a_note() {
        let mut s = crate::scenario::Scenario::load("peers").unwrap();
        let empty =
            std::env::temp_dir().join(format!("tessera-rustpeers-p-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let mut notes = Vec::new();
        let found = prepare_in(&mut s, &mut notes, &empty);
        let _ = std::fs::remove_dir_all(&empty);
        // Unless an override names a binary, nothing was built and every pair is gone.
        for spec in &SPECS {
            let i = spec.implementation;
            let kept = s
                .experiments
                .iter()
                .any(|e| e.pairs.iter().any(|p| p.writer == i || p.reader == i));
            assert_eq!(kept, found.contains_key(&i), "{i:?}");
            if !kept {
                assert!(
                    notes
                        .iter()
                        .any(|n| n.starts_with(&format!("{} skipped", i.display()))
                            && n.contains("is not in")),
                    "{notes:?}"
                );
            }
        }
        // The other implementations stay.
        assert!(s.experiments[0]
            .pairs
            .iter()
            .any(|p| p.label() == "tessera>fastdds"));
    }

    #[test]
    fn a_failed_build_reports_cargos_error_lines() {
        let err = "   Compiling x v0.1.0\nerror: failed to download `zenoh`\n\nCaused by:\n  no network\n";
        assert_eq!(
            error_tail(err, Some(101)),
            "error: failed to download `zenoh` | Caused by: | no network"
        );
        assert_eq!(error_tail("", Some(101)), "exit status Some(101)");
    }

    #[test]
    fn every_rust_peer_has_a_worker_and_the_source_tree_has_them() {
        for i in Implementation::ALL {
            assert_eq!(i.is_rust_peer(), spec(i).is_some(), "{i:?}");
        }
        for s in &SPECS {
            assert!(
                workers_dir().join(s.dir).join("Cargo.lock").is_file(),
                "{}",
                s.dir
            );
        }
    }

    /// Recorded output of each worker (`testdata/peers/`, from `tessera bench` runs in a
    /// network namespace) reads as `tessera perf --json`'s: latency lines, the summary's
    /// histogram (what the bench's latency figures come from) and the subscriber lines.
    #[test]
    fn recorded_worker_output_parses() {
        use crate::parse::parse_tessera_json;
        let pings = [
            (
                include_str!("../testdata/peers/rustdds-ping.jsonl"),
                "rustdds:01125f3e_056c933f",
                7352,
                vec![(31_800, 1), (32_400, 1), (32_500, 1), (32_800, 1)],
            ),
            (
                include_str!("../testdata/peers/dust_dds-ping.jsonl"),
                "dust_dds:00000000_8c0b0000",
                1830,
                vec![(80_500, 1), (81_200, 1), (81_300, 2), (84_300, 1)],
            ),
            (
                include_str!("../testdata/peers/zenoh-ping.jsonl"),
                "zenoh",
                10473,
                vec![(30_800, 1), (31_400, 2), (32_100, 2), (32_300, 1)],
            ),
        ];
        for (text, peer, first_cnt, hist) in pings {
            let o = parse_tessera_json(text);
            assert_eq!(o.latency.len(), 2, "{peer}");
            assert_eq!(o.latency[0].peer, peer);
            assert_eq!((o.latency[0].t, o.latency[0].size), (1.0, 16));
            assert_eq!(o.latency[0].summary.count, first_cnt);
            assert_eq!(o.hist, hist, "{peer}");
            let l = crate::stats::latency_from_pairs(&o.hist).unwrap();
            assert_eq!(l.count, hist.iter().map(|(_, n)| n).sum::<u64>());
            assert!(o.errors.is_empty() && o.subs.is_empty(), "{peer}");
        }
        let subs = [
            (
                include_str!("../testdata/peers/rustdds-sub.jsonl"),
                8276,
                19189,
            ),
            (include_str!("../testdata/peers/dust_dds-sub.jsonl"), 727, 0),
            (include_str!("../testdata/peers/zenoh-sub.jsonl"), 75937, 0),
        ];
        for (text, total, lost) in subs {
            let o = parse_tessera_json(text);
            assert_eq!(o.subs.len(), 2);
            let last = &o.subs[1];
            assert_eq!((last.t, last.size), (2.0, 4096));
            assert_eq!((last.total, last.lost), (total, lost));
            assert_eq!(last.delta, total - o.subs[0].total);
            assert!(o.latency.is_empty() && o.hist.is_empty() && o.errors.is_empty());
        }
    }
}
