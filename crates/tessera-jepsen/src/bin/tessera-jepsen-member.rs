//! One member of a `tessera-jepsen` run: a Tessera participant with an ATOMIC writer and an
//! ATOMIC reader on one topic, writing at a steady rate and appending every event to its
//! history file (format: `tessera_jepsen::history`), one `write` per line so a kill -9 loses
//! at most the line being written.
//!
//!   tessera-jepsen-member --history FILE --control PREFIX --writer-id W [--rate HZ]
//!                         [--payload BYTES] [--domain D] [--lifespan SECONDS]
//!
//! `--lifespan` gives the writer a LIFESPAN (none by default).
//!
//! The controller steers it with files: `PREFIX.quiet` (stop writing) and `PREFIX.stop`
//! (containing `end` or `leave`: take what is left, log `stop <reason>`, exit).
//!
//!   tessera-jepsen-member --clock-probe
//!
//! answers each line on stdin with its wall clock (Unix ns) and the time its `Instant` says
//! has passed since it started (ns): how `tessera_jepsen::clock::verify` sees that a preloaded
//! libfaketime moves the one and not the other. A member prints `clock step <seconds>` on
//! stderr when its wall clock steps against its monotonic clock.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tessera::qos::{
    Consistency, DataReaderQos, DataWriterQos, History, Lifespan, Reliability, TopicQos,
};
use tessera::{DataReader, DomainParticipant, TopicType};
use tessera_jepsen::history::value_of;

/// The sample: who wrote it, a value unique in the run, and some bytes. Keyless on purpose:
/// `take` returns samples instance by instance, so with one instance per writer a reader would
/// not see the log order across writers; with one instance it does.
#[derive(TopicType, Debug, Clone, PartialEq)]
struct Op {
    writer: u64,
    value: u64,
    payload: Vec<u8>,
}

/// The history file: each event one unbuffered write.
struct Log(Mutex<File>);

impl Log {
    fn event(&self, line: &str) {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        if let Err(e) = f.write_all(buf.as_bytes()) {
            eprintln!("history: {e}");
        }
    }
}

struct Args {
    history: PathBuf,
    control: PathBuf,
    writer_id: u64,
    rate: f64,
    payload: usize,
    domain: u32,
    lifespan: Option<Duration>,
}

fn args() -> Result<Args> {
    let mut a = Args {
        history: PathBuf::new(),
        control: PathBuf::new(),
        writer_id: 0,
        rate: 10.0,
        payload: 64,
        domain: 0,
        lifespan: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().with_context(|| format!("{k} needs a value"))?;
        match k.as_str() {
            "--history" => a.history = v.into(),
            "--control" => a.control = v.into(),
            "--writer-id" => a.writer_id = v.parse()?,
            "--rate" => a.rate = v.parse()?,
            "--payload" => a.payload = v.parse()?,
            "--domain" => a.domain = v.parse()?,
            "--lifespan" => {
                a.lifespan =
                    Some(Duration::try_from_secs_f64(v.parse()?).context("--lifespan: seconds")?)
            }
            _ => bail!("unknown argument {k}"),
        }
    }
    if a.history.as_os_str().is_empty() || a.control.as_os_str().is_empty() || a.writer_id == 0 {
        bail!("usage: tessera-jepsen-member --history FILE --control PREFIX --writer-id W [--rate HZ] [--payload BYTES] [--domain D] [--lifespan SECONDS]");
    }
    if !(a.rate > 0.0 && a.rate.is_finite()) {
        bail!("--rate must be > 0");
    }
    Ok(a)
}

fn with_ext(p: &std::path::Path, ext: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(ext);
    s.into()
}

/// Takes everything there is, logging each delivery at its position.
fn drain(r: &DataReader<Op>, log: &Log, pos: &mut u64) -> Result<usize> {
    let mut n = 0;
    for s in r.take(256)? {
        if let Some(op) = s.data {
            *pos += 1;
            n += 1;
            log.event(&format!("deliver {} {}", op.value, pos));
        }
    }
    Ok(n)
}

/// The wall clock minus the monotonic clock, in seconds: constant unless the wall clock steps.
fn wall_minus_mono(start: Instant) -> f64 {
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    wall - start.elapsed().as_secs_f64()
}

