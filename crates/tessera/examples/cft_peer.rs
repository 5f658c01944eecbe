//! A content-filter peer for tests/interop/cft_cyclone_py.sh.
//!
//!   cft_peer sub SECONDS   a reader of a content-filtered topic (`seq >= %0 AND label LIKE
//!                          'keep%'`, %0 = 10), announced to the peer in SEDP; prints what it
//!                          gets and, last, how many samples the filter dropped
//!   cft_peer pub SECONDS   a writer, 20 samples a second, labels "keep"/"drop" in turn
use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, DataWriterQos, Reliability, TopicQos};
use tessera::{DomainParticipant, TopicType};

#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "cft::Reading")]
struct Reading {
    #[key]
    id: i32,
    seq: i32,
    label: String,
}

fn main() -> tessera::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("sub");
    let secs: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let p = DomainParticipant::new(0)?;
    let topic = p.create_topic::<Reading>("CftReading", TopicQos::default())?;
    let reliable = Reliability::reliable(Duration::from_secs(1));
    let end = Instant::now() + Duration::from_secs_f64(secs);
    if mode == "pub" {
        let w = p
            .create_publisher(Default::default())?
            .create_datawriter(&topic, DataWriterQos::default().with_reliability(reliable))?;
        let mut seq = 0;
        while Instant::now() < end {
            let label = if seq % 2 == 0 { "keep" } else { "drop" };
            let s = Reading {
                id: seq % 3,
                seq,
                label: format!("{label}{seq}"),
            };
            w.write(&s)?;
            println!("sent {s:?}");
            seq += 1;
            std::thread::sleep(Duration::from_millis(50));
        }
        return Ok(());
    }
    let cft = p.create_contentfilteredtopic(
        "CftReadingKept",
        &topic,
        "seq >= %0 AND label LIKE 'keep%'",
        vec!["10".into()],
    )?;
    let r = p
        .create_subscriber(Default::default())?
        .create_datareader(&cft, DataReaderQos::default().with_reliability(reliable))?;
    while Instant::now() < end {
        for s in r.take(64)? {
            if let Some(d) = s.data {
                println!("got {d:?}");
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("matched {}", r.subscription_matched_status().total_count);
    println!("filtered_out {}", r.filtered_out());
    Ok(())
}
