//! The scripted Cyclone DDS worker, `cyclone-perf` (pair name `cyclone-c`), built on demand.
//!
//! ddsperf prints latency as per-second summaries only, so the bench's Cyclone figures from it
//! have no whole-run median, p99.9 or standard deviation. `workers/cyclone/cyclone_perf.c`
//! (embedded in this binary with its IDL) is a small C peer against Debian's Cyclone DDS 0.10.2
//! (`cyclonedds-dev`, `idlc` from `cyclonedds-tools`) that speaks ddsperf's protocol with
//! fastdds-perf's command line and prints `tessera perf --json`'s lines, with a histogram of
//! every round trip; it also stops after `--count N` round trips and reports the first and the
//! last answer of each ping when several peers answer. It is built like
//! [`crate::fastdds`]'s worker: cached beside the bench binary (or under the cache directory),
//! named after a hash of its sources and command, skipped with a note when it cannot be built.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::fastdds::{build_in_first, cache_dirs, fnv1a, on_path, prebuilt, remove_stale};

/// The worker's source, as `workers/cyclone/build.sh` also builds it.
pub const SOURCE: &str = include_str!("../../../workers/cyclone/cyclone_perf.c");
/// ddsperf's KeyedSeq, compiled by `idlc` into the type descriptor the worker registers.
pub const IDL: &str = include_str!("../../../workers/cyclone/ddsperf_types.idl");

const FLAGS: &[&str] = &["-O2", "-std=gnu11"];
const LINK: &[&str] = &["-lddsc", "-lpthread"];
/// A header that `cyclonedds-dev` installs; its absence means the worker cannot be built.
const HEADER: &str = "/usr/include/dds/dds.h";
const PREFIX: &str = "cyclone-perf-";

/// Overrides the build: a path to a `cyclone-perf` binary to use as is, or empty to leave the
/// `cyclone-c` pairs out.
pub const OVERRIDE_ENV: &str = "TESSERA_BENCH_CYCLONE_PERF";

/// Why the worker is not available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No C compiler on `PATH`.
    #[error("cc was not found (Debian package gcc)")]
    NoCompiler,
    /// No IDL compiler on `PATH`.
    #[error("idlc was not found (Debian package cyclonedds-tools)")]
    NoIdlc,
    /// Cyclone's development headers are missing.
    #[error("the Cyclone DDS headers were not found (Debian package cyclonedds-dev)")]
    NoHeaders,
    /// `TESSERA_BENCH_CYCLONE_PERF` is empty, or names no executable.
    #[error("{OVERRIDE_ENV} is {0:?}: not an executable file (empty: the C worker disabled)")]
    Override(String),
    /// idlc or the compiler ran and failed, or no cache directory was writable.
    #[error("building cyclone-perf failed: {0}")]
    Failed(String),
}

/// The cached binary's file name for the embedded sources.
pub fn binary_name() -> String {
    let mut parts = vec![SOURCE, IDL];
    parts.extend(FLAGS);
    parts.extend(LINK);
    format!("{PREFIX}{:016x}", fnv1a(&parts))
}

/// The worker binary: the override, the cached one, or a fresh build.
pub fn ensure_worker(bench_exe: &Path) -> Result<PathBuf, BuildError> {
    ensure_with(bench_exe, std::env::var_os(OVERRIDE_ENV), HEADER)
}

/// [`ensure_worker`] with the override value and the header to look for given.
fn ensure_with(
    bench_exe: &Path,
    override_value: Option<std::ffi::OsString>,
    header: &str,
) -> Result<PathBuf, BuildError> {
    let name = binary_name();
    let dirs = cache_dirs(bench_exe);
    if let Some(found) = prebuilt(override_value, &dirs, &name) {
        return found.map_err(BuildError::Override);
    }
    if !on_path("cc") {
        return Err(BuildError::NoCompiler);
    }
    if !on_path("idlc") {
        return Err(BuildError::NoIdlc);
    }
    if !Path::new(header).exists() {
        return Err(BuildError::NoHeaders);
    }
    build_in_first(&dirs, &name, build_in).map_err(BuildError::Failed)
}

/// The last lines of a failed tool's stderr, on one line.
fn failure(tool: &str, out: &std::process::Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = err.lines().rev().take(3).collect();
    format!(
        "{tool} exited with {}: {}",
        out.status,
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    )
}

