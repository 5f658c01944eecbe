//! The paced stream of the failure experiment: a writer numbering its samples and a reader
//! printing every number it receives, so that the runner sees from the reader's lines (each
//! timed on arrival) when the flow stopped, what was lost and when it came back.
//!
//! ```text
//! tessera bench worker stream-writer --rate HZ [--size S] [--domain D] [--topic NAME] [--duration S]
//! tessera bench worker stream-reader [--domain D] [--topic NAME] [--duration S]
//! ```
//!
//! Both use the participant configuration of the environment, so the runner chooses the
//! architecture the way a user would: `ROS_DISCOVERY_SERVER` (centralized), `TESSERA_NODE=1`
//! (federated) or nothing (decentralized). QoS: RELIABLE, VOLATILE, KEEP_LAST 100 on both
//! sides (what an application streaming state would pick: a reader that cannot be reached for
//! a while does not stall the writer).
//!
//! The writer prints `{"type":"ready","t":T}` once its writer exists, then writes sample `i`
//! (0, 1, …) at `HZ` per second, on a schedule (a late write does not shift the ones after it).
//! The reader prints `{"type":"ready","t":T}`, then `rx I` per sample (short lines: hundreds a
//! second). Both stop on SIGINT/SIGTERM, on stdin closing (when it is a pipe) or after
//! `--duration`.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use serde_json::json;
use tessera::crossbeam_channel::{self, Receiver, TryRecvError};
use tessera::qos::{DataReaderQos, DataWriterQos, History, Reliability, TopicQos};
use tessera::{DomainParticipant, ParticipantConfig, StateMasks, TopicType, WaitSet};

use super::floor::secs;
use super::worker::{dds_error, line};

/// Default topic of the stream.
pub const STREAM_TOPIC: &str = "TesseraBenchStream";

/// History depth of both ends.
const DEPTH: u32 = 100;

/// A numbered sample of the stream.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "TesseraBenchStreamSample")]
pub struct StreamSample {
    /// 0, 1, 2, … in write order.
    pub seq: u64,
    /// Filler of `--size` bytes.
    pub payload: Vec<u8>,
}

/// Options of `stream-writer` and `stream-reader`.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamOpts {
    /// Writer: samples per second.
    pub rate: f64,
    /// Writer: payload bytes.
    pub size: usize,
    /// Domain id.
    pub domain: u32,
    /// Topic name.
    pub topic: String,
    /// Stop this long after start (`None`: only on signal or stdin closing).
    pub duration: Option<Duration>,
}

/// Parses the options after `stream-writer` / `stream-reader`.
pub fn parse_opts<'a>(
    words: impl Iterator<Item = &'a str>,
    writer: bool,
) -> Result<StreamOpts, String> {
    let mut o = StreamOpts {
        rate: 0.0,
        size: 64,
        domain: 0,
        topic: STREAM_TOPIC.into(),
        duration: None,
    };
    let num = |v: &str, opt: &str| -> Result<f64, String> {
        v.parse::<f64>()
            .ok()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| format!("{opt} {v}: invalid number"))
    };
    for (opt, v) in super::floor::option_pairs(words)? {
        match (opt, writer) {
            ("--domain", _) => o.domain = num(v, opt)? as u32,
            ("--topic", _) => o.topic = v.to_string(),
            ("--duration", _) => o.duration = Some(secs(v, opt)?),
            ("--rate", true) => o.rate = num(v, opt)?,
            ("--size", true) => o.size = num(v, opt)? as usize,
            _ => return Err(format!("unknown option {opt:?}")),
        }
    }
    if writer && !(1.0..=100_000.0).contains(&o.rate) {
        return Err("--rate HZ (1..=100000) is required".into());
    }
    if o.size > 1 << 20 {
        return Err("--size at most 1 MiB".into());
    }
    Ok(o)
}

