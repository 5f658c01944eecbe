//! The environment captured with every result: machine, operating system and software
//! versions ([`capture`]), and where `ddsperf` is ([`find_ddsperf`]).
//!
//! Nothing here panics: a missing file or a failing command gives `"unknown"` (or `None` for the
//! optional fields). The parsers are separate functions over text so they are tested without
//! the machine.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::results::Environment;

/// What a field says when its source could not be read.
pub const UNKNOWN: &str = "unknown";

/// The wake-up strategy of every worker, as the report states it.
pub const WAKEUP: &str = "blocking receive, no busy-polling (both implementations' defaults)";

/// Environment variable naming the `ddsperf` to use: a path, a program name looked up in
/// `PATH`, or the empty string meaning "Cyclone DDS is not available".
pub const DDSPERF_ENV: &str = "TESSERA_BENCH_DDSPERF";

/// Captures the machine and software a run measures. `ddsperf` is the Cyclone DDS tool the run
/// uses, if any (the version of that very binary is recorded: [`ddsperf_version`]); `tessera`
/// the measured `tessera` binary, asked what it is (`tessera version`).
pub fn capture(ddsperf: Option<&Path>, tessera: Option<&Path>) -> Environment {
    let cyclone = ddsperf.map(ddsperf_version);
    Environment {
        hostname: read_trimmed("/proc/sys/kernel/hostname").unwrap_or_else(unknown),
        cpu_model: std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|t| cpu_model(&t))
            .unwrap_or_else(unknown),
        cores: online_cores(),
        memory_mib: std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| mem_total_mib(&t))
            .unwrap_or(0),
        kernel: read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_else(unknown),
        os: std::fs::read_to_string("/etc/os-release")
            .ok()
            .and_then(|t| os_pretty_name(&t))
            .unwrap_or_else(unknown),
        git_revision: git_revision(Path::new(env!("CARGO_MANIFEST_DIR"))),
        tessera_version: env!("CARGO_PKG_VERSION").to_string(),
        cyclone_version: cyclone.as_ref().map(|c| c.version.clone()),
        ddsperf: cyclone.map(|c| format!("{} ({})", c.binary.display(), c.source)),
        rustc: run("rustc", &["--version"]),
        tessera_build: tessera.and_then(version_line),
        atomic_build: None,
        wakeup: WAKEUP.to_string(),
    }
}

/// The binary that runs the ATOMIC pair's `perf`: a `tessera-atomic` beside the measured
/// `tessera` (`scripts/pgo-build --atomic` leaves a profile-guided one in `target/dist`), so
/// that ATOMIC and EVENTUAL are measured with builds made alike; else `tessera-bench` itself
/// (same code, the `atomic` feature on, not profile-guided).
pub fn atomic_exe(tessera: &Path, bench: &Path) -> PathBuf {
    let sibling = tessera.with_file_name("tessera-atomic");
    if is_executable(&sibling) {
        sibling
    } else {
        bench.to_path_buf()
    }
}

/// What the report says of the ATOMIC pair's binary: its path and, for a `tessera-atomic`,
/// its `version` line.
pub fn atomic_build(exe: &Path) -> String {
    match version_line(exe) {
        Some(v) => format!("{} ({v})", exe.display()),
        None => format!("{} perf", exe.display()),
    }
}

/// What a `tessera` binary says of itself (`tessera version`); `None` when it fails or answers
/// something else (a `tessera-bench` has no such command).
fn version_line(exe: &Path) -> Option<String> {
    run(exe.as_os_str().to_str()?, &["version"]).filter(|v| v.starts_with("tessera "))
}

fn unknown() -> String {
    UNKNOWN.to_string()
}

/// A file's content, trimmed; `None` when unreadable or empty.
fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Runs a command (stdin closed, stderr discarded) and returns its trimmed stdout when it
/// succeeds with a non-empty output.
fn run(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// The first `model name` of a /proc/cpuinfo text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name" && !v.trim().is_empty()).then(|| v.trim().to_string())
    })
}

/// `MemTotal` of a /proc/meminfo text, in MiB.
pub fn mem_total_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    let scale = match words.next().unwrap_or("kB") {
        "kB" => 1024,
        "B" => 1,
        _ => return None,
    };
    Some(n.saturating_mul(scale) / (1024 * 1024))
}

