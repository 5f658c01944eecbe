//! The QoS matrix: what DDS promises for every writer × reader combination of RELIABILITY,
//! DURABILITY and HISTORY, with either side started first, checked across two processes.
//! `tests/interop/qos_matrix.sh` drives it (one writer and one reader process per cell).
//!
//! ```text
//! qos_matrix cells                    print every cell of the matrix, one per line
//! qos_matrix writer --cell CELL [opts]
//! qos_matrix reader --cell CELL [opts]
//! qos_matrix perf-writer [opts]       a writer of ddsperf's KeyedSeq data topic (see perf.rs)
//! qos_matrix perf-reader [opts]       a reader of it
//!
//! CELL         WRITER~READER@ORDER; a side is rel|be . vol|tl . k1|k8|kN|all and ORDER is
//!              rfirst (reader starts first) or wfirst (writer first: a late-joining reader)
//! --domain D   domain id (default 0)
//! --topic T    topic name (default QosMatrix)
//! --instances K         keys; sample seq s has key s % K (default 3)
//! --history-per-instance H  wfirst: samples per instance written before the reader exists (10)
//! --live N     samples written after the match (default 30)
//! --period-ms P         pause between live samples (default 10)
//! --burst B             then samples written without a pause (default 30)
//! --settle-ms S         pause before the burst, and (wfirst) between the match and the live stream (default 300)
//! --timeout SECS        give up waiting for the other side (default 10)
//! --linger SECS         writer: stay alive after reporting (default 20; the driver kills it)
//! --qos SIDE            perf roles: our side's QoS (default rel.vol.all)
//! --count N             perf-writer: samples written after the match (= --live)
//! --pre N               perf-writer: samples written before any reader exists (default 0)
//! --duration SECS       perf-reader: how long ddsperf publishes (default 3)
//! --expect-incompatible perf roles: the pair must not match
//! ```
//!
//! Each role prints `ready` once its entity exists, then a `json {...}` line with what it saw
//! and a `verdict pass` / `verdict FAIL: ...` line; the exit status is 0 on pass. The promise
//! is in `promise.rs`. Run only inside a network namespace (`scripts/netns-run`).

mod perf;
mod promise;

use promise::{Cell, Order, ReaderObs, Stream, WriterObs};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tessera::qos::TopicQos;
use tessera::{DomainParticipant, TopicType};

/// ddsperf's `KeyedSeq`, so the same binary also talks to `ddsperf` (see perf.rs). Its key is
/// must-understand, as in ddsperf's IDL compiled by Cyclone: without it the XTypes type
/// identifiers differ, and Cyclone 0.10.2 matches only after resolving our type over
/// TypeLookup — which under load sometimes did not happen within a test's run (ddsperf then
/// received nothing from a writer it had discovered: "unresolved wr type KeyedSeq").
#[derive(TopicType, Debug, Clone)]
#[topic(type_name = "KeyedSeq")]
pub(crate) struct KeyedSeq {
    pub(crate) seq: u32,
    #[key]
    #[must_understand]
    pub(crate) keyval: u32,
    pub(crate) baggage: Vec<u8>,
}

/// Command-line options shared by the roles.
pub(crate) struct Opts {
    pub(crate) cell: Option<Cell>,
    pub(crate) domain: u32,
    pub(crate) topic: String,
    pub(crate) instances: u32,
    pub(crate) history_per_instance: u32,
    pub(crate) live: u32,
    pub(crate) burst: u32,
    pub(crate) period: Duration,
    pub(crate) settle: Duration,
    pub(crate) timeout: Duration,
    pub(crate) linger: Duration,
    /// perf roles: the QoS of our side, `--qos SIDE`.
    pub(crate) side: Option<promise::Side>,
    /// perf roles: the pair must not match.
    pub(crate) expect_incompatible: bool,
    /// perf-writer: samples written before waiting for a reader.
    pub(crate) pre: u32,
    /// perf-reader: how long the foreign writer publishes.
    pub(crate) duration: Duration,
}

