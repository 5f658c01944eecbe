//! The Fast DDS worker, `fastdds-perf`, built on demand.
//!
//! Fast DDS has no ddsperf of its own, so the bench carries the C++ source of one
//! (`workers/fastdds/fastdds_perf.cpp`, embedded in this binary) and compiles it with g++ against
//! Debian's Fast DDS 2.9 (`libfastrtps-dev`) the first time a run needs a `fastdds` pair. The
//! binary is cached beside the `tessera-bench` binary (the target directory), or under
//! `$XDG_CACHE_HOME/tessera` (`~/.cache/tessera`) when that is not writable, named after a hash
//! of the source and the compiler command, so an edited source is rebuilt and an unchanged one
//! never is. Without g++ or the headers the Fast DDS pairs are skipped with a note, never a
//! failure of the run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The worker's source, as `workers/fastdds/build.sh` also builds it.
pub const SOURCE: &str = include_str!("../../../workers/fastdds/fastdds_perf.cpp");

/// g++ arguments after the source file name (the output comes before it).
const LINK: &[&str] = &["-lfastrtps", "-lfastcdr", "-lpthread"];
const FLAGS: &[&str] = &["-O2", "-std=c++17"];

/// A header that `libfastrtps-dev` installs; its absence means Fast DDS cannot be built.
const HEADER: &str = "/usr/include/fastdds/dds/domain/DomainParticipantFactory.hpp";

/// Overrides the build: a path to a `fastdds-perf` binary to use as is, or empty to leave the
/// Fast DDS pairs out.
pub const OVERRIDE_ENV: &str = "TESSERA_BENCH_FASTDDS_PERF";

/// Why the worker is not available.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No C++ compiler on `PATH`.
    #[error("g++ was not found (Debian package g++)")]
    NoCompiler,
    /// Fast DDS's development headers are missing.
    #[error("the Fast DDS headers were not found (Debian package libfastrtps-dev)")]
    NoHeaders,
    /// `TESSERA_BENCH_FASTDDS_PERF` is empty, or names no executable.
    #[error("{OVERRIDE_ENV} is {0:?}: not an executable file (empty: Fast DDS disabled)")]
    Override(String),
    /// The compiler ran and failed, or no cache directory was writable.
    #[error("building fastdds-perf failed: {0}")]
    Failed(String),
}

/// FNV-1a, 64 bits: a stable name for one source + command (not a security hash).
pub(crate) fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain([0u8]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// The cached binary's file name for the embedded source.
pub fn binary_name() -> String {
    let mut parts = vec![SOURCE];
    parts.extend(FLAGS);
    parts.extend(LINK);
    format!("fastdds-perf-{:016x}", fnv1a(&parts))
}

/// Directories tried for the cache, in order.
pub(crate) fn cache_dirs(bench_exe: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = bench_exe.parent() {
        dirs.push(d.to_path_buf());
        // The same target directory's other profiles: `scripts/test` builds `release` (and its
        // interop scripts cache the workers there), `scripts/bench` runs `dist`; a worker's
        // name carries its source's hash, so one cached by either serves both.
        if let Some(target) = d.parent() {
            for profile in ["release", "dist"] {
                let sibling = target.join(profile);
                if sibling.is_dir() && !dirs.contains(&sibling) {
                    dirs.push(sibling);
                }
            }
        }
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        dirs.push(PathBuf::from(x).join("tessera"));
    } else if let Some(h) = std::env::var_os("HOME").filter(|x| !x.is_empty()) {
        dirs.push(PathBuf::from(h).join(".cache").join("tessera"));
    }
    dirs
}

/// A binary that needs no build: the override's (`Err` with its value when it names no
/// executable: empty disables the worker), else `name` cached in one of `dirs`; `None`: build.
pub(crate) fn prebuilt(
    override_value: Option<std::ffi::OsString>,
    dirs: &[PathBuf],
    name: &str,
) -> Option<Result<PathBuf, String>> {
    if let Some(o) = override_value {
        let p = PathBuf::from(&o);
        return Some(if crate::env::is_executable(&p) {
            Ok(p)
        } else {
            Err(o.to_string_lossy().into_owned())
        });
    }
    dirs.iter()
        .map(|d| d.join(name))
        .find(|p| crate::env::is_executable(p))
        .map(Ok)
}

/// Whether `program` is an executable in a `PATH` directory.
pub(crate) fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| crate::env::is_executable(&d.join(program))))
        .unwrap_or(false)
}

