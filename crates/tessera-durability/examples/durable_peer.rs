//! A writer or a late reader of a TRANSIENT or PERSISTENT topic, for the real-process tests
//! (`tests/interop/durability_persistent.sh`).
//!
//! - `durable_peer pub --topic T --kind persistent --instances K --count N --depth D`: writes N
//!   samples to each of K instances (writer history and DURABILITY_SERVICE KEEP_LAST D), waits
//!   until every matched reader (the service) acknowledged them, prints
//!   `acknowledged WRITER_GUID`, then stays until killed. `--interval-ms M` sleeps M ms after
//!   each round of K samples (a stream that lasts, for tests that kill a service mid-stream).
//! - `durable_peer sub --topic T --kind persistent --instances K --count N --depth D
//!   --writer WRITER_GUID --timeout S`: a late reader; checks that it receives exactly the last
//!   D values of each instance, in order, once, from that writer; exit 0 if so, 1 if not.

use std::time::{Duration, Instant};
use tessera::qos::{
    DataReaderQos, DataWriterQos, Durability, DurabilityService, History, Reliability,
    ResourceLimits, TopicQos, WriterDataLifecycle,
};
use tessera::{DomainParticipant, TopicType};

#[derive(TopicType, Debug, Clone, PartialEq)]
struct Reading {
    #[key]
    sensor: u32,
    value: u32,
}

struct Args {
    topic: String,
    kind: Durability,
    instances: u32,
    count: u32,
    depth: u32,
    writer: String,
    timeout: u64,
    interval: Duration,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut a = Args {
        topic: "Durable".into(),
        kind: Durability::Persistent,
        instances: 2,
        count: 20,
        depth: 5,
        writer: String::new(),
        timeout: 30,
        interval: Duration::ZERO,
    };
    let mut it = args.iter();
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let num = || v.parse::<u32>().map_err(|e| format!("{k} {v}: {e}"));
        match k.as_str() {
            "--topic" => a.topic = v.clone(),
            "--kind" => {
                a.kind = match v.as_str() {
                    "transient" => Durability::Transient,
                    "persistent" => Durability::Persistent,
                    _ => return Err(format!("--kind {v}")),
                }
            }
            "--instances" => a.instances = num()?,
            "--count" => a.count = num()?,
            "--depth" => a.depth = num()?,
            "--writer" => a.writer = v.clone(),
            "--timeout" => a.timeout = u64::from(num()?),
            "--interval-ms" => a.interval = Duration::from_millis(u64::from(num()?)),
            _ => return Err(format!("unknown {k}")),
        }
    }
    Ok(a)
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    let mode = argv.get(1).cloned().unwrap_or_default();
    let a = match parse(argv.get(2..).unwrap_or(&[])) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("durable_peer: {e}");
            std::process::exit(2);
        }
    };
    let p = DomainParticipant::new(0).expect("participant");
    let t = p
        .create_topic::<Reading>(&a.topic, TopicQos::default())
        .expect("topic");
    let deadline = Instant::now() + Duration::from_secs(a.timeout);
    match mode.as_str() {
        "pub" => {
            let w = p
                .create_publisher(Default::default())
                .unwrap()
                .create_datawriter(
                    &t,
                    DataWriterQos::default()
                        .with_durability(a.kind)
                        // As deep as the service's: samples written while the service's reader
                        // is still in its handshake reach it from this history.
                        .with_history(History::KeepLast(a.depth))
                        .with_durability_service(DurabilityService {
                            service_cleanup_delay: Duration::ZERO,
                            history: History::KeepLast(a.depth),
                            resource_limits: ResourceLimits::UNLIMITED,
                        })
                        .with_writer_data_lifecycle(WriterDataLifecycle {
                            autodispose_unregistered_instances: false,
                        }),
                )
                .expect("writer");
            while w.matched_subscriptions().is_empty() {
                assert!(Instant::now() < deadline, "no durability service matched");
                std::thread::sleep(Duration::from_millis(10));
            }
            for value in 0..a.count {
                for sensor in 0..a.instances {
                    w.write(&Reading { sensor, value }).expect("write");
                }
                if !a.interval.is_zero() {
                    std::thread::sleep(a.interval);
                }
            }
            w.wait_for_acknowledgments(Duration::from_secs(a.timeout))
                .expect("acknowledged");
            println!("acknowledged {}", hex(&w.guid().to_bytes()));
            loop {
                std::thread::sleep(Duration::from_secs(60));
            }
        }
        "sub" => {
            let r = p
                .create_subscriber(Default::default())
                .unwrap()
                .create_datareader(
                    &t,
                    DataReaderQos::default()
                        .with_durability(a.kind)
                        .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                        .with_history(History::KeepAll),
                )
                .expect("reader");
            while r.matched_publications().is_empty() {
                if Instant::now() > deadline {
                    eprintln!("sub: no writer (service) matched");
                    std::process::exit(1);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            r.wait_for_historical_data(Duration::from_secs(a.timeout))
                .expect("historical data");
            let want = a.instances as usize * a.depth.min(a.count) as usize;
            let mut got = Vec::new();
            while got.len() < want && Instant::now() < deadline {
                got.extend(
                    r.take(1000)
                        .unwrap()
                        .into_iter()
                        .filter(|s| s.data.is_some()),
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(300));
            got.extend(
                r.take(1000)
                    .unwrap()
                    .into_iter()
                    .filter(|s| s.data.is_some()),
            );
            let mut ok = true;
            for sensor in 0..a.instances {
                let values: Vec<u32> = got
                    .iter()
                    .filter_map(|s| s.data.as_ref())
                    .filter(|d| d.sensor == sensor)
                    .map(|d| d.value)
                    .collect();
                let expect: Vec<u32> = (a.count.saturating_sub(a.depth)..a.count).collect();
                println!("sub: sensor {sensor}: {values:?}");
                if values != expect {
                    println!("sub: sensor {sensor}: expected {expect:?}");
                    ok = false;
                }
            }
            let foreign = got
                .iter()
                .filter(|s| hex(&s.info.publication_handle) != a.writer)
                .count();
            if foreign > 0 {
                println!("sub: {foreign} samples not from writer {}", a.writer);
                ok = false;
            }
            println!(
                "sub: {} samples, {}",
                got.len(),
                if ok { "ok" } else { "FAILED" }
            );
            // Leave cleanly (goodbye, shared-memory segment removed): exit skips destructors.
            drop(r);
            drop(t);
            drop(p);
            std::process::exit(if ok { 0 } else { 1 });
        }
        _ => {
            eprintln!("usage: durable_peer pub|sub [--topic T] [--kind transient|persistent] ...");
            std::process::exit(2);
        }
    }
}
