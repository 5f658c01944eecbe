//! Library half of the `tessera` command-line tool, so that its parts can be unit tested and
//! reused by the benchmark environment (crate `tessera-bench`).
//!
//! - [`perf`]: `tessera perf`, a twin of Cyclone DDS's `ddsperf` (same command-line grammar, same
//!   per-second report lines, same exit codes), plus a `--json` output mode.
//! - [`dserver`]: `tessera discovery-server`, the centralized architecture's server.
//! - [`echo`]: `tessera echo` and `tessera pub`, samples of a topic whose type is learnt from
//!   a remote endpoint (dynamic types).
//!
//!   These inspection commands (`echo`, `pub`, `ls`, `typeof`, `spy`) run from a sibling
//!   binary, `tessera-tools` ([`dispatch_tools`]): in the measured `tessera` binary their code
//!   made a 16 B ping 0.25 MiB more resident.
//! - [`ls`]: `tessera ls`, what is on a domain (built-in topics), mismatches flagged.
//! - [`type_of`]: `tessera typeof TOPIC`, a topic's type as IDL, fetched over XTypes.
//! - [`spy`]: `tessera spy`, a live table of writers (with sample rates) and readers.
//! - `tessera bench ...` runs the `tessera-bench` binary installed next to `tessera`
//!   ([`exec_bench`]): the benchmark environment (scenarios, charts, reports) lives in its own
//!   crate so that the `tessera` binary, which the benchmark measures, does not carry it.

pub mod dserver;
pub mod echo;
pub mod ls;
pub mod perf;
pub mod shape;
pub mod spy;
mod stop;
#[doc(hidden)]
pub mod testns;
pub mod type_of;

use std::path::{Path, PathBuf};

/// Name of the benchmark environment's binary, expected next to `tessera`.
pub const BENCH_BINARY: &str = "tessera-bench";

/// Name of the IDL compiler's binary (crate `tessera-idl`), expected next to `tessera`: kept
/// out of the `tessera` binary, whose resident size the benchmark measures.
pub const IDL_BINARY: &str = "tessera-idl";

/// Name of the durability service's binary (crate `tessera-durability`, with redb), expected
/// next to `tessera`: `tessera durability` runs it, so the measured binary does not carry it.
pub const DURABILITY_BINARY: &str = "tessera-durability";
/// Name of the node service's binary (crate `tessera-node`), expected next to `tessera`.
pub const NODE_BINARY: &str = "tessera-node";
/// Name of the inspection tools' binary (this crate's `tessera-tools`), expected next to
/// `tessera`, which runs it for [`TOOL_COMMANDS`].
pub const TOOLS_BINARY: &str = "tessera-tools";

/// The subcommands `tessera` hands to [`TOOLS_BINARY`].
pub const TOOL_COMMANDS: &[&str] = &["echo", "pub", "ls", "typeof", "spy", "shape"];

/// Exit status of `tessera bench` when `tessera-bench` cannot be started (the benchmark's own
/// "could not start" status).
pub const EXIT_NO_BENCH: i32 = 2;

/// `tessera version`: the version, and how this binary was built when a build script said so
/// (`TESSERA_BUILD` at compile time; `scripts/pgo-build` sets it for its profile-guided build),
/// so that a benchmark report records what it measured.
pub fn version_line() -> String {
    match option_env!("TESSERA_BUILD") {
        Some(build) if !build.is_empty() => {
            format!("tessera {} ({build})", env!("CARGO_PKG_VERSION"))
        }
        _ => format!("tessera {}", env!("CARGO_PKG_VERSION")),
    }
}

