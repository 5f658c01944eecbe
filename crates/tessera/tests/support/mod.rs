//! Helpers for the DDS-semantics tests. Every test makes its participants with
//! [`participants`]: to run these tests over another transport, change that one function.
#![allow(dead_code)]

pub mod peer;

use std::time::{Duration, Instant};
use tessera::{DomainParticipant, TopicType};

/// Whether the test runs inside a network namespace made for the test run
/// (`scripts/netns-run` sets `TESSERA_IN_NETNS=1`). Socket tests skip, saying so, elsewhere.
pub fn in_netns() -> bool {
    let ok = std::env::var("TESSERA_IN_NETNS").as_deref() == Ok("1");
    if !ok {
        eprintln!("SKIP: not in a test network namespace (run via scripts/netns-run)");
    }
    ok
}

/// `n` participants in one domain, or `None` (the test skips) outside a test namespace.
pub fn participants(n: usize) -> Option<Vec<DomainParticipant>> {
    if !in_netns() {
        return None;
    }
    Some(
        (0..n)
            .map(|_| DomainParticipant::new(0).expect("participant"))
            .collect(),
    )
}

/// Serializes the tests of one file that must not hear each other's scripted peers.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Ends the whole test process (exit code 101) unless dropped within `secs` seconds. For tests
/// of deadlocks: a deadlocked runtime thread cannot be unwound, and dropping the participant
/// that owns it would wait for it for ever.
pub struct Watchdog(std::sync::Arc<std::sync::atomic::AtomicBool>);

pub fn watchdog(secs: u64, what: &'static str) -> Watchdog {
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            if d.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("deadlock: {what} did not finish in {secs} s");
        std::process::exit(101);
    });
    Watchdog(done)
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Polls `f` every 5 ms until it is true; panics with `what` after `secs` seconds.
pub fn wait_until(secs: u64, what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A reliable KEEP_ALL reader of `Keyed` on `topic`.
pub fn reliable_reader(p: &DomainParticipant, topic: &str) -> tessera::DataReader<Keyed> {
    let t = p
        .create_topic::<Keyed>(topic, tessera::qos::TopicQos::default())
        .unwrap();
    p.create_subscriber(Default::default())
        .unwrap()
        .create_datareader(
            &t,
            tessera::qos::DataReaderQos::default()
                .with_reliability(tessera::qos::Reliability::reliable(Duration::from_secs(1)))
                .with_history(tessera::qos::History::KeepAll),
        )
        .unwrap()
}

/// A keyed sample type.
#[derive(TopicType, Debug, Clone, PartialEq)]
pub struct Keyed {
    #[key]
    pub id: u32,
    pub seq: u32,
}

/// A keyless sample type.
#[derive(TopicType, Debug, Clone, PartialEq)]
pub struct Keyless {
    pub seq: u32,
    pub text: String,
}
