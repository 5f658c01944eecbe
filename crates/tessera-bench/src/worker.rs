//! Tessera-only worker processes for experiments `tessera perf` (ddsperf's grammar) cannot
//! express.
//!
//! ```text
//! tessera bench worker late-writer --samples K [--size S] [--keys N] [--domain D]
//!                                  [--topic NAME] [--duration S]
//! tessera bench worker late-reader --samples K [--timeout S] [--domain D] [--topic NAME]
//! ```
//!
//! The late-joiner experiment: `late-writer` creates a TRANSIENT_LOCAL, RELIABLE, KEEP_LAST K
//! writer of the keyed topic [`LateSample`], writes K samples (keys `seq % N`, default one
//! instance, so the history depth K keeps all of them; payload S bytes, default 64), prints
//! `{"type":"ready","t":T}` and stays alive until SIGINT/SIGTERM, `--duration` seconds after
//! start, or — when its stdin is a pipe or socket — until stdin is closed. (A stdin that is
//! `/dev/null` or a terminal is not watched, so a runner must either pass a pipe or kill it.)
//!
//! `late-reader` then creates a participant and a TRANSIENT_LOCAL, RELIABLE, KEEP_ALL reader,
//! waits (on a wait set, no polling) for the K historical samples and prints
//! `{"type":"late_joiner","first_sample_ms":F,"all_samples_ms":A,"received":R,"participant_ms":P}`
//! where every time is in milliseconds since the worker started (its `main`, i.e. before the
//! participant was created) and `participant_ms` is how long creating the participant took.
//! `first_sample_ms`/`all_samples_ms` are `null` when that did not happen. Exit 0 when all K
//! distinct samples arrived, 1 on timeout (default 30 s), 2 on a DDS error, 3 on a bad command
//! line. All times `T` are seconds (JSON) since the worker started.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;
use tessera::crossbeam_channel::{self, Receiver, Sender};
use tessera::qos::{DataReaderQos, DataWriterQos, Durability, History, Reliability, TopicQos};
use tessera::{DomainParticipant, StateMasks, TopicType, WaitSet};

/// Default topic name of the late-joiner experiment.
pub const LATE_TOPIC: &str = "TesseraBenchLateJoiner";

/// The sample type of the late-joiner experiment.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "TesseraBenchLateSample")]
pub struct LateSample {
    /// Instance key.
    #[key]
    pub id: u32,
    /// Sequence number, 0..K.
    pub seq: u32,
    /// Filler of `--size` bytes.
    pub payload: Vec<u8>,
}

/// Options of `late-writer`.
#[derive(Debug, Clone, PartialEq)]
pub struct LateWriterOpts {
    /// Samples to write (and history depth).
    pub samples: u32,
    /// Payload bytes per sample.
    pub size: usize,
    /// Number of instances (keys `seq % keys`).
    pub keys: u32,
    /// Domain id.
    pub domain: u32,
    /// Topic name.
    pub topic: String,
    /// Stop this long after start (`None`: only on signal or stdin EOF).
    pub duration: Option<Duration>,
}

/// Options of `late-reader`.
#[derive(Debug, Clone, PartialEq)]
pub struct LateReaderOpts {
    /// Samples expected.
    pub samples: u32,
    /// Give up after this long (from start).
    pub timeout: Duration,
    /// Domain id.
    pub domain: u32,
    /// Topic name.
    pub topic: String,
}

/// A parsed `tessera bench worker` command.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerCommand {
    /// `late-writer`.
    LateWriter(LateWriterOpts),
    /// `late-reader`.
    LateReader(LateReaderOpts),
    /// `stream-writer` (`true`) or `stream-reader` (the failure experiment, [`crate::stream`]).
    Stream(crate::stream::StreamOpts, bool),
}

/// Usage text of `tessera bench worker`.
pub fn usage() -> &'static str {
    "usage: tessera bench worker late-writer --samples K [--size S] [--keys N] [--domain D]\n\
     \x20                                        [--topic NAME] [--duration S]\n\
     \x20      tessera bench worker late-reader --samples K [--timeout S] [--domain D]\n\
     \x20                                        [--topic NAME]\n\
     \x20      tessera bench worker stream-writer --rate HZ [--size S] [--domain D]\n\
     \x20                                        [--topic NAME] [--duration S]\n\
     \x20      tessera bench worker stream-reader [--domain D] [--topic NAME] [--duration S]\n"
}

