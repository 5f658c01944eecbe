//! Helpers for the DDS-semantics tests and the behaviour suite. A test is a function of the
//! [`Transport`] it runs over; [`per_transport!`](crate::per_transport) makes one `#[test]` of it
//! per transport, and the socket instances are ignored outside a network namespace.
#![allow(dead_code)]

pub mod peer;

use std::time::{Duration, Instant};
pub use tessera::transport::FaultConfig;
use tessera::transport::{InProcessNetwork, TransportKind};
use tessera::{DomainParticipant, ParticipantConfig, TopicType};

/// Panics unless the test runs inside a network namespace made for the test run
/// (`scripts/netns-run` sets `TESSERA_IN_NETNS=1`): an ignored socket test asked for elsewhere
/// must fail, not send discovery traffic out of the machine's own interfaces.
pub fn require_netns() {
    assert!(
        std::env::var("TESSERA_IN_NETNS").as_deref() == Ok("1"),
        "socket test outside a test network namespace: run it via scripts/netns-run"
    );
}

/// The transport a test instance runs over. Tests take one and make their participants with
/// [`Transport::participants`]; [`per_transport!`](crate::per_transport) instantiates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The in-process network, without faults: runs under a plain `cargo test`.
    InProc,
    /// The in-process network losing 10 % of the datagrams, delaying and reordering some.
    InProcLossy,
    /// UDPv4 (needs a network namespace).
    Udp4,
    /// UDPv6 (needs a network namespace).
    Udp6,
    /// Shared memory beside UDPv4, which carries discovery (needs a network namespace).
    Shm,
    /// TCP only: discovery through TCP peers on 127.0.0.1 (needs a network namespace).
    Tcp,
}

/// The faults of [`Transport::InProcLossy`].
pub fn lossy_faults() -> FaultConfig {
    FaultConfig {
        seed: 0x5eed,
        loss_percent: 10.0,
        delay: Duration::from_micros(300),
        reorder_percent: 5.0,
        ..FaultConfig::default()
    }
}

impl Transport {
    /// `n` participants in domain 0 that reach each other (and, over the in-process transports,
    /// nobody else: every call makes a new network).
    pub fn participants(self, n: usize) -> Vec<DomainParticipant> {
        self.domain(n).participants
    }

    /// Like [`Transport::participants`], keeping the in-process network for more participants
    /// and for its statistics.
    pub fn domain(self, n: usize) -> Domain {
        let net = match self {
            Transport::InProc => Some(InProcessNetwork::new()),
            Transport::InProcLossy => {
                let net = InProcessNetwork::new();
                net.set_faults(lossy_faults());
                Some(net)
            }
            Transport::Udp4 | Transport::Udp6 | Transport::Shm | Transport::Tcp => {
                require_netns();
                None
            }
        };
        let mut d = Domain {
            transport: self,
            net,
            participants: Vec::new(),
        };
        for _ in 0..n {
            let p = d.join();
            d.participants.push(p);
        }
        d
    }

    /// Whether datagrams may be lost (reliable promises must hold, best-effort ones loosen).
    pub fn lossy(self) -> bool {
        self == Transport::InProcLossy
    }
}

/// Participants of one test and the network they share.
pub struct Domain {
    pub transport: Transport,
    /// The in-process network, `None` over UDP.
    pub net: Option<InProcessNetwork>,
    pub participants: Vec<DomainParticipant>,
}

impl Domain {
    /// A new participant on the same network (not added to `participants`).
    pub fn join(&self) -> DomainParticipant {
        let config = self.config();
        DomainParticipant::with_qos(self.domain_id(), Default::default(), config)
            .expect("participant")
    }

    /// The domain of this domain's participants: 0, but 1 for [`Transport::Shm`], whose
    /// discovery runs over UDPv4 like [`Transport::Udp4`]'s: the two instances of one test run
    /// in parallel in one namespace and must not discover each other.
    pub fn domain_id(&self) -> u32 {
        match self.transport {
            Transport::Shm => 1,
            Transport::Tcp => 2,
            _ => 0,
        }
    }

    /// The configuration of this domain's participants, to change before creating one.
    pub fn config(&self) -> ParticipantConfig {
        match (&self.net, self.transport) {
            (Some(net), _) => ParticipantConfig::with_in_process(net.clone()),
            (None, Transport::Udp6) => ParticipantConfig {
                transports: Some(vec![TransportKind::Udp6]),
                ..Default::default()
            },
            (None, Transport::Tcp) => {
                let mut tcp = tessera::transport::TcpConfig::without_env(self.domain_id());
                tcp.peers = tessera::transport::parse_peers("127.0.0.1").expect("peer");
                ParticipantConfig {
                    transports: Some(vec![TransportKind::Tcp4]),
                    tcp: Some(tcp),
                    ..Default::default()
                }
            }
            (None, Transport::Shm) => ParticipantConfig {
                transports: Some(vec![TransportKind::Udp4, TransportKind::Shm]),
                ..Default::default()
            },
            (None, _) => ParticipantConfig {
                transports: Some(vec![TransportKind::Udp4]),
                ..Default::default()
            },
        }
    }
}