/// The worker binary: the cached one, or a fresh build of [`SOURCE`].
pub fn ensure_worker(bench_exe: &Path) -> Result<PathBuf, BuildError> {
    let name = binary_name();
    let dirs = cache_dirs(bench_exe);
    if let Some(found) = prebuilt(std::env::var_os(OVERRIDE_ENV), &dirs, &name) {
        return found.map_err(BuildError::Override);
    }
    if !on_path("g++") {
        return Err(BuildError::NoCompiler);
    }
    if !Path::new(HEADER).exists() {
        return Err(BuildError::NoHeaders);
    }
    build_in_first(&dirs, &name, build_in).map_err(BuildError::Failed)
}

/// Builds `name` with `build` in the first of `dirs` where that works; the last error if none.
pub(crate) fn build_in_first(
    dirs: &[PathBuf],
    name: &str,
    build: fn(&Path, &str) -> Result<PathBuf, String>,
) -> Result<PathBuf, String> {
    let mut last = String::from("no writable cache directory");
    for dir in dirs {
        match build(dir, name) {
            Ok(p) => return Ok(p),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Writes the source into `dir` and compiles it to `dir/name` (through a temporary name, so a
/// half-written binary is never found by a later run).
fn build_in(dir: &Path, name: &str) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pid = std::process::id();
    let src = dir.join(format!("{name}.{pid}.cpp"));
    let tmp = dir.join(format!("{name}.{pid}.tmp"));
    let out = dir.join(name);
    std::fs::write(&src, SOURCE).map_err(|e| format!("{}: {e}", src.display()))?;
    let result = Command::new("g++")
        .args(FLAGS)
        .arg("-o")
        .arg(&tmp)
        .arg(&src)
        .args(LINK)
        .output();
    let _ = std::fs::remove_file(&src);
    let output = result.map_err(|e| format!("running g++: {e}"))?;
    if !output.status.success() {
        let _ = std::fs::remove_file(&tmp);
        let err = String::from_utf8_lossy(&output.stderr);
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(format!(
            "g++ exited with {}: {}",
            output.status,
            tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
        ));
    }
    std::fs::rename(&tmp, &out).map_err(|e| format!("{}: {e}", out.display()))?;
    remove_stale(dir, name, "fastdds-perf-");
    Ok(out)
}

/// Removes the binaries of earlier sources from `dir`: `prefix` and 16 hex digits, other than
/// `current` (each build has its own name, so they would pile up as the source changes). A
/// running one keeps its inode; nothing fails if one cannot be removed.
pub(crate) fn remove_stale(dir: &Path, current: &str, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let n = e.file_name();
        let n = n.to_string_lossy();
        let hex = n.strip_prefix(prefix).unwrap_or("");
        if n != current && hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_follows_the_source_and_the_command() {
        let a = fnv1a(&["x", "-O2"]);
        assert_ne!(a, fnv1a(&["x", "-O3"]));
        assert_ne!(a, fnv1a(&["x-", "O2"]), "parts are separated");
        assert_eq!(a, fnv1a(&["x", "-O2"]));
        let n = binary_name();
        assert!(n.starts_with("fastdds-perf-") && n.len() == "fastdds-perf-".len() + 16);
        // The embedded source is the worker itself.
        assert!(SOURCE.contains("DDSPerf%sPingKS"));
    }

    #[test]
    fn a_build_removes_the_binaries_of_earlier_sources_only() {
        let dir =
            std::env::temp_dir().join(format!("tessera-fastdds-stale-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let keep = ["fastdds-perf-00000000000000aa", "fastdds-perf-x", "other"];
        for f in keep.iter().chain(&["fastdds-perf-0123456789abcdef"]) {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        remove_stale(&dir, "fastdds-perf-00000000000000aa", "fastdds-perf-");
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, keep);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn cache_dirs_start_beside_the_bench_binary() {
        let d = cache_dirs(Path::new("/opt/t/target/release/tessera-bench"));
        assert_eq!(d[0], PathBuf::from("/opt/t/target/release"));
    }

    #[test]
    fn cache_dirs_include_the_other_profiles_of_the_same_target() {
        let t = std::env::temp_dir().join(format!("tessera-cache-dirs-{}", std::process::id()));
        for p in ["release", "dist"] {
            std::fs::create_dir_all(t.join(p)).unwrap();
        }
        let d = cache_dirs(&t.join("dist").join("tessera-bench"));
        assert_eq!(d[0], t.join("dist"));
        assert_eq!(d[1], t.join("release"));
        assert_eq!(d.iter().filter(|x| **x == t.join("dist")).count(), 1);
        let _ = std::fs::remove_dir_all(&t);
    }
}