fn num<T: std::str::FromStr>(v: &str, opt: &str) -> Result<T, String> {
    v.parse().map_err(|_| format!("{opt} {v}: invalid number"))
}

use super::floor::secs;

/// Parses the words after `worker` (a leading `worker` is skipped too).
pub fn parse_args(args: &[String]) -> Result<WorkerCommand, String> {
    let mut words = args.iter().map(String::as_str).peekable();
    if words.peek() == Some(&"worker") {
        words.next();
    }
    let writer = match words.next() {
        Some(w @ ("stream-writer" | "stream-reader")) => {
            let writer = w == "stream-writer";
            return crate::stream::parse_opts(words, writer)
                .map(|o| WorkerCommand::Stream(o, writer));
        }
        Some("late-writer") => true,
        Some("late-reader") => false,
        Some(other) => return Err(format!("unknown worker {other:?}")),
        None => return Err("missing worker (late-writer or late-reader)".into()),
    };
    let mut w = LateWriterOpts {
        samples: 0,
        size: 64,
        keys: 1,
        domain: 0,
        topic: LATE_TOPIC.into(),
        duration: None,
    };
    let mut timeout = Duration::from_secs(30);
    for (opt, v) in super::floor::option_pairs(words)? {
        match (opt, writer) {
            ("--samples", _) => w.samples = num(v, opt)?,
            ("--domain", _) => w.domain = num(v, opt)?,
            ("--topic", _) => w.topic = v.to_string(),
            ("--size", true) => w.size = num(v, opt)?,
            ("--keys", true) => w.keys = num(v, opt)?,
            ("--duration", true) => w.duration = Some(secs(v, opt)?),
            ("--timeout", false) => timeout = secs(v, opt)?,
            _ => return Err(format!("unknown option {opt:?}")),
        }
    }
    if w.samples == 0 {
        return Err("--samples K (K >= 1) is required".into());
    }
    if w.keys == 0 {
        return Err("--keys must be at least 1".into());
    }
    if w.size > 64 << 20 {
        return Err("--size at most 64 MiB".into());
    }
    Ok(if writer {
        WorkerCommand::LateWriter(w)
    } else {
        WorkerCommand::LateReader(LateReaderOpts {
            samples: w.samples,
            timeout,
            domain: w.domain,
            topic: w.topic,
        })
    })
}

fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

/// Prints one JSON line and flushes it (the runner times lines as they come).
pub(crate) fn line<W: Write>(out: &mut W, v: serde_json::Value) {
    let _ = writeln!(out, "{v}");
    let _ = out.flush();
}

/// Prints an `error` line; returns exit status 2.
pub(crate) fn dds_error<W: Write>(out: &mut W, t0: Instant, what: &str, e: tessera::Error) -> i32 {
    line(
        out,
        json!({"type": "error", "t": since(t0), "message": format!("{what}: {e}")}),
    );
    2
}

/// The late-joiner writer: writes, says `ready`, then waits for `stop` (or `--duration`).
pub fn late_writer<W: Write>(
    o: &LateWriterOpts,
    mut out: W,
    t0: Instant,
    stop: &Receiver<()>,
) -> i32 {
    let p = match DomainParticipant::new(o.domain) {
        Ok(p) => p,
        Err(e) => return dds_error(&mut out, t0, "create participant", e),
    };
    let qos = DataWriterQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(10)))
        .with_durability(Durability::TransientLocal)
        .with_history(History::KeepLast(o.samples));
    let w = match p
        .create_topic::<LateSample>(&o.topic, TopicQos::default())
        .and_then(|t| {
            p.create_publisher(Default::default())?
                .create_datawriter(&t, qos)
        }) {
        Ok(w) => w,
        Err(e) => return dds_error(&mut out, t0, "create writer", e),
    };
    for seq in 0..o.samples {
        let s = LateSample {
            id: seq % o.keys,
            seq,
            payload: vec![(seq % 251) as u8; o.size],
        };
        if let Err(e) = w.write(&s) {
            return dds_error(&mut out, t0, "write", e);
        }
    }
    line(&mut out, json!({"type": "ready", "t": since(t0)}));
    let timeout = o.duration.map(|d| d.saturating_sub(t0.elapsed()));
    match timeout {
        Some(t) => {
            let _ = stop.recv_timeout(t);
        }
        None => {
            let _ = stop.recv();
        }
    }
    drop(w);
    drop(p);
    0
}