/// `PRETTY_NAME` of an /etc/os-release text, unquoted.
pub fn os_pretty_name(os_release: &str) -> Option<String> {
    let v = os_release
        .lines()
        .find_map(|l| l.trim().strip_prefix("PRETTY_NAME="))?;
    let v = v.trim().trim_matches(|c| c == '"' || c == '\'');
    (!v.is_empty()).then(|| v.to_string())
}

/// Number of CPUs in a kernel CPU list such as `0-3,6,8-9`; `None` when malformed.
pub fn count_cpu_list(list: &str) -> Option<u32> {
    let mut n: u32 = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let range = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.parse().ok()?, b.parse().ok()?);
                b.checked_sub(a)?.checked_add(1)?
            }
            None => part.parse::<u32>().map(|_| 1).ok()?,
        };
        n = n.checked_add(range)?;
    }
    (n > 0).then_some(n)
}

/// Online CPUs (/sys/devices/system/cpu/online), else the parallelism available to this
/// process, else 0.
fn online_cores() -> u32 {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|t| count_cpu_list(&t))
        .or_else(|| {
            std::thread::available_parallelism()
                .ok()
                .and_then(|n| u32::try_from(n.get()).ok())
        })
        .unwrap_or(0)
}

/// `git rev-parse --short HEAD` of the tree holding `dir`, plus `-dirty` when
/// `git status --porcelain` lists anything; `None` when git fails (no git, not a tree).
pub fn git_revision(dir: &Path) -> Option<String> {
    let dir = dir.to_str()?;
    let rev = run("git", &["-C", dir, "rev-parse", "--short", "HEAD"])?;
    let status = Command::new("git")
        .args(["-C", dir, "status", "--porcelain"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !status.status.success() {
        return Some(rev);
    }
    let dirty = !String::from_utf8_lossy(&status.stdout).trim().is_empty();
    Some(if dirty { format!("{rev}-dirty") } else { rev })
}

/// The Cyclone DDS version of one `ddsperf` binary, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CycloneVersion {
    /// The binary, symbolic links resolved.
    pub binary: PathBuf,
    /// A version (`0.10.2-2`), or `unknown (BINARY)`.
    pub version: String,
    /// Where the version came from.
    pub source: String,
}

/// The Cyclone DDS version of the `ddsperf` at `path` (the one the run starts), never that of
/// another file:
/// 1. the version of the Debian package that owns the binary (`dpkg-query -S`), else
/// 2. the `libddsc` it links (`ldd`): the version in its resolved file name
///    (`libddsc.so.0.10.2`, as Cyclone's own build installs it), else its Debian package's,
/// 3. else `unknown (PATH)`.
///
/// `ddsperf` itself is not run: 0.10.2 has no version option, and running it here would start
/// a participant outside the benchmark's namespaces.
pub fn ddsperf_version(path: &Path) -> CycloneVersion {
    let binary = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let found = |version: String, source: String| CycloneVersion {
        binary: binary.clone(),
        version,
        source,
    };
    if let Some((pkg, v)) = debian_owner(&binary) {
        return found(v, format!("Debian package {pkg}"));
    }
    let lib = binary
        .to_str()
        .and_then(|b| run("ldd", &[b]))
        .and_then(|out| libddsc_of_ldd(&out));
    if let Some(lib) = lib {
        let lib = std::fs::canonicalize(&lib).unwrap_or(lib);
        let name = lib.file_name().and_then(OsStr::to_str).unwrap_or("");
        if let Some(v) = version_of_soname(name) {
            return found(v, format!("links {}", lib.display()));
        }
        if let Some((pkg, v)) = debian_owner(&lib) {
            return found(
                v,
                format!("links {} of Debian package {pkg}", lib.display()),
            );
        }
    }
    found(
        format!("{UNKNOWN} ({})", binary.display()),
        "no package owns it and no versioned libddsc found".to_string(),
    )
}

/// The Debian package owning `file` and that package's version.
fn debian_owner(file: &Path) -> Option<(String, String)> {
    let pkg = package_of_dpkg_search(&run("dpkg-query", &["-S", file.to_str()?])?)?;
    let version = run("dpkg-query", &["-W", "-f", "${Version}", &pkg])?;
    Some((pkg, version))
}

/// The package named by `dpkg-query -S FILE` output (`cyclonedds-tools: /usr/bin/ddsperf`,
/// `libddsc0debian:amd64: /usr/lib/...`), without its architecture; `None` when several
/// packages or a diversion are listed.
pub fn package_of_dpkg_search(out: &str) -> Option<String> {
    let mut lines = out.lines().filter(|l| !l.trim().is_empty());
    let line = lines.next()?;
    if lines.next().is_some() || line.starts_with("diversion") {
        return None;
    }
    let (pkgs, _) = line.split_once(": ")?;
    if pkgs.contains(',') {
        return None;
    }
    let pkg = pkgs.split(':').next()?.trim();
    (!pkg.is_empty()).then(|| pkg.to_string())
}

/// The path of the `libddsc` an `ldd` output lists (`libddsc.so.0 => /usr/lib/... (0x...)`).
pub fn libddsc_of_ldd(out: &str) -> Option<PathBuf> {
    out.lines().find_map(|l| {
        let (name, rest) = l.trim().split_once(" => ")?;
        if !name.starts_with("libddsc.so") {
            return None;
        }
        let path = rest.split(" (").next()?.trim();
        path.starts_with('/').then(|| PathBuf::from(path))
    })
}

/// The version in a shared library's file name, `libddsc.so.0.10.2` → `0.10.2`: at least
/// two numeric components after `.so.` (a bare `libddsc.so.0` is only the ABI version).
pub fn version_of_soname(name: &str) -> Option<String> {
    let (_, v) = name.split_once(".so.")?;
    let parts: Vec<&str> = v.split('.').collect();
    let numeric = parts
        .iter()
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    (parts.len() >= 2 && numeric).then(|| v.to_string())
}

/// Where `ddsperf` is: [`DDSPERF_ENV`] when set (empty = not available), else the first
/// executable `ddsperf` in `PATH`.
pub fn find_ddsperf() -> Option<PathBuf> {
    find_ddsperf_in(
        std::env::var_os(DDSPERF_ENV).as_deref(),
        std::env::var_os("PATH").as_deref(),
    )
}

/// [`find_ddsperf`] with the override and `PATH` given: an override containing `/` is a path
/// (used when it is an executable file), another non-empty override is a program name looked
/// up in `path`, an empty one means "not available".
pub fn find_ddsperf_in(override_: Option<&OsStr>, path: Option<&OsStr>) -> Option<PathBuf> {
    match override_ {
        Some(o) if o.is_empty() => None,
        Some(o) if o.as_encoded_bytes().contains(&b'/') => {
            let p = PathBuf::from(o);
            is_executable(&p).then_some(p)
        }
        Some(o) => search_path(o, path?),
        None => search_path(OsStr::new("ddsperf"), path?),
    }
}

/// The first executable `name` in a `PATH`-style list.
fn search_path(name: &OsStr, path: &OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

/// True for a regular file with an execute bit.
pub(crate) fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_cpuinfo() {
        let t = "processor\t: 0\nvendor_id\t: X\nmodel name\t: AMD EPYC 7B13\nprocessor\t: 1\n\
                 model name\t: other\n";
        assert_eq!(cpu_model(t).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("processor : 0\n"), None);
        assert_eq!(cpu_model("model name\t:   \n"), None);
    }

    #[test]
    fn parses_meminfo() {
        let t = "MemTotal:        8144236 kB\nMemFree:  1 kB\n";
        assert_eq!(mem_total_mib(t), Some(7953));
        assert_eq!(mem_total_mib("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total_mib("MemTotal: lots kB\n"), None);
        assert_eq!(mem_total_mib("MemTotal: 1 GB\n"), None);
    }

    #[test]
    fn parses_os_release() {
        let t = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            os_pretty_name(t).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            os_pretty_name("PRETTY_NAME=Plain\n").as_deref(),
            Some("Plain")
        );
        assert_eq!(os_pretty_name("NAME=x\n"), None);
        assert_eq!(os_pretty_name("PRETTY_NAME=\"\"\n"), None);
    }

    #[test]
    fn counts_cpu_lists() {
        assert_eq!(count_cpu_list("0-1\n"), Some(2));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-3,6,8-9"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("a-b"), None);
    }

    #[test]
    fn capture_fills_every_field() {
        let e = capture(None, None);
        assert!(!e.hostname.is_empty());
        assert!(!e.cpu_model.is_empty());
        assert!(!e.kernel.is_empty());
        assert!(!e.os.is_empty());
        assert!(e.cores >= 1);
        assert_eq!(e.tessera_version, env!("CARGO_PKG_VERSION"));
        assert_eq!(e.cyclone_version, None);
        assert_eq!(e.wakeup, WAKEUP);
        // Built by cargo, so rustc is on the PATH.
        assert!(e.rustc.as_deref().unwrap_or("").starts_with("rustc "));
        assert_eq!(e.ddsperf, None);
        // With a ddsperf, a version and where it came from are recorded.
        if let Some(d) = find_ddsperf() {
            let e = capture(Some(&d), None);
            println!("{e:#?}");
            assert!(e.cyclone_version.is_some());
            assert!(e.ddsperf.is_some());
        }
    }

    /// A scratch directory holding `files` (name, content), all executable.
    fn scratch(tag: &str, files: &[(&str, &[u8])]) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tessera-env-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, content) in files {
            let p = dir.join(name);
            std::fs::write(&p, content).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    /// The measured `tessera` says what it is (a profile-guided build says so); a binary that
    /// answers something else, or fails, records nothing rather than a wrong line.
    #[test]
    fn the_measured_tessera_binary_is_asked_what_it_is() {
        let dir = scratch(
            "tessera-build",
            &[
                (
                    "tessera",
                    b"#!/bin/sh\n[ \"$1\" = version ] && echo 'tessera 9.9.9 (profile-guided)'\n",
                ),
                ("other", b"#!/bin/sh\necho 'usage: other'\n"),
                ("failing", b"#!/bin/sh\nexit 3\n"),
            ],
        );
        let e = capture(None, Some(&dir.join("tessera")));
        assert_eq!(
            e.tessera_build.as_deref(),
            Some("tessera 9.9.9 (profile-guided)")
        );
        assert_eq!(capture(None, Some(&dir.join("other"))).tessera_build, None);
        assert_eq!(
            capture(None, Some(&dir.join("failing"))).tessera_build,
            None
        );
        assert_eq!(
            capture(None, Some(&dir.join("missing"))).tessera_build,
            None
        );
    }

    /// The ATOMIC pair runs a `tessera-atomic` beside the measured `tessera` when there is
    /// one, and says which binary it was; without one, `tessera-bench perf`.
    #[test]
    fn the_atomic_pair_prefers_a_tessera_atomic_beside_the_measured_tessera() {
        let dir = scratch(
            "atomic-exe",
            &[
                ("tessera", b"#!/bin/sh\necho 'tessera 9.9.9'\n"),
                (
                    "tessera-atomic",
                    b"#!/bin/sh\n[ \"$1\" = version ] && echo 'tessera 9.9.9 (profile-guided, ATOMIC)'\n",
                ),
            ],
        );
        let bench = dir.join("bench").join("tessera-bench");
        let exe = atomic_exe(&dir.join("tessera"), &bench);
        assert_eq!(exe, dir.join("tessera-atomic"));
        assert_eq!(
            atomic_build(&exe),
            format!("{} (tessera 9.9.9 (profile-guided, ATOMIC))", exe.display())
        );
        let other = dir.join("elsewhere").join("tessera");
        assert_eq!(atomic_exe(&other, &bench), bench);
        assert_eq!(atomic_build(&bench), format!("{} perf", bench.display()));
    }

    /// A `ddsperf` that no package owns and that links no libddsc (here a script, as a source
    /// build would be to dpkg) has an unknown version: never the version of Debian's package,
    /// which describes another file.
    #[test]
    fn unowned_ddsperf_is_unknown_not_the_package_version() {
        let dir = scratch("unowned", &[("ddsperf", b"#!/bin/sh\nexit 0\n")]);
        let exe = std::fs::canonicalize(dir.join("ddsperf")).unwrap();
        let v = ddsperf_version(&exe);
        assert_eq!(v.version, format!("unknown ({})", exe.display()));
        let e = capture(Some(&exe), None);
        assert_eq!(e.cyclone_version, Some(v.version.clone()));
        let debian = run(
            "dpkg-query",
            &["-W", "-f", "${Version}", "cyclonedds-tools"],
        );
        assert!(debian.is_none() || e.cyclone_version != debian, "{e:?}");
        assert!(e.ddsperf.unwrap().starts_with(&exe.display().to_string()));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Debian's ddsperf is described by its package; a copy of it that no package owns (like a
    /// ddsperf built from source against that library) by the libddsc it links.
    #[test]
    fn ddsperf_version_comes_from_its_package_or_its_library() {
        let Some(system) = find_ddsperf_in(None, Some(OsStr::new("/usr/bin:/bin"))) else {
            // Nothing to look at without Debian's ddsperf (scripts/install-deps installs it).
            println!("no ddsperf in /usr/bin: only the parsers are checked");
            return;
        };
        let owned = ddsperf_version(&system);
        println!("{owned:?}");
        if let Some((pkg, version)) = debian_owner(&owned.binary) {
            assert_eq!(owned.version, version);
            assert_eq!(owned.source, format!("Debian package {pkg}"));
        }
        let dir = scratch("copy", &[("ddsperf", &std::fs::read(&system).unwrap())]);
        let copy = ddsperf_version(&dir.join("ddsperf"));
        println!("{copy:?}");
        let lib = run("ldd", &[system.to_str().unwrap()])
            .and_then(|o| libddsc_of_ldd(&o))
            .expect("Debian's ddsperf links libddsc");
        let lib = std::fs::canonicalize(lib).unwrap();
        let from_name = version_of_soname(lib.file_name().unwrap().to_str().unwrap());
        match from_name {
            Some(v) => assert_eq!(copy.version, v),
            None => assert_eq!(Some(copy.version.clone()), debian_owner(&lib).map(|o| o.1)),
        }
        assert!(copy.source.contains(&lib.display().to_string()), "{copy:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parses_dpkg_ldd_and_sonames() {
        assert_eq!(
            package_of_dpkg_search("cyclonedds-tools: /usr/bin/ddsperf\n").as_deref(),
            Some("cyclonedds-tools")
        );
        assert_eq!(
            package_of_dpkg_search("libddsc0debian:amd64: /usr/lib/x/libddsc.so.0.10.2\n")
                .as_deref(),
            Some("libddsc0debian")
        );
        assert_eq!(package_of_dpkg_search(""), None);
        assert_eq!(package_of_dpkg_search("a, b: /usr/bin/x\n"), None);
        assert_eq!(
            package_of_dpkg_search("diversion by x from: /usr/bin/ddsperf\n"),
            None
        );
        let ldd = "\tlinux-vdso.so.1 (0x00007ffc)\n\
                   \tlibddsc.so.0debian => /usr/bin/../lib/x86_64-linux-gnu/libddsc.so.0debian \
                   (0x00007fd3)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fd2)\n";
        assert_eq!(
            libddsc_of_ldd(ldd),
            Some(PathBuf::from(
                "/usr/bin/../lib/x86_64-linux-gnu/libddsc.so.0debian"
            ))
        );
        assert_eq!(libddsc_of_ldd("\tlibddsc.so.0 => not found\n"), None);
        assert_eq!(libddsc_of_ldd("\tnot a dynamic executable\n"), None);
        assert_eq!(
            version_of_soname("libddsc.so.0.10.2").as_deref(),
            Some("0.10.2")
        );
        assert_eq!(
            version_of_soname("libddsc.so.0.11.0").as_deref(),
            Some("0.11.0")
        );
        assert_eq!(version_of_soname("libddsc.so.0"), None);
        assert_eq!(version_of_soname("libddsc.so.0debian"), None);
        assert_eq!(version_of_soname("libddsc.so"), None);
    }

    #[test]
    fn finds_ddsperf_by_override_and_path() {
        let dir = std::env::temp_dir().join(format!("tessera-env-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let exe = dir.join("ddsperf");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        let plain = dir.join("notexec");
        std::fs::write(&plain, "").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
        let path = std::env::join_paths(["/nonexistent-dir", dir.to_str().unwrap()]).unwrap();
        assert_eq!(find_ddsperf_in(None, Some(&path)), Some(exe.clone()));
        assert_eq!(find_ddsperf_in(Some(OsStr::new("")), Some(&path)), None);
        assert_eq!(
            find_ddsperf_in(Some(exe.as_os_str()), None),
            Some(exe.clone())
        );
        assert_eq!(find_ddsperf_in(Some(plain.as_os_str()), Some(&path)), None);
        assert_eq!(
            find_ddsperf_in(Some(OsStr::new("notexec")), Some(&path)),
            None
        );
        assert_eq!(
            find_ddsperf_in(None, Some(OsStr::new("/nonexistent-dir"))),
            None
        );
        assert_eq!(find_ddsperf_in(None, None), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