/// Generates the type with idlc and compiles the worker to `dir/name`, all in a scratch
/// directory beside it (a half-written binary is never found by a later run).
fn build_in(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let scratch = dir.join(format!("{name}.{}.d", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let result = build_steps(&scratch);
    let out = dir.join(name);
    let result = result
        .and_then(|bin| std::fs::rename(&bin, &out).map_err(|e| format!("{}: {e}", out.display())));
    let _ = std::fs::remove_dir_all(&scratch);
    result?;
    remove_stale(dir, name, PREFIX);
    Ok(out)
}

fn build_steps(scratch: &Path) -> Result<PathBuf, String> {
    let write = |f: &str, text: &str| {
        let p = scratch.join(f);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
    };
    write("ddsperf_types.idl", IDL)?;
    write("cyclone_perf.c", SOURCE)?;
    let idlc = Command::new("idlc")
        .args(["-o", "."])
        .arg("ddsperf_types.idl")
        .current_dir(scratch)
        .output()
        .map_err(|e| format!("running idlc: {e}"))?;
    if !idlc.status.success() {
        return Err(failure("idlc", &idlc));
    }
    let cc = Command::new("cc")
        .args(FLAGS)
        .args([
            "-I.",
            "-o",
            "cyclone-perf",
            "cyclone_perf.c",
            "ddsperf_types.c",
        ])
        .args(LINK)
        .current_dir(scratch)
        .output()
        .map_err(|e| format!("running cc: {e}"))?;
    if !cc.status.success() {
        return Err(failure("cc", &cc));
    }
    Ok(scratch.join("cyclone-perf"))
}

/// What a reader of the report needs to know when a `cyclone-c` pair ran.
pub fn standing_note() -> String {
    "Cyclone DDS 0.10.2 also runs as `cyclone-c`: `cyclone-perf` (workers/cyclone/, C against \
     Debian's libddsc, compiled on demand with idlc and cc), ddsperf's topics, type (the same \
     IDL through the same idlc), QoS and protocol, every other Cyclone setting at its default \
     (UDPv4, no shared memory), its readers served by listeners. Its latency comes from a \
     histogram of every round trip, where `cyclone` (ddsperf) gives per-second summaries."
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_follows_the_sources() {
        let n = binary_name();
        assert!(n.starts_with(PREFIX) && n.len() == PREFIX.len() + 16, "{n}");
        assert!(SOURCE.contains("DDSPerf%sPingKS") && IDL.contains("struct KeyedSeq"));
    }

    #[test]
    fn without_the_tools_or_headers_it_is_not_built_and_says_why() {
        let dir = std::env::temp_dir().join(format!("tessera-cyclonec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("tessera-bench");
        // An empty override disables the worker; one naming a binary uses it as is.
        let e = ensure_with(&exe, Some("".into()), HEADER).unwrap_err();
        assert_eq!(e, BuildError::Override(String::new()));
        assert!(e.to_string().contains("disabled"));
        let fake = dir.join("cyclone-perf");
        std::fs::write(&fake, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(
            ensure_with(&exe, Some(fake.clone().into()), HEADER),
            Ok(fake)
        );
        // No headers: skipped, whether or not cc and idlc are installed here.
        let missing = dir.join("no-such-header.h");
        match ensure_with(&exe, None, missing.to_str().unwrap()) {
            Err(BuildError::NoHeaders | BuildError::NoCompiler | BuildError::NoIdlc) => {}
            // A binary of these very sources cached by an earlier run is used as is.
            Ok(p) => assert!(p.ends_with(binary_name())),
            other => panic!("{other:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Recorded output (`testdata/peers/cyclone-c-*.jsonl`, from `tessera bench` runs in a
    /// network namespace) reads as `tessera perf --json`'s: the latency lines, the summary's
    /// whole-run histogram, the first/all answers of a 1-to-2 ping and the subscriber lines.
    #[test]
    fn recorded_worker_output_parses() {
        use crate::parse::parse_tessera_json;
        let o = parse_tessera_json(include_str!("../testdata/peers/cyclone-c-ping2.jsonl"));
        let peers: std::collections::BTreeSet<&str> =
            o.latency.iter().map(|l| l.peer.as_str()).collect();
        assert_eq!(peers.len(), 2, "{peers:?}");
        assert!(o.errors.is_empty() && o.subs.is_empty());
        let hist_n: u64 = o.hist.iter().map(|(_, n)| n).sum();
        // Recorded with `--count 400`: 400 measured pings, each answered by both pongers.
        assert_eq!(o.pings, Some(400));
        let fa = o.answers.as_ref().expect("first/all answers");
        // Every measured ping has one first and one last answer, and two answers in all.
        let first_n: u64 = fa.first.iter().map(|(_, n)| n).sum();
        let all_n: u64 = fa.all.iter().map(|(_, n)| n).sum();
        assert_eq!(first_n, all_n);
        assert!(
            first_n == 400 && hist_n >= 2 * first_n - 2,
            "{first_n} {hist_n}"
        );
        let first = crate::stats::latency_from_pairs(&fa.first).unwrap();
        let all = crate::stats::latency_from_pairs(&fa.all).unwrap();
        assert!(first.p50_us <= all.p50_us && first.p50_us > 0.0);
        let o = parse_tessera_json(include_str!("../testdata/peers/cyclone-c-sub.jsonl"));
        assert!(o.subs.len() >= 2 && o.latency.is_empty() && o.errors.is_empty());
        let last = o.subs.last().unwrap();
        assert_eq!((last.size, last.lost), (1024, 0));
        assert!(last.total > last.delta && last.delta > 0);
    }
}