/// The late-joiner reader: creates its participant and reader, waits for the K samples and
/// prints the `late_joiner` line. Returns 0 when all arrived, 1 on timeout.
pub fn late_reader<W: Write>(o: &LateReaderOpts, mut out: W, t0: Instant) -> i32 {
    let before = t0.elapsed();
    let p = match DomainParticipant::new(o.domain) {
        Ok(p) => p,
        Err(e) => return dds_error(&mut out, t0, "create participant", e),
    };
    let participant_ms = ms(t0.elapsed().saturating_sub(before));
    let qos = DataReaderQos::default()
        .with_reliability(Reliability::reliable(Duration::from_secs(10)))
        .with_durability(Durability::TransientLocal)
        .with_history(History::KeepAll);
    let r = match p
        .create_topic::<LateSample>(&o.topic, TopicQos::default())
        .and_then(|t| {
            p.create_subscriber(Default::default())?
                .create_datareader(&t, qos)
        }) {
        Ok(r) => r,
        Err(e) => return dds_error(&mut out, t0, "create reader", e),
    };
    let mut ws = WaitSet::new();
    ws.attach(&r.create_readcondition(StateMasks::ANY));
    let mut active = Vec::new();
    let mut seen = vec![false; o.samples as usize];
    let mut received: u32 = 0;
    let mut first: Option<Duration> = None;
    let mut all: Option<Duration> = None;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if r.take_into(&mut buf, 4096) > 0 {
            let now = t0.elapsed();
            for s in buf.iter().filter_map(|s| s.data.as_ref()) {
                if let Some(slot) = seen.get_mut(s.seq as usize) {
                    if !*slot {
                        *slot = true;
                        received += 1;
                        first.get_or_insert(now);
                    }
                }
            }
            if received == o.samples {
                all = Some(now);
                break;
            }
            continue;
        }
        let left = o.timeout.saturating_sub(t0.elapsed());
        if left.is_zero() {
            break;
        }
        let _ = ws.wait_into(&mut active, Some(left));
    }
    line(
        &mut out,
        json!({"type": "late_joiner", "first_sample_ms": first.map(ms),
               "all_samples_ms": all.map(ms), "received": received,
               "participant_ms": participant_ms}),
    );
    if all.is_some() {
        0
    } else {
        1
    }
}

/// Whether fd 0 is a pipe or a socket (whose closing means "stop").
fn stdin_is_pipe() -> bool {
    // SAFETY: fstat on fd 0 with a zeroed, properly sized out-struct.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(0, &mut st) != 0 {
            return false;
        }
        let fmt = st.st_mode & libc::S_IFMT;
        fmt == libc::S_IFIFO || fmt == libc::S_IFSOCK
    }
}

/// Stops the worker on SIGINT/SIGTERM and, when stdin is a pipe, on its closing.
pub(crate) fn stop_sources(tx: Sender<()>) {
    static SET: AtomicBool = AtomicBool::new(false);
    if !SET.swap(true, Ordering::AcqRel) {
        let t = tx.clone();
        let _ = ctrlc::set_handler(move || {
            let _ = t.try_send(());
        });
    }
    if stdin_is_pipe() {
        let _ = std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                let mut sink = [0u8; 256];
                let mut stdin = io::stdin().lock();
                while matches!(io::Read::read(&mut stdin, &mut sink), Ok(n) if n > 0) {}
                let _ = tx.try_send(());
            });
    }
}