/// Top-level usage text of the `tessera` binary.
pub fn top_usage(prog: &str) -> String {
    format!(
        "usage: {prog} COMMAND [ARGS...]\n\
         \n\
         COMMANDS:\n\
         \x20 perf [OPTIONS] MODE...   ddsperf-compatible latency/throughput tool\n\
         \x20                          (\"{prog} perf help\" for details)\n\
         \x20 bench [PRESET|FILE]      benchmark environment: experiments side by side\n\
         \x20                          with Cyclone DDS (\"{prog} bench help\"; runs the\n\
         \x20                          {BENCH_BINARY} binary installed next to {prog})\n\
         \x20 discovery-server -i ID [-l ADDR] [-p PORT]\n\
         \x20                          discovery server (Fast DDS 2.9's protocol); clients\n\
         \x20                          set ROS_DISCOVERY_SERVER=ADDR:PORT\n\
         \x20 idl FILE.idl... [-I DIR] [-o DIR]\n\
         \x20                          OMG IDL to Rust types (runs {IDL_BINARY})\n\
         \x20 durability [--store DIR] [--topics PATTERNS] [--replicated] [-d DOMAIN]\n\
         \x20                          TRANSIENT/PERSISTENT durability service (runs\n\
         \x20                          {DURABILITY_BINARY}; --replicated: services kept\n\
         \x20                          identical by consensus)\n\
         \x20 node [-d DOMAIN] [--rate TOPIC=BYTES[/BURST]]... [--durability]\n\
         \x20                          the per-host node service (federated: applications\n\
         \x20                          with TESSERA_NODE=1 attach to it; runs {NODE_BINARY};\n\
         \x20                          --durability: with a durability service inside)\n\
         \x20 echo TOPIC [--json]      print a topic's samples, its type learnt over XTypes\n\
         \x20 pub TOPIC VALUE          publish JSON values on a topic of a discovered type\n\
         \x20 ls [-d DOMAIN] [--wait SECS] [--json]\n\
         \x20                          participants, topics, writers and readers of a\n\
         \x20                          domain, with their QoS; mismatched pairs flagged\n\
         \x20 typeof TOPIC [-d DOMAIN] [--wait SECS]\n\
         \x20                          the IDL of TOPIC's type, fetched over XTypes\n\
         \x20 spy [-d DOMAIN] [-i SECS] [-t SECS] [--json]\n\
         \x20                          live table of writers (sample rates) and readers\n\
         \x20 shape (-P | -S) [options] the OMG interoperability suite's shape application\n\
         \x20                          (shape_main's options and output)\n\
         \x20 version                  the version, and how this binary was built\n"
    )
}

/// Dispatches `argv` (including the program name at index 0) to a subcommand and returns the
/// process exit code.
pub fn dispatch(argv: &[String]) -> i32 {
    let prog = argv.first().map(String::as_str).unwrap_or("tessera");
    match argv.get(1).map(String::as_str) {
        Some("perf") => perf::main(&format!("{prog} perf"), &argv[2..]),
        Some("bench") => exec_bench(prog, &argv[2..]),
        Some("version" | "--version" | "-V") => {
            println!("{}", version_line());
            0
        }
        Some("discovery-server") => dserver::main(&format!("{prog} discovery-server"), &argv[2..]),
        Some("idl") => exec_sibling(prog, "idl", IDL_BINARY, &argv[2..]),
        Some("durability") => exec_sibling(prog, "durability", DURABILITY_BINARY, &argv[2..]),
        Some("node") => exec_sibling(prog, "node", NODE_BINARY, &argv[2..]),
        Some(sub) if TOOL_COMMANDS.contains(&sub) => exec_tools(prog, sub, &argv[2..]),
        _ => {
            print!("{}", top_usage(prog));
            perf::EXIT_BAD_ARGS
        }
    }
}

/// The `tessera-tools` binary's dispatch: `argv[0]` is the name to show (`tessera`),
/// `argv[1]` one of [`TOOL_COMMANDS`].
pub fn dispatch_tools(argv: &[String]) -> i32 {
    let prog = argv.first().map(String::as_str).unwrap_or("tessera");
    let rest = argv.get(2..).unwrap_or(&[]);
    match argv.get(1).map(String::as_str) {
        Some("echo") => echo::echo_main(&format!("{prog} echo"), rest),
        Some("pub") => echo::pub_main(&format!("{prog} pub"), rest),
        Some("ls") => ls::main(&format!("{prog} ls"), rest),
        Some("typeof") => type_of::main(&format!("{prog} typeof"), rest),
        Some("spy") => spy::main(&format!("{prog} spy"), rest),
        Some("shape") => shape::main(&format!("{prog} shape"), rest),
        _ => {
            print!("{}", top_usage(prog));
            perf::EXIT_BAD_ARGS
        }
    }
}

/// `tessera SUB ARGS` for an inspection command: replaces this process with
/// `tessera-tools SUB ARGS` (shown as `{prog}`); returns only on failure.
pub fn exec_tools(prog: &str, sub: &str, args: &[String]) -> i32 {
    let mut all = Vec::with_capacity(args.len() + 1);
    all.push(sub.to_string());
    all.extend_from_slice(args);
    exec_binary(
        prog,
        sub,
        TOOLS_BINARY,
        "tessera-cli",
        prog.to_string(),
        &all,
    )
}

