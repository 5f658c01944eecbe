//! The failover promise of exclusive OWNERSHIP across processes, over real UDP: two writers of
//! strengths 10 and 20 in two child processes write the same instances; the reader here gets
//! only the stronger one's samples while it lives, and after a `kill -9` of the stronger one
//! every instance moves to the weaker one within the reader's deadline, or, for a reader
//! without one, within the stronger one's liveliness (its participant's lease).
//!
//! The children are this test binary run again with [`CHILD`] set (the ignored test
//! `failover_child_writer` is their entry point). Needs a network namespace:
//! `scripts/netns-run cargo test -p tessera --test ownership_failover -- --include-ignored`.

mod support;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use support::{require_netns, wait_until, Keyed};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Deadline, History, Ownership, OwnershipStrength, Reliability,
};
use tessera::transport::TransportKind;
use tessera::{DomainParticipant, ParticipantConfig};

/// Set in a child process: the strength of the writer it runs.
const CHILD: &str = "TESSERA_FAILOVER_CHILD_STRENGTH";
const TOPIC: &str = "FailoverTopic";
const INSTANCES: u32 = 4;
/// The reader's deadline; the writers offer a shorter one.
const DEADLINE: Duration = Duration::from_millis(500);
/// The writers' participant lease (announced in SPDP).
const LEASE_SECS: &str = "1.5";
/// Set in a child process: the domain to join (each scenario has its own, so that the two
/// run in parallel in one namespace without hearing each other).
const DOMAIN: &str = "TESSERA_FAILOVER_DOMAIN";

fn participant(domain: u32) -> DomainParticipant {
    let config = ParticipantConfig {
        transports: Some(vec![TransportKind::Udp4]),
        ..ParticipantConfig::default()
    };
    DomainParticipant::with_qos(domain, Default::default(), config).unwrap()
}

fn spawn_writer(strength: i32, domain: u32) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "failover_child_writer",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD, strength.to_string())
        .env(DOMAIN, domain.to_string())
        .env("TESSERA_LEASE_DURATION", LEASE_SECS)
        .spawn()
        .expect("spawn the child writer")
}

/// The entry point of a child process (does nothing when run without [`CHILD`]): an exclusive
/// writer of the given strength that writes every instance every 20 ms, each sample's `seq`
/// saying who wrote it (`strength * 1_000_000 + n`), for at most 60 s.
#[test]
#[ignore = "the child process of the killing_the_stronger_writer tests"]
fn failover_child_writer() {
    let Ok(strength) = std::env::var(CHILD) else {
        return;
    };
    let strength: i32 = strength.parse().unwrap();
    let domain: u32 = std::env::var(DOMAIN).unwrap().parse().unwrap();
    let p = participant(domain);
    let t = p.create_topic::<Keyed>(TOPIC, Default::default()).unwrap();
    let w = p
        .create_publisher(Default::default())
        .unwrap()
        .create_datawriter(
            &t,
            DataWriterQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_ownership(Ownership::Exclusive)
                .with_ownership_strength(OwnershipStrength(strength))
                .with_deadline(Deadline {
                    period: Duration::from_millis(200),
                }),
        )
        .unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    let mut n = 0;
    while Instant::now() < end {
        for id in 0..INSTANCES {
            let _ = w.write(&Keyed {
                id,
                seq: strength as u32 * 1_000_000 + n,
            });
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills its child on drop (a failed assertion must not leave writers running).
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn writer_of(seq: u32) -> u32 {
    seq / 1_000_000
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn killing_the_stronger_writer_fails_over_within_the_deadline() {
    kill_the_stronger_writer(7, Some(DEADLINE));
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn killing_the_stronger_writer_fails_over_within_the_lease() {
    kill_the_stronger_writer(8, None);
}

/// The scenario of the module docs in `domain`; `deadline`: the reader's, or none (failover
/// by liveliness).
fn kill_the_stronger_writer(domain: u32, deadline: Option<Duration>) {
    require_netns();
    let p = participant(domain);
    let t = p.create_topic::<Keyed>(TOPIC, Default::default()).unwrap();
    let mut qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
        .with_history(History::KeepAll)
        .with_ownership(Ownership::Exclusive);
    if let Some(period) = deadline {
        qos = qos.with_deadline(Deadline { period });
    }
    let r = p
        .create_subscriber(Default::default())
        .unwrap()
        .create_datareader(&t, qos)
        .unwrap();
    let _weak = Reaper(spawn_writer(10, domain));
    let mut strong = Reaper(spawn_writer(20, domain));
    wait_until(30, "both writers to match", || {
        r.matched_publications().len() == 2
    });
    // The stronger writer owns every instance once its samples arrive; from then on, for two
    // seconds, nothing of the weaker one is delivered.
    let mut owned = [false; INSTANCES as usize];
    wait_until(20, "the stronger writer to own every instance", || {
        for s in r.take(usize::MAX).unwrap() {
            if let Some(d) = s.data {
                owned[d.id as usize] = writer_of(d.seq) == 20;
            }
        }
        owned.iter().all(|o| *o)
    });
    let watch = Instant::now();
    let mut strong_samples = 0;
    while watch.elapsed() < Duration::from_secs(2) {
        for s in r.take(usize::MAX).unwrap() {
            if let Some(d) = s.data {
                assert_eq!(
                    writer_of(d.seq),
                    20,
                    "a sample of the weaker writer while the stronger one is alive: {d:?}"
                );
                strong_samples += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(strong_samples > 50, "only {strong_samples} samples in 2 s");
    assert!(r.policy_drops().not_owner > 50, "{:?}", r.policy_drops());

    // kill -9 the stronger writer: every instance moves to the weaker one within the deadline
    // or the lease (generously bounded: the participant lease is 1.5 s; allow twice that and
    // the deadline).
    strong.0.kill().unwrap();
    let killed = Instant::now();
    let mut moved = [None; INSTANCES as usize];
    wait_until(10, "every instance to move to the weaker writer", || {
        for s in r.take(usize::MAX).unwrap() {
            if let Some(d) = s.data {
                if writer_of(d.seq) == 10 && moved[d.id as usize].is_none() {
                    moved[d.id as usize] = Some(killed.elapsed());
                }
            }
        }
        moved.iter().all(Option::is_some)
    });
    let slowest = moved.iter().flatten().max().copied().unwrap();
    eprintln!("failover after {slowest:?} (deadline {deadline:?}, lease {LEASE_SECS} s)");
    assert!(
        slowest < Duration::from_secs(3) + DEADLINE,
        "failover took {slowest:?}"
    );
    if deadline.is_some() {
        assert!(r.requested_deadline_missed_status().total_count >= INSTANCES as i32);
    } else {
        // No deadline: the stronger writer's liveliness ended with its participant's lease.
        assert_eq!(r.requested_deadline_missed_status().total_count, 0);
        assert_eq!(r.matched_publications().len(), 1);
        let st = r.liveliness_changed_status();
        assert_eq!((st.alive_count, st.not_alive_count), (1, 0), "{st:?}");
    }
}
