//! Test support (not part of the command-line tool): runs a test body inside a fresh network
//! namespace. The outer test re-executes its own test binary under `unshare` for one `#[ignore]`d
//! inner test, which calls [`require_inside`] first.
//!
//! Public (and hidden from the docs) because the tests of `tessera-bench` use it too. Nothing
//! here skips: a test that cannot make its namespace fails and says why, so that it never passes
//! without running.

use std::process::{Command, ExitStatus};

/// Environment variable marking a process that runs inside a private namespace (also set by
/// `scripts/netns-run`).
pub const IN_NETNS: &str = "TESSERA_IN_NETNS";

/// Whether this process runs inside a private network namespace.
pub fn inside() -> bool {
    std::env::var(IN_NETNS).as_deref() == Ok("1")
}

/// Panics unless this process runs inside a private network namespace: an inner test run
/// directly (`cargo test -- --ignored`) must not open sockets on the machine's interfaces, and
/// must not pass without running either.
pub fn require_inside(outer: &str) {
    assert!(
        inside(),
        "this test opens sockets: run it through `{outer}` or under scripts/netns-run"
    );
}

/// Runs the ignored test `name` (its full path) of this test binary in a new network namespace
/// with loopback up and multicast routed to it, with `envs` added to its environment; returns
/// its exit status. Panics when the namespace cannot be made (no `unshare`, not allowed).
pub fn run_inner_status(name: &str, envs: &[(&str, &str)]) -> ExitStatus {
    inner_command(name, envs)
        .status()
        .unwrap_or_else(|e| panic!("{name}: cannot run unshare (util-linux): {e}"))
}

/// [`run_inner_status`] with the inner test's output captured rather than printed: for tests that
/// expect the inner test to fail, whose `FAILED` lines would otherwise read as a failure of the
/// whole run.
pub fn run_inner_output(name: &str, envs: &[(&str, &str)]) -> std::process::Output {
    inner_command(name, envs)
        .output()
        .unwrap_or_else(|e| panic!("{name}: cannot run unshare (util-linux): {e}"))
}

fn inner_command(name: &str, envs: &[(&str, &str)]) -> Command {
    let exe = std::env::current_exe().expect("the test binary's path");
    // SAFETY: geteuid has no preconditions and cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    // Without root, map the caller to root in a new user namespace (as scripts/netns-run does).
    let ns: &[&str] = if root {
        &["--net"]
    } else {
        &["--user", "--map-root-user", "--net"]
    };
    let mut cmd = Command::new("unshare");
    cmd.args(ns)
        .args([
            "--",
            "sh",
            "-c",
            "ip link set lo up && ip link set lo multicast on && \
             ip route add 224.0.0.0/4 dev lo && exec \"$0\" \"$@\"",
        ])
        .arg(exe)
        .args([
            name,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(IN_NETNS, "1")
        .envs(envs.iter().copied());
    cmd
}

/// [`run_inner_status`] without extra environment, asserting that the inner test passed.
pub fn run_inner(name: &str) {
    let s = run_inner_status(name, &[]);
    assert!(s.success(), "{name} failed in its namespace: {s}");
}
