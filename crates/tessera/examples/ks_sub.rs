//! Receives ddsperf's KeyedSeq samples for a few seconds and prints what arrived.
//! Run inside a network namespace next to `ddsperf pub`.
use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, History, Reliability, TopicQos};
use tessera::{DomainParticipant, TopicType};

#[derive(TopicType, Debug, Clone)]
#[topic(type_name = "KeyedSeq")]
struct KeyedSeq {
    seq: u32,
    #[key]
    keyval: u32,
    baggage: Vec<u8>,
}

fn main() -> tessera::Result<()> {
    let p = DomainParticipant::new(0)?;
    let t = p.create_topic::<KeyedSeq>("DDSPerfRDataKS", TopicQos::default())?;
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(10)))
        .with_history(History::KeepAll);
    let r = p
        .create_subscriber(Default::default())?
        .create_datareader(&t, qos)?;
    let start = Instant::now();
    let (mut n, mut last) = (0u64, None);
    let mut buf = Vec::new();
    while start.elapsed() < Duration::from_secs(4) {
        buf.clear();
        r.take_into(&mut buf, 4096);
        for s in &buf {
            if let Some(d) = &s.data {
                n += 1;
                last = Some((d.seq, d.keyval, d.baggage.len()));
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    println!(
        "received {n} samples, last {last:?}, matched {:?}, counters {:?}",
        r.subscription_matched_status(),
        p.counters()
    );
    Ok(())
}