fn parse(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        cell: None,
        domain: 0,
        topic: "QosMatrix".into(),
        instances: 3,
        history_per_instance: 10,
        live: 30,
        burst: 30,
        period: Duration::from_millis(10),
        settle: Duration::from_millis(300),
        timeout: Duration::from_secs(10),
        linger: Duration::from_secs(20),
        side: None,
        expect_incompatible: false,
        duration: Duration::from_secs(3),
        pre: 0,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().cloned().ok_or(format!("{a} needs a value"));
        fn num<T: std::str::FromStr>(a: &str, v: String) -> Result<T, String> {
            v.parse().map_err(|_| format!("{a}: '{v}' is not a number"))
        }
        match a.as_str() {
            "--cell" => o.cell = Some(Cell::parse(&val()?)?),
            "--qos" => o.side = Some(promise::Side::parse(&val()?)?),
            "--domain" => o.domain = num(a, val()?)?,
            "--topic" => o.topic = val()?,
            "--instances" => o.instances = num::<u32>(a, val()?)?.max(1),
            "--history-per-instance" => o.history_per_instance = num(a, val()?)?,
            "--live" => o.live = num::<u32>(a, val()?)?.max(1),
            "--burst" => o.burst = num(a, val()?)?,
            "--count" => o.live = num::<u32>(a, val()?)?.max(1),
            "--period-ms" => o.period = Duration::from_millis(num(a, val()?)?),
            "--settle-ms" => o.settle = Duration::from_millis(num(a, val()?)?),
            "--timeout" => o.timeout = Duration::from_secs_f64(num(a, val()?)?),
            "--linger" => o.linger = Duration::from_secs_f64(num(a, val()?)?),
            "--duration" => o.duration = Duration::from_secs_f64(num(a, val()?)?),
            "--pre" => o.pre = num(a, val()?)?,
            "--expect-incompatible" => o.expect_incompatible = true,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

impl Opts {
    fn stream(&self, c: &Cell) -> Stream {
        let pre = match c.order {
            Order::WriterFirst => self.history_per_instance * self.instances,
            Order::ReaderFirst => 0,
        };
        Stream {
            instances: self.instances,
            pre,
            live: self.live,
            burst: self.burst,
        }
    }
}

/// Prints a line and flushes at once: the driver watches the output file.
pub(crate) fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// JSON string escaping for the few strings we print.
pub(crate) fn js(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Prints the verdict line for `problems` and returns the exit status.
pub(crate) fn verdict(problems: &[String]) -> ExitCode {
    if problems.is_empty() {
        say("verdict pass");
        ExitCode::SUCCESS
    } else {
        say(&format!("verdict FAIL: {}", problems.join("; ")));
        ExitCode::from(1)
    }
}

pub(crate) fn problems_json(problems: &[String]) -> String {
    let p: Vec<String> = problems.iter().map(|s| js(s)).collect();
    format!("[{}]", p.join(","))
}

/// Waits until `f` holds or `timeout` passes; returns whether it held.
pub(crate) fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn run_writer(o: &Opts, c: &Cell) -> tessera::Result<ExitCode> {
    let s = o.stream(c);
    let p = DomainParticipant::new(o.domain)?;
    let t = p.create_topic::<KeyedSeq>(&o.topic, TopicQos::default())?;
    let w = p
        .create_publisher(Default::default())?
        .create_datawriter(&t, c.w.writer_qos())?;
    let mut obs = WriterObs::default();
    let mut write = |seq: u32| {
        let sample = KeyedSeq {
            seq,
            keyval: seq % s.instances,
            baggage: Vec::new(),
        };
        if let Err(e) = w.write(&sample) {
            eprintln!("writer: write {seq}: {e}");
            obs.write_errors += 1;
        }
    };
    // History: written while no reader exists (the driver starts the reader after `ready`).
    for seq in 0..s.pre {
        write(seq);
    }
    say("ready");
    let appeared = wait_until(o.timeout, || {
        w.publication_matched_status().total_count > 0
            || w.offered_incompatible_qos_status().total_count > 0
    });
    let mut problems = Vec::new();
    if appeared {
        if c.order == Order::WriterFirst {
            // Lets the late joiner's history arrive before the live stream starts, so that a
            // KEEP_LAST reader is promised both.
            std::thread::sleep(o.settle);
        }
        for seq in s.pre..s.pre + s.live {
            write(seq);
            std::thread::sleep(o.period);
        }
        // The reader takes the last live samples before the burst can replace them in a
        // KEEP_LAST history: one `period` was too short on a loaded machine (a CI run's reader
        // did not take for longer, and the burst replaced the last live sample).
        if c.w.reliable {
            let _ = w.wait_for_acknowledgments(Duration::from_secs(3));
        }
        std::thread::sleep(o.settle);
        for seq in s.pre + s.live..s.total() {
            write(seq);
        }
        if c.w.reliable {
            obs.acked = Some(w.wait_for_acknowledgments(Duration::from_secs(3)).is_ok());
        }
    } else {
        problems.push(format!("no reader appeared within {:?}", o.timeout));
    }
    obs.matched_total = w.publication_matched_status().total_count;
    obs.incompatible_total = w.offered_incompatible_qos_status().total_count;
    problems.extend(promise::check_writer(c, &obs));
    say(&format!(
        "json {{\"role\":\"writer\",\"cell\":{},\"written\":{},\"history\":{},\"matched\":{},\"incompatible\":{},\"write_errors\":{},\"acked\":{},\"problems\":{}}}",
        js(&c.to_string()),
        if appeared { s.total() } else { s.pre },
        s.pre,
        obs.matched_total,
        obs.incompatible_total,
        obs.write_errors,
        obs.acked.map_or("null".to_string(), |a| a.to_string()),
        problems_json(&problems),
    ));
    let code = verdict(&problems);
    // Stay available (repairs, liveliness) until the driver stops us.
    std::thread::sleep(o.linger);
    Ok(code)
}

fn run_reader(o: &Opts, c: &Cell) -> tessera::Result<ExitCode> {
    let s = o.stream(c);
    let p = DomainParticipant::new(o.domain)?;
    let t = p.create_topic::<KeyedSeq>(&o.topic, TopicQos::default())?;
    let r = p
        .create_subscriber(Default::default())?
        .create_datareader(&t, c.r.reader_qos())?;
    say("ready");
    let mut obs = ReaderObs::default();
    let mut buf = Vec::new();
    let mut got = vec![false; s.total() as usize];
    let start = Instant::now();
    let mut end = start + o.timeout;
    let mut peer_at = None;
    // The writer's schedule after it sees us, plus time for repairs.
    let grace = if c.compatible() {
        Duration::from_millis(1500)
    } else {
        Duration::from_millis(500)
    };
    // (A settle before the live stream for a late joiner, one before the burst.)
    let window = 2 * o.settle + o.period * s.live + grace;
    loop {
        buf.clear();
        r.take_into(&mut buf, 256);
        for d in buf.iter().filter_map(|x| x.data.as_ref()) {
            obs.received.push((d.keyval, d.seq));
            if let Some(g) = got.get_mut(d.seq as usize) {
                *g = true;
            }
        }
        if peer_at.is_none()
            && (r.subscription_matched_status().total_count > 0
                || r.requested_incompatible_qos_status().total_count > 0)
        {
            let now = Instant::now();
            peer_at = Some(now - start);
            end = now + window;
        }
        if promise::reader_complete(c, &s, &got) {
            break;
        }
        if Instant::now() >= end {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    obs.matched_total = r.subscription_matched_status().total_count;
    obs.incompatible_total = r.requested_incompatible_qos_status().total_count;
    let mut problems = Vec::new();
    if peer_at.is_none() {
        problems.push(format!("no writer appeared within {:?}", o.timeout));
    }
    problems.extend(promise::check_reader(c, &s, &obs));
    let tally = promise::tally(&s, &obs);
    let mut per: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for &(k, seq) in &obs.received {
        per.entry(k).or_default().push(seq.to_string());
    }
    let per: Vec<String> = per
        .iter()
        .map(|(k, v)| format!("\"{k}\":[{}]", v.join(",")))
        .collect();
    say(&format!(
        "summary history {} live {}/{} burst {}/{} duplicates {} out-of-order {}",
        tally.history,
        tally.live,
        s.live,
        tally.burst,
        s.burst,
        tally.duplicates,
        tally.out_of_order
    ));
    say(&format!(
        "json {{\"role\":\"reader\",\"cell\":{},\"history_written\":{},\"live_written\":{},\"received\":{{{}}},\"history\":{},\"live\":{},\"burst\":{},\"duplicates\":{},\"out_of_order\":{},\"matched\":{},\"incompatible\":{},\"sample_lost\":{},\"peer_after_ms\":{},\"problems\":{}}}",
        js(&c.to_string()),
        s.pre,
        s.live,
        per.join(","),
        tally.history,
        tally.live,
        tally.burst,
        tally.duplicates,
        tally.out_of_order,
        obs.matched_total,
        obs.incompatible_total,
        r.sample_lost_status().total_count,
        peer_at.map_or("null".to_string(), |d| d.as_millis().to_string()),
        problems_json(&problems),
    ));
    Ok(verdict(&problems))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(role) = args.first() else {
        eprintln!("usage: qos_matrix cells|writer|reader|perf-writer|perf-reader [options]");
        return ExitCode::from(3);
    };
    let o = match parse(&args[1..]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("qos_matrix: {e}");
            return ExitCode::from(3);
        }
    };
    let result = match (role.as_str(), o.cell) {
        ("cells", _) => {
            for c in Cell::matrix() {
                let tag = if c.is_default_pair() { " default" } else { "" };
                say(&format!("{c}{tag}"));
            }
            return ExitCode::SUCCESS;
        }
        ("writer", Some(c)) => run_writer(&o, &c),
        ("reader", Some(c)) => run_reader(&o, &c),
        ("perf-writer", _) => perf::run_writer(&o),
        ("perf-reader", _) => perf::run_reader(&o),
        ("writer" | "reader", None) => {
            eprintln!("qos_matrix: {role} needs --cell");
            return ExitCode::from(3);
        }
        _ => {
            eprintln!("qos_matrix: unknown role {role}");
            return ExitCode::from(3);
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            say(&format!("verdict FAIL: DDS error: {e}"));
            ExitCode::from(2)
        }
    }
}