/// Whether to stop: a stop request, or `--duration` over.
fn stopping(o: &StreamOpts, t0: Instant, stop: &Receiver<()>) -> bool {
    o.duration.is_some_and(|d| t0.elapsed() >= d)
        || matches!(stop.try_recv(), Ok(()) | Err(TryRecvError::Disconnected))
}

/// A worker's participant (from `config`: the environment's, unless a test gives its own) and
/// the endpoint `make` creates on the stream's topic; prints `ready` once both exist. On
/// failure, prints the error and returns the exit status.
fn open<W: Write, E>(
    o: &StreamOpts,
    config: ParticipantConfig,
    out: &mut W,
    t0: Instant,
    make: impl FnOnce(&DomainParticipant, &tessera::Topic<StreamSample>) -> tessera::Result<E>,
) -> Result<(DomainParticipant, E), i32> {
    let p = DomainParticipant::with_qos(o.domain, Default::default(), config)
        .map_err(|e| dds_error(out, t0, "create participant", e))?;
    let endpoint = p
        .create_topic::<StreamSample>(&o.topic, TopicQos::default())
        .and_then(|t| make(&p, &t))
        .map_err(|e| dds_error(out, t0, "create endpoint", e))?;
    line(
        out,
        json!({"type": "ready", "t": t0.elapsed().as_secs_f64()}),
    );
    Ok((p, endpoint))
}

/// The stream writer: returns the exit status (0, or 2 on a DDS error).
pub fn writer<W: Write>(
    o: &StreamOpts,
    config: ParticipantConfig,
    mut out: W,
    t0: Instant,
    stop: &Receiver<()>,
) -> i32 {
    let qos = DataWriterQos::default()
        .with_reliability(Reliability::reliable(Duration::from_millis(100)))
        .with_history(History::KeepLast(DEPTH));
    let (_p, w) = match open(o, config, &mut out, t0, |p, t| {
        p.create_publisher(Default::default())?
            .create_datawriter(t, qos)
    }) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let period = Duration::from_secs_f64(1.0 / o.rate);
    let start = Instant::now();
    let mut sample = StreamSample {
        seq: 0,
        payload: vec![0x5a; o.size],
    };
    let mut timeouts = 0u64;
    while !stopping(o, t0, stop) {
        match w.write(&sample) {
            Ok(()) => {}
            // KEEP_LAST never blocks for long; a timeout is a reader that keeps the writer
            // waiting (counted, the stream goes on).
            Err(tessera::Error::Timeout) => timeouts += 1,
            Err(e) => return dds_error(&mut out, t0, "write", e),
        }
        sample.seq += 1;
        let due = start + period.mul_f64(sample.seq as f64);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    line(
        &mut out,
        json!({"type": "end", "written": sample.seq, "timeouts": timeouts}),
    );
    0
}

/// The stream reader: prints `rx I` per sample until stopped. Returns the exit status.
pub fn reader<W: Write>(
    o: &StreamOpts,
    config: ParticipantConfig,
    mut out: W,
    t0: Instant,
    stop: &Receiver<()>,
) -> i32 {
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_millis(100)))
        .with_history(History::KeepLast(DEPTH));
    let (_p, r) = match open(o, config, &mut out, t0, |p, t| {
        p.create_subscriber(Default::default())?
            .create_datareader(t, qos)
    }) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let mut ws = WaitSet::new();
    ws.attach(&r.create_readcondition(StateMasks::ANY));
    let mut active = Vec::new();
    let mut buf = Vec::new();
    let mut text = String::new();
    while !stopping(o, t0, stop) {
        buf.clear();
        if r.take_into(&mut buf, 1024) > 0 {
            // One write per batch: each line is still timed apart by the runner, which reads
            // the pipe as the lines come.
            text.clear();
            for s in buf.iter().filter_map(|s| s.data.as_ref()) {
                text.push_str("rx ");
                text.push_str(&s.seq.to_string());
                text.push('\n');
            }
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
            continue;
        }
        let _ = ws.wait_into(&mut active, Some(Duration::from_millis(50)));
    }
    0
}

