//! The Rust half of the Python example pair: subscribes to `Greetings` (type
//! `hello::Greeting`) and prints each sample on a line of its own, until `N` (first argument,
//! default 10) arrived or 20 s passed. Its Python peer is `bindings/python/examples/hello_pub.py`,
//! which publishes the same type from a dataclass; `bindings/python/tests/test_interop.py` runs
//! the pair.
use std::time::{Duration, Instant};
use tessera::qos::{DataReaderQos, History, Reliability, TopicQos};
use tessera::{DomainParticipant, StateMasks, TopicType, WaitSet};

/// `module hello { struct Greeting { @key long id; string message; sequence<double> values; }; };`
#[derive(TopicType, Debug, Clone)]
#[topic(type_name = "hello::Greeting")]
struct Greeting {
    #[key]
    id: i32,
    message: String,
    values: Vec<f64>,
}

fn main() -> tessera::Result<()> {
    let want: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(10);
    let participant = DomainParticipant::new(0)?;
    let topic = participant.create_topic::<Greeting>("Greetings", TopicQos::default())?;
    let reader = participant
        .create_subscriber(Default::default())?
        .create_datareader(
            &topic,
            DataReaderQos::default()
                .with_reliability(Reliability::reliable(Duration::from_secs(1)))
                .with_history(History::KeepAll),
        )?;
    println!("ready");
    let mut waitset = WaitSet::new();
    waitset.attach(&reader.create_readcondition(StateMasks::ANY));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut received = 0;
    while received < want {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            eprintln!("hello_sub: {received} of {want} samples in 20 s");
            std::process::exit(1);
        }
        let _ = waitset.wait(Some(left));
        for s in reader.take(64)? {
            if let Some(g) = s.data {
                println!("{} {} {:?}", g.id, g.message, g.values);
                received += 1;
            }
        }
    }
    Ok(())
}