/// Where `tessera bench` looks for the benchmark binary: next to the running `tessera`.
pub fn bench_binary() -> std::io::Result<PathBuf> {
    Ok(std::env::current_exe()?.with_file_name(BENCH_BINARY))
}

/// `tessera bench ARGS`: replaces this process with `tessera-bench ARGS` (same pid, so whoever
/// waits for `tessera` waits for the benchmark), named `"{prog} bench"` in its usage texts.
/// Returns only on failure, with [`EXIT_NO_BENCH`] after saying why.
pub fn exec_bench(prog: &str, args: &[String]) -> i32 {
    use std::os::unix::process::CommandExt;
    let path = match bench_binary() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{prog} bench: cannot locate the {prog} binary: {e}");
            return EXIT_NO_BENCH;
        }
    };
    let err = std::process::Command::new(&path)
        .arg0(format!("{prog} bench"))
        .args(args)
        .exec();
    eprintln!("{}", bench_start_error(prog, &path, &err));
    EXIT_NO_BENCH
}

/// `tessera SUB ARGS` for a subcommand that is a sibling binary (`tessera idl` runs
/// `tessera-idl`): replaces this process; returns only on failure.
pub fn exec_sibling(prog: &str, sub: &str, binary: &str, args: &[String]) -> i32 {
    exec_binary(prog, sub, binary, binary, format!("{prog} {sub}"), args)
}

/// Replaces this process with `binary` (of cargo package `package`) next to the running one,
/// named `arg0`; returns only on failure, after saying why.
fn exec_binary(
    prog: &str,
    sub: &str,
    binary: &str,
    package: &str,
    arg0: String,
    args: &[String],
) -> i32 {
    use std::os::unix::process::CommandExt;
    let path = match std::env::current_exe() {
        Ok(p) => p.with_file_name(binary),
        Err(e) => {
            eprintln!("{prog} {sub}: cannot locate the {prog} binary: {e}");
            return EXIT_NO_BENCH;
        }
    };
    let err = std::process::Command::new(&path)
        .arg0(arg0)
        .args(args)
        .exec();
    if err.kind() == std::io::ErrorKind::NotFound {
        eprintln!(
            "{prog} {sub}: the separate binary {binary} was not found at {}; build it with \
             `cargo build --release -p {package}`",
            path.display()
        );
    } else {
        eprintln!("{prog} {sub}: cannot start {}: {err}", path.display());
    }
    EXIT_NO_BENCH
}

/// The message of a failed [`exec_bench`].
pub fn bench_start_error(prog: &str, path: &Path, err: &std::io::Error) -> String {
    if err.kind() == std::io::ErrorKind::NotFound {
        format!(
            "{prog} bench: the benchmark environment is the separate binary {BENCH_BINARY}, \
             not found at {}; build both with \
             `cargo build --release -p tessera-cli -p tessera-bench`",
            path.display()
        )
    } else {
        format!("{prog} bench: cannot start {}: {err}", path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_names_the_package_version_and_succeeds() {
        let line = version_line();
        assert!(line.starts_with(&format!("tessera {}", env!("CARGO_PKG_VERSION"))));
        for arg in ["version", "--version", "-V"] {
            assert_eq!(dispatch(&["tessera".to_string(), arg.to_string()]), 0);
        }
    }

    #[test]
    fn bench_is_looked_up_next_to_this_binary() {
        let exe = std::env::current_exe().unwrap();
        let b = bench_binary().unwrap();
        assert_eq!(b.parent(), exe.parent());
        assert_eq!(b.file_name().unwrap(), BENCH_BINARY);
    }

    #[test]
    fn missing_bench_binary_says_how_to_build_it() {
        let p = Path::new("/nowhere/tessera-bench");
        let m = bench_start_error("tessera", p, &std::io::ErrorKind::NotFound.into());
        assert!(m.contains("/nowhere/tessera-bench"), "{m}");
        assert!(m.contains("cargo build --release -p tessera-cli -p tessera-bench"));
        let m = bench_start_error("tessera", p, &std::io::ErrorKind::PermissionDenied.into());
        assert!(m.contains("cannot start /nowhere/tessera-bench"), "{m}");
    }
}