/// Runs `stream-writer` (`writer = true`) or `stream-reader` with stdout and the usual stop
/// sources.
pub fn main(opts: &StreamOpts, writer_side: bool, t0: Instant) -> i32 {
    let (tx, rx) = crossbeam_channel::bounded(4);
    super::worker::stop_sources(tx);
    if writer_side {
        writer(opts, ParticipantConfig::default(), io::stdout(), t0, &rx)
    } else {
        reader(opts, ParticipantConfig::default(), io::stdout(), t0, &rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera::transport::InProcessNetwork;

    #[test]
    fn options() {
        let o = parse_opts(["--rate", "500", "--size=128"].into_iter(), true).unwrap();
        assert_eq!(
            (o.rate, o.size, o.topic.as_str()),
            (500.0, 128, STREAM_TOPIC)
        );
        let o = parse_opts(["--duration", "2.5", "--domain", "3"].into_iter(), false).unwrap();
        assert_eq!(
            (o.duration, o.domain),
            (Some(Duration::from_millis(2500)), 3)
        );
        for (bad, writer) in [
            (&[][..], true),
            (&["--rate", "0"][..], true),
            (&["--rate", "x"][..], true),
            (&["--rate", "10"][..], false),
            (&["--rate", "10", "--size", "9999999"][..], true),
            (&["--bogus", "1"][..], false),
        ] {
            assert!(parse_opts(bad.iter().copied(), writer).is_err(), "{bad:?}");
        }
    }

    /// A `Write` shared between the test and a worker thread.
    #[derive(Clone, Default)]
    struct Shared(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_reader_prints_every_number_the_writer_wrote() {
        // Both threads on one in-process network (no sockets).
        let net = InProcessNetwork::new();
        let o = StreamOpts {
            rate: 1000.0,
            size: 16,
            domain: 7,
            topic: "StreamTest".into(),
            duration: None,
        };
        let (rstop_tx, rstop) = crossbeam_channel::bounded(1);
        let (wstop_tx, wstop) = crossbeam_channel::bounded(1);
        let rout = Shared::default();
        let (ro, rw) = (o.clone(), rout.clone());
        let cfg = ParticipantConfig::with_in_process(net.clone());
        let r = std::thread::spawn(move || reader(&ro, cfg, rw, Instant::now(), &rstop));
        std::thread::sleep(Duration::from_millis(200));
        let wout = Shared::default();
        let (wo, ww) = (o.clone(), wout.clone());
        let cfg = ParticipantConfig::with_in_process(net);
        let w = std::thread::spawn(move || writer(&wo, cfg, ww, Instant::now(), &wstop));
        std::thread::sleep(Duration::from_millis(600));
        wstop_tx.send(()).unwrap();
        assert_eq!(w.join().unwrap(), 0);
        std::thread::sleep(Duration::from_millis(300));
        rstop_tx.send(()).unwrap();
        assert_eq!(r.join().unwrap(), 0);
        let wtext = String::from_utf8(wout.0.lock().unwrap().clone()).unwrap();
        let end: serde_json::Value = serde_json::from_str(wtext.lines().last().unwrap()).unwrap();
        let written = end["written"].as_u64().unwrap();
        assert!(written > 100, "{wtext}");
        let rtext = String::from_utf8(rout.0.lock().unwrap().clone()).unwrap();
        let got: Vec<u64> = rtext
            .lines()
            .filter_map(|l| l.strip_prefix("rx "))
            .map(|n| n.parse().unwrap())
            .collect();
        // VOLATILE: the first samples may go before the writer matched the reader; from the
        // first one received, every one, in order.
        let first = *got.first().expect("samples");
        assert!(first < 50, "{rtext}");
        assert_eq!(got, (first..written).collect::<Vec<_>>(), "{rtext}");
    }
}
