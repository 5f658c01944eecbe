//! `tessera perf --loan`: a 64 KiB loaned ping-pong between two processes makes round trips
//! and reports them in the usual latency lines; on shared memory the samples come by
//! reference, over UDP the same run works on copies and says so. Opens sockets, so the real
//! test runs in its own network namespace (`testns`).

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tessera_cli::perf::loan::COPIED_WARNING;

const DOMAIN: &str = "83";

fn perf(transports: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.arg("perf")
        .args(["-i", DOMAIN, "--loan", "64k"])
        .args(args)
        .env("TESSERA_TRANSPORTS", transports)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Stops `child` with SIGTERM (a clean exit removes its pool) and waits for it.
fn stop(mut child: Child) {
    // SAFETY: kill has no memory preconditions; the pid is our own child's, not yet reaped.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let _ = child.wait();
}

/// One ping-pong run: the pinger's round-trip counts of 64 KiB samples (one per latency
/// line) and its stderr.
fn ping_pong(transports: &str) -> (Vec<u64>, String) {
    let pong = perf(transports, &["-D", "20", "pong"]).spawn().unwrap();
    let ping = perf(
        transports,
        &[
            "--json",
            "-D",
            "3",
            "-Qminmatch:1",
            "-Qinitwait:10",
            "ping",
            "size",
            "65536",
        ],
    )
    .output()
    .unwrap();
    stop(pong);
    let stdout = String::from_utf8_lossy(&ping.stdout);
    let stderr = String::from_utf8_lossy(&ping.stderr).into_owned();
    assert_eq!(ping.status.code(), Some(0), "{stdout}\n{stderr}");
    let counts = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "latency")
        .map(|v| {
            assert_eq!(v["size"], 65536, "{v}");
            v["cnt"].as_u64().unwrap()
        })
        .collect();
    (counts, stderr)
}

fn pools_left() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(&format!("tessera-pool-{DOMAIN}-")))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
#[ignore = "runs inside a network namespace (see loaned_ping_pong_of_64_kib)"]
fn loaned_ping_pong_of_64_kib_inner() {
    tessera_cli::testns::require_inside("loaned_ping_pong_of_64_kib");
    let (counts, stderr) = ping_pong("shm,udp4");
    eprintln!("shared memory: round trips per second {counts:?}");
    assert!(
        !counts.is_empty() && counts.iter().all(|&c| c > 0),
        "{counts:?}"
    );
    assert!(!stderr.contains(COPIED_WARNING), "{stderr}");
    // Both processes exited cleanly: their pools are gone.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(pools_left(), Vec::<String>::new());

    // Over UDP the loans are serialized at the writer: still round trips, and the warning.
    let (counts, stderr) = ping_pong("udp4");
    eprintln!("UDP: round trips per second {counts:?}");
    assert!(
        !counts.is_empty() && counts.iter().all(|&c| c > 0),
        "{counts:?}"
    );
    assert!(stderr.contains(COPIED_WARNING), "{stderr}");
}

#[test]
fn loaned_ping_pong_of_64_kib() {
    tessera_cli::testns::run_inner("loaned_ping_pong_of_64_kib_inner");
}