/// A participant of `domain` on exactly these transports (e.g. UDPv4 and shared memory).
pub fn participant_on(domain: u32, kinds: &[TransportKind]) -> DomainParticipant {
    let config = ParticipantConfig {
        transports: Some(kinds.to_vec()),
        ..Default::default()
    };
    DomainParticipant::with_qos(domain, Default::default(), config).unwrap()
}

/// The files in `/dev/shm` whose names start with `prefix` (segments, pools).
pub fn shm_files(prefix: &str) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(prefix))
        .collect()
}

/// `n` UDPv4 participants, for the tests that talk to them with a scripted UDP peer
/// ([`peer`]); panics outside a test namespace.
pub fn udp_participants(n: usize) -> Vec<DomainParticipant> {
    Transport::Udp4.participants(n)
}

/// Instantiates test bodies `fn name(t: Transport)` once per transport: `inproc` (runs under a
/// plain `cargo test`) and `udp4` (ignored outside a network namespace). With `all:` first, also
/// `inproc_lossy`, `udp6`, `shm` (shared memory beside UDPv4) and `tcp` (TCP alone). With
/// `known_defect = "known defect: ..."` first, every instance is ignored with that reason (a
/// test of a runtime defect, to be un-ignored with its fix).
#[macro_export]
macro_rules! per_transport {
    (known_defect = $why:literal, all: $($name:ident),* $(,)?) => {
        mod known_defect {
            #[allow(unused_imports)]
            use super::*;
            $crate::per_transport!(@defect inproc, InProc, $why, $($name),*);
            $crate::per_transport!(@defect inproc_lossy, InProcLossy, $why, $($name),*);
            $crate::per_transport!(@defect udp4, Udp4, $why, $($name),*);
            $crate::per_transport!(@defect udp6, Udp6, $why, $($name),*);
            $crate::per_transport!(@defect shm, Shm, $why, $($name),*);
            $crate::per_transport!(@defect tcp, Tcp, $why, $($name),*);
        }
    };
    (@defect $m:ident, $kind:ident, $why:literal, $($name:ident),*) => {
        mod $m {
            $(
                #[test]
                #[ignore = $why]
                fn $name() {
                    super::$name($crate::support::Transport::$kind)
                }
            )*
        }
    };
    (all: $($name:ident),* $(,)?) => {
        $crate::per_transport!(@mod inproc, InProc, any(), $($name),*);
        $crate::per_transport!(@mod inproc_lossy, InProcLossy, any(), $($name),*);
        $crate::per_transport!(@mod udp4, Udp4, all(), $($name),*);
        $crate::per_transport!(@mod udp6, Udp6, all(), $($name),*);
        $crate::per_transport!(@mod shm, Shm, all(), $($name),*);
        $crate::per_transport!(@mod tcp, Tcp, all(), $($name),*);
    };
    (@mod $m:ident, $kind:ident, $ignored:meta, $($name:ident),*) => {
        mod $m {
            $(
                #[test]
                #[cfg_attr($ignored, ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)")]
                fn $name() {
                    super::$name($crate::support::Transport::$kind)
                }
            )*
        }
    };
    ($($name:ident),* $(,)?) => {
        $crate::per_transport!(@mod inproc, InProc, any(), $($name),*);
        $crate::per_transport!(@mod udp4, Udp4, all(), $($name),*);
    };
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

/// Takes from every reader until each holds `n` samples (within 20 s), then once more after
/// 200 ms, so that a duplicate arriving late is caught too; returns each reader's `seq(..)` of
/// every valid sample, in arrival order.
pub fn take_until_each_has<T: TopicType>(
    readers: &[tessera::DataReader<T>],
    n: usize,
    seq: impl Fn(&T) -> u32,
) -> Vec<Vec<u32>> {
    let mut got = vec![Vec::new(); readers.len()];
    let take_all = |got: &mut Vec<Vec<u32>>| {
        for (r, g) in readers.iter().zip(got.iter_mut()) {
            for s in r.take(512).unwrap() {
                g.extend(s.data.as_ref().map(&seq));
            }
        }
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.iter().any(|g| g.len() < n) {
        assert!(
            Instant::now() < deadline,
            "received {:?} of {n}",
            got.iter().map(Vec::len).collect::<Vec<_>>()
        );
        take_all(&mut got);
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(200));
    take_all(&mut got);
    got
}