/// Prints `clock step <seconds>` on stderr whenever the wall clock steps by more than half a
/// second against the monotonic one: the controller counts these to see that its clock jumps
/// reached the member.
fn watch_clock(stop: &AtomicBool) {
    let start = Instant::now();
    let mut last = wall_minus_mono(start);
    while !stop.load(Ordering::Relaxed) {
        thread::sleep(Duration::from_millis(200));
        let now = wall_minus_mono(start);
        if (now - last).abs() > 0.5 {
            eprintln!("clock step {:+.1}", now - last);
        }
        last = now;
    }
}

/// See the module docs.
fn clock_probe() -> Result<()> {
    let start = Instant::now();
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lines() {
        line?;
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        writeln!(out, "{wall} {}", start.elapsed().as_nanos())?;
        out.flush()?;
    }
    Ok(())
}

fn main() -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some("--clock-probe") {
        return clock_probe();
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    let a = args()?;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&a.history)
        .with_context(|| format!("opening {}", a.history.display()))?;
    let log = Arc::new(Log(Mutex::new(file)));
    log.event("start");

    let p = DomainParticipant::new(a.domain)?;
    let topic_qos = TopicQos::default()
        .with_consistency(Consistency::Atomic)
        .with_reliability(Reliability::reliable(Duration::from_secs(1)));
    let t = p.create_topic::<Op>("JepsenLedger", topic_qos)?;
    let reader: DataReader<Op> = p.create_subscriber(Default::default())?.create_datareader(
        &t,
        DataReaderQos::from_topic(t.qos()).with_history(History::KeepAll),
    )?;
    let mut writer_qos = DataWriterQos::from_topic(t.qos()).with_history(History::KeepAll);
    if let Some(duration) = a.lifespan {
        writer_qos.lifespan = Lifespan { duration };
    }
    let writer = p
        .create_publisher(Default::default())?
        .create_datawriter(&t, writer_qos)?;

    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        thread::Builder::new()
            .name("jepsen-clock".into())
            .spawn(move || watch_clock(&stop))?;
    }
    let reading = {
        let (log, stop) = (log.clone(), stop.clone());
        thread::Builder::new()
            .name("jepsen-reader".into())
            .spawn(move || -> Result<()> {
                let mut pos = 0;
                while !stop.load(Ordering::Relaxed) {
                    if drain(&reader, &log, &mut pos)? == 0 {
                        thread::sleep(Duration::from_millis(2));
                    }
                }
                drain(&reader, &log, &mut pos)?;
                Ok(())
            })?
    };

    let (quiet_file, stop_file) = (
        with_ext(&a.control, ".quiet"),
        with_ext(&a.control, ".stop"),
    );
    let period = Duration::from_secs_f64(1.0 / a.rate);
    let payload = vec![0xA5u8; a.payload];
    let mut next = Instant::now();
    let mut n: u32 = 0;
    let reason = loop {
        if let Ok(r) = std::fs::read_to_string(&stop_file) {
            break r.trim().to_string();
        }
        if quiet_file.exists() {
            thread::sleep(Duration::from_millis(50));
            continue;
        }
        let now = Instant::now();
        if now < next {
            thread::sleep((next - now).min(Duration::from_millis(50)));
            continue;
        }
        next += period;
        if next < now {
            next = now; // after a long write (or a pause) do not burst to catch up
        }
        n += 1;
        let value = value_of(a.writer_id, n);
        log.event(&format!("invoke {value}"));
        let op = Op {
            writer: a.writer_id,
            value,
            payload: payload.clone(),
        };
        match writer.write(&op) {
            Ok(()) => log.event(&format!("ok {value}")),
            // No leader within the timeout and nothing appended: must never be delivered.
            Err(tessera::Error::Timeout) => log.event(&format!("fail {value} timeout")),
            // Indeterminate (it may still commit) and anything else: may or may not appear.
            Err(e) => log.event(&format!(
                "info {value} {}",
                e.to_string().replace('\n', " ")
            )),
        }
    };
    stop.store(true, Ordering::Relaxed);
    match reading.join() {
        Ok(r) => r?,
        Err(_) => bail!("the reader thread panicked"),
    }
    log.event(&format!("stop {reason}"));
    drop(writer);
    drop(p);
    Ok(())
}
