//! The node's scheduler under load: a bulk application pushes far more than its topic's rate
//! limit allows while a high-priority application publishes a small sample every 20 ms. The
//! bulk flow is held to its token bucket (counted in bytes), the high-priority samples
//! overtake the bulk backlog (counted as pre-emptions; none waited behind bulk), and arrive
//! while bulk samples queue for seconds. Needs a network namespace.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use support::{reader, require_netns, wait_until, writer, writer_qos};
use tessera::qos::TransportPriority;
use tessera::transport::TransportKind;
use tessera::{DomainParticipant, ParticipantConfig, TopicType};
use tessera_node::{Node, NodeConfig, Rate};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Blob {
    seq: u32,
    sent_ns: i64,
    payload: Vec<u8>,
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn participant(domain: u32, node: bool) -> DomainParticipant {
    let config = ParticipantConfig {
        node: Some(node),
        // The remote side must be reached over UDP (through the scheduler), not shared memory.
        transports: (!node).then(|| vec![TransportKind::Udp4]),
        ..Default::default()
    };
    DomainParticipant::with_qos(domain, Default::default(), config).unwrap()
}

#[test]
#[ignore = "needs a network namespace: scripts/netns-run (scripts/test runs it)"]
fn high_priority_overtakes_a_rate_limited_bulk_flow() {
    require_netns();
    let domain = 74;
    let rate = Rate {
        bytes_per_sec: 400_000,
        burst: 20_000,
    };
    let mut config = NodeConfig::new(domain);
    config.rates.insert(Some("Bulk".into()), rate);
    config.network = Some(ParticipantConfig {
        transports: Some(vec![TransportKind::Udp4]),
        ..Default::default()
    });
    let node = Node::start(config).unwrap();
    let bulk_app = participant(domain, true);
    let hp_app = participant(domain, true);
    let remote = participant(domain, false);
    let bulk_w = writer::<Blob>(&bulk_app, "Bulk", writer_qos());
    let hp_qos = tessera::qos::DataWriterQos {
        transport_priority: TransportPriority(10),
        ..writer_qos()
    };
    let hp_w = writer::<Blob>(&hp_app, "Hp", hp_qos);
    let bulk_r = reader::<Blob>(&remote, "Bulk");
    let hp_r = reader::<Blob>(&remote, "Hp");
    wait_until(20, "matches through the node", || {
        bulk_w.publication_matched_status().current_count >= 1
            && hp_w.publication_matched_status().current_count >= 1
            && bulk_r.subscription_matched_status().current_count >= 1
            && hp_r.subscription_matched_status().current_count >= 1
    });

    // Bulk: 8 KiB samples as fast as the node takes them (it pushes back once its queues fill).
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let bulk = std::thread::spawn(move || {
        let mut seq = 0;
        while !s.load(Ordering::Relaxed) {
            let b = Blob {
                seq,
                sent_ns: now_ns(),
                payload: vec![0x5a; 8192],
            };
            if bulk_w.write(&b).is_ok() {
                seq += 1;
            }
        }
        seq
    });
    std::thread::sleep(Duration::from_millis(500));
    let start = Instant::now();
    let n_hp = 100;
    let mut hp_lat = Vec::new();
    let mut bulk_age_max = Duration::ZERO;
    let mut bulk_got = 0u64;
    let mut drain = |hp_lat: &mut Vec<Duration>| {
        for s in hp_r.take(64).unwrap() {
            if let Some(b) = s.data {
                hp_lat.push(Duration::from_nanos((now_ns() - b.sent_ns).max(0) as u64));
            }
        }
        for s in bulk_r.take(256).unwrap() {
            if let Some(b) = s.data {
                bulk_got += 1;
                bulk_age_max =
                    bulk_age_max.max(Duration::from_nanos((now_ns() - b.sent_ns).max(0) as u64));
            }
        }
    };
    for seq in 0..n_hp {
        hp_w.write(&Blob {
            seq,
            sent_ns: now_ns(),
            payload: vec![1; 32],
        })
        .unwrap();
        for _ in 0..4 {
            std::thread::sleep(Duration::from_millis(5));
            drain(&mut hp_lat);
        }
    }
    wait_until(10, "every high-priority sample", || {
        drain(&mut hp_lat);
        hp_lat.len() >= n_hp as usize
    });
    let elapsed = start.elapsed() + Duration::from_millis(500);
    stop.store(true, Ordering::Relaxed);
    let stats = node.scheduler();
    drop(node);
    let written = bulk.join().unwrap();

    let flow = |t: &str| stats.flows.iter().find(|f| f.topic == t).unwrap().clone();
    let (b, h) = (flow("Bulk"), flow("Hp"));
    hp_lat.sort();
    let p99 = hp_lat[hp_lat.len() * 99 / 100 - 1];
    eprintln!(
        "bulk: written {written}, sent {} ({} B, throttled {}), received {bulk_got}, oldest \
         {bulk_age_max:?}; hp: sent {}, pre-empted {} times, waited behind bulk {}, p99 {p99:?}",
        b.sent, b.bytes, b.throttled, h.sent, h.preempted_others, h.waited_behind_lower
    );
    // The token bucket held the bulk flow to its rate (+ its burst)...
    let allowed = rate.bytes_per_sec as f64 * (elapsed.as_secs_f64() + 1.0) + rate.burst as f64;
    assert!(
        (b.bytes as f64) <= allowed,
        "bulk sent {} B, allowed {allowed}",
        b.bytes
    );
    assert!(b.throttled > 0, "the bulk flow never waited for tokens");
    // ... while it had a backlog the whole time: the application wrote more than went out.
    assert!(u64::from(written) > b.sent + 100);
    // Every high-priority sample went ahead of queued bulk samples, never behind them.
    assert_eq!(h.sent, u64::from(n_hp));
    assert!(h.preempted_others > 0, "no pre-emption counted");
    assert_eq!(h.waited_behind_lower, 0);
    // And so stayed fast while bulk samples aged in the queues (loose bound: a loaded VM).
    assert!(
        p99 < Duration::from_millis(250) && bulk_age_max > 4 * p99,
        "hp p99 {p99:?}, oldest bulk sample {bulk_age_max:?}"
    );
}
