//! `tessera bench ...` runs the `tessera-bench` binary next to `tessera`: a copy of `tessera`
//! alone in a directory says how to build it; with a stand-in `tessera-bench` beside it, that
//! one runs with the arguments and its exit status comes back.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("tessera-bench-exec-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_tessera"), d.join("tessera")).unwrap();
    d
}

// One test, not two: a test thread copying an executable while another forks makes the exec
// of the copy fail with ETXTBSY (the child inherits the writable descriptor until it execs).
#[test]
fn tessera_bench_runs_the_binary_beside_tessera() {
    without_tessera_bench_it_fails_and_says_how_to_build_it();
    with_tessera_bench_beside_it_runs_that_with_the_arguments();
}

fn without_tessera_bench_it_fails_and_says_how_to_build_it() {
    let d = scratch("missing");
    let out = Command::new(d.join("tessera"))
        .args(["bench", "quick"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(tessera_cli::EXIT_NO_BENCH), "{err}");
    assert!(
        err.contains(&d.join("tessera-bench").display().to_string()),
        "{err}"
    );
    assert!(
        err.contains("cargo build --release -p tessera-cli -p tessera-bench"),
        "{err}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

fn with_tessera_bench_beside_it_runs_that_with_the_arguments() {
    let d = scratch("present");
    let stub = d.join("tessera-bench");
    std::fs::write(&stub, "#!/bin/sh\necho \"$0|$*\"\nexit 7\n").unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(d.join("tessera"))
        .args(["bench", "udp", "pong", "--port", "9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    // A shell script's $0 is the script's path; the arguments arrive unchanged.
    let line = String::from_utf8_lossy(&out.stdout);
    assert!(line.trim_end().ends_with("|udp pong --port 9"), "{line}");
    std::fs::remove_dir_all(&d).unwrap();
}