/// `tessera bench worker ...`: `args` are the words after `worker` (a leading `worker` is
/// accepted). Prints JSON lines on stdout; returns the exit status.
pub fn main(args: &[String]) -> i32 {
    let t0 = Instant::now();
    let cmd = match parse_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tessera bench worker: {e}");
            eprint!("{}", usage());
            return 3;
        }
    };
    match cmd {
        WorkerCommand::LateWriter(o) => {
            let (tx, rx) = crossbeam_channel::bounded(4);
            stop_sources(tx);
            late_writer(&o, io::stdout(), t0, &rx)
        }
        WorkerCommand::LateReader(o) => late_reader(&o, io::stdout(), t0),
        WorkerCommand::Stream(o, writer) => crate::stream::main(&o, writer, t0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_cli::testns as netns;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn command_line() {
        let c = parse_args(&a(&["late-writer", "--samples", "100", "--size", "1024"])).unwrap();
        assert_eq!(
            c,
            WorkerCommand::LateWriter(LateWriterOpts {
                samples: 100,
                size: 1024,
                keys: 1,
                domain: 0,
                topic: LATE_TOPIC.into(),
                duration: None,
            })
        );
        let c = parse_args(&a(&[
            "worker",
            "late-reader",
            "--samples=7",
            "--timeout",
            "2.5",
            "--domain",
            "3",
        ]))
        .unwrap();
        assert_eq!(
            c,
            WorkerCommand::LateReader(LateReaderOpts {
                samples: 7,
                timeout: Duration::from_millis(2500),
                domain: 3,
                topic: LATE_TOPIC.into(),
            })
        );
        for bad in [
            &[][..],
            &["late-writer"],
            &["late-writer", "--samples", "0"],
            &["late-writer", "--samples", "x"],
            &["late-reader", "--samples", "5", "--size", "10"],
            &["late-writer", "--samples", "5", "--timeout", "1"],
            &["late-writer", "--samples", "5", "--keys", "0"],
            &["early-reader", "--samples", "5"],
            &["late-reader", "--samples"],
        ] {
            assert!(parse_args(&a(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    #[ignore = "runs inside a network namespace (see late_joiner_end_to_end)"]
    fn late_joiner_end_to_end_inner() {
        netns::require_inside("late_joiner_end_to_end");
        let k = 100;
        let (tx, rx) = crossbeam_channel::bounded(1);
        let (ready_tx, ready_rx) = crossbeam_channel::bounded::<()>(1);
        let wopts = LateWriterOpts {
            samples: k,
            size: 256,
            keys: 1,
            domain: 0,
            topic: LATE_TOPIC.into(),
            duration: Some(Duration::from_secs(60)),
        };
        let writer = std::thread::spawn(move || {
            struct Tee(Vec<u8>, Option<Sender<()>>);
            impl Write for Tee {
                fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                    self.0.extend_from_slice(b);
                    if self.0.ends_with(b"\n") && self.0.windows(5).any(|w| w == b"ready") {
                        if let Some(t) = self.1.take() {
                            let _ = t.send(());
                        }
                    }
                    Ok(b.len())
                }
                fn flush(&mut self) -> io::Result<()> {
                    Ok(())
                }
            }
            let mut tee = Tee(Vec::new(), Some(ready_tx));
            let code = late_writer(&wopts, &mut tee, Instant::now(), &rx);
            (code, String::from_utf8(tee.0).unwrap())
        });
        ready_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("writer ready");
        // Let the writer's first announcements pass, so the reader really joins late.
        std::thread::sleep(Duration::from_millis(300));
        let mut out = Vec::new();
        let code = late_reader(
            &LateReaderOpts {
                samples: k,
                timeout: Duration::from_secs(20),
                domain: 0,
                topic: LATE_TOPIC.into(),
            },
            &mut out,
            Instant::now(),
        );
        tx.send(()).unwrap();
        let (wcode, wout) = writer.join().unwrap();
        let out = String::from_utf8(out).unwrap();
        assert_eq!((code, wcode), (0, 0), "{out}\n{wout}");
        let w: serde_json::Value = serde_json::from_str(wout.trim()).unwrap();
        assert_eq!(w["type"], "ready");
        assert!(w["t"].as_f64().unwrap() > 0.0);
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["type"], "late_joiner");
        assert_eq!(v["received"], k);
        let p = v["participant_ms"].as_f64().unwrap();
        let first = v["first_sample_ms"].as_f64().unwrap();
        let all = v["all_samples_ms"].as_f64().unwrap();
        assert!(p > 0.0 && p <= first && first <= all, "{out}");
        eprintln!("late joiner: {out}");

        // Nobody writing on another topic: timeout, exit 1, nulls.
        let mut out = Vec::new();
        let code = late_reader(
            &LateReaderOpts {
                samples: 5,
                timeout: Duration::from_millis(500),
                domain: 0,
                topic: "NobodyWritesThis".into(),
            },
            &mut out,
            Instant::now(),
        );
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(code, 1);
        assert!(v["all_samples_ms"].is_null() && v["first_sample_ms"].is_null());
        assert_eq!(v["received"], 0);
    }

    #[test]
    fn late_joiner_end_to_end() {
        netns::run_inner("worker::tests::late_joiner_end_to_end_inner");
    }
}
