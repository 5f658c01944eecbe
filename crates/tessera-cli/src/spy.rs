//! `tessera spy`: a live table of a domain's writers and readers with the sample rate of each
//! writer.
//!
//! ```text
//! tessera spy [-d DOMAIN] [--interval SECS] [--duration SECS] [--json]
//! ```
//!
//! Joins the domain as `tessera ls` does and, for every remote writer the built-in topics
//! show, subscribes to its topic (one best-effort, volatile reader per topic, type name,
//! key kind and partition set, of a type it knows only by name: samples are counted as bytes,
//! never decoded, so any vendor's type works). Every `--interval` seconds (1 by default) it
//! prints each writer's samples and bytes per second and the readers, redrawing the screen on
//! a terminal; `--json` prints one JSON line per interval instead. Runs until interrupted, or
//! for `--duration` seconds. A reliable writer sees spy's readers as best-effort ones: it does
//! not wait for them.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tessera::qos::{
    DataReaderQos, History, Partition, Reliability, ResourceLimits, SubscriberQos, TopicQos,
};
use tessera::rtps::cdr::CdrError;
use tessera::rtps::discovery::PublicationBuiltinTopicData;
use tessera::rtps::types::Guid;
use tessera::{DomainParticipant, StateMasks, TypeSupport, UntypedDataReader};

use crate::ls::{alive, parse_wait, start, walk_args};

/// Parsed options.
#[derive(Debug, Clone, PartialEq)]
pub struct SpyArgs {
    /// The domain id.
    pub domain: u32,
    /// Time between two tables.
    pub interval: Duration,
    /// How long to run (`None`: until interrupted).
    pub duration: Option<Duration>,
    /// JSON lines instead of tables.
    pub json: bool,
}

/// The usage text.
pub fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} [-d DOMAIN] [--interval SECS] [--duration SECS] [--json]\n\
         \n\
         A live table of the writers (with their sample rates) and readers of a domain.\n\
         \x20 -d, --domain N       domain id (default: TESSERA_DOMAIN, ROS_DOMAIN_ID, or 0)\n\
         \x20 -i, --interval SECS  time between two tables (default 1)\n\
         \x20 -t, --duration SECS  stop after this long (default: run until interrupted)\n\
         \x20 --json               one JSON line per interval\n"
    )
}

/// Parses the arguments after `spy`.
pub fn parse(args: &[String]) -> Result<SpyArgs, String> {
    let (mut interval, mut duration, mut json) = (Duration::from_secs(1), None, false);
    let domain = walk_args(args, |a, value| {
        match a {
            "-i" | "--interval" => {
                interval = parse_wait(&value()?)?.max(Duration::from_millis(100))
            }
            "-t" | "--duration" => duration = Some(parse_wait(&value()?)?),
            "--json" => json = true,
            other => return Err(format!("unknown argument {other}")),
        }
        Ok(())
    })?;
    Ok(SpyArgs {
        domain,
        interval,
        duration,
        json,
    })
}

/// A type known only by its name: samples stay bytes, all in one instance.
struct Opaque {
    name: String,
    keyed: bool,
}

impl TypeSupport for Opaque {
    fn type_name(&self) -> &str {
        &self.name
    }
    fn is_keyed(&self) -> bool {
        self.keyed
    }
    fn key_hash_of_sample(&self, _: &[u8]) -> Result<[u8; 16], CdrError> {
        Ok([0; 16])
    }
    fn key_hash_of_key(&self, _: &[u8]) -> Result<[u8; 16], CdrError> {
        Ok([0; 16])
    }
}

/// What one reader of spy follows: topic, type name, keyed, partitions.
type Follow = (String, String, bool, Vec<String>);

/// Samples and bytes counted for a writer in the current interval.
#[derive(Debug, Default, Clone, Copy)]
struct Count {
    samples: u64,
    bytes: u64,
}

struct Spy {
    p: DomainParticipant,
    readers: HashMap<Follow, UntypedDataReader>,
    counts: HashMap<[u8; 16], Count>,
}

impl Spy {
    /// Subscribes to what the writers in `pubs` publish and is not followed yet.
    fn follow(&mut self, pubs: &[PublicationBuiltinTopicData]) {
        for w in pubs {
            let keyed = w.key.entity_id.kind() != 0x03;
            let f: Follow = (
                w.topic_name.clone(),
                w.type_name.clone(),
                keyed,
                w.qos.partition.0.clone(),
            );
            if self.readers.contains_key(&f) {
                continue;
            }
            let sub = self
                .p
                .create_subscriber(SubscriberQos::default().with_partition(Partition(f.3.clone())));
            let qos = DataReaderQos::default()
                .with_reliability(Reliability::best_effort())
                .with_history(History::KeepAll)
                .with_resource_limits(ResourceLimits {
                    max_samples: Some(100_000),
                    ..ResourceLimits::default()
                });
            let support = Arc::new(Opaque {
                name: f.1.clone(),
                keyed,
            });
            let topic = self
                .p
                .create_untyped_topic(&f.0, support, TopicQos::default());
            match topic.and_then(|t| sub.and_then(|s| s.create_untyped_datareader_for(&t, qos))) {
                Ok(r) => {
                    self.readers.insert(f, r);
                }
                Err(e) => eprintln!("spy: cannot follow {}: {e}", f.0),
            }
        }
    }

    /// Takes what arrived, counting it per writer.
    fn drain(&mut self) {
        for r in self.readers.values() {
            let samples = r
                .take_serialized(100_000, StateMasks::ANY)
                .unwrap_or_default();
            for s in &samples {
                if let Some(d) = &s.data {
                    let c = self.counts.entry(s.info.publication_handle).or_default();
                    c.samples += 1;
                    c.bytes += d.as_bytes().len() as u64;
                }
            }
            r.recycle(samples.into_iter().filter_map(|s| s.data));
        }
    }
}

/// `tessera spy ARGS`; returns the exit status.
pub fn main(prog: &str, args: &[String]) -> i32 {
    let (a, p) = match start(prog, args, usage, parse, |a: &SpyArgs| a.domain) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let builtin = p.get_builtin_subscriber();
    let (pubs_r, subs_r) = (builtin.publication_reader(), builtin.subscription_reader());
    let mut spy = Spy {
        p,
        readers: HashMap::new(),
        counts: HashMap::new(),
    };
    let began = Instant::now();
    let tty = std::io::stdout().is_terminal() && !a.json;
    let mut out = std::io::stdout().lock();
    loop {
        let interval_start = Instant::now();
        spy.counts.clear();
        while interval_start.elapsed() < a.interval {
            spy.follow(&alive(&pubs_r));
            spy.drain();
            std::thread::sleep(Duration::from_millis(50));
        }
        let secs = interval_start.elapsed().as_secs_f64();
        // The built-in topics show remote endpoints only: not spy's own readers.
        let (pubs, subs) = (alive(&pubs_r), alive(&subs_r));
        let table = Table::new(&pubs, &subs, &spy.counts, secs);
        let text = if a.json {
            table.json(began.elapsed().as_secs_f64()).to_string() + "\n"
        } else {
            table.text(began.elapsed().as_secs_f64())
        };
        if tty {
            let _ = write!(out, "\x1b[2J\x1b[H");
        }
        if out
            .write_all(text.as_bytes())
            .and_then(|_| out.flush())
            .is_err()
        {
            return 0; // stdout closed (a pipe's reader left)
        }
        if a.duration.is_some_and(|d| began.elapsed() >= d) {
            return 0;
        }
    }
}

/// One interval's rows.
struct Table {
    /// (topic, type, guid, samples/s, bytes/s), by topic.
    writers: Vec<(String, String, Guid, f64, f64)>,
    /// (topic, type, guid).
    readers: Vec<(String, String, Guid)>,
}

impl Table {
    fn new(
        pubs: &[PublicationBuiltinTopicData],
        subs: &[tessera::rtps::discovery::SubscriptionBuiltinTopicData],
        counts: &HashMap<[u8; 16], Count>,
        secs: f64,
    ) -> Table {
        let mut writers: Vec<_> = pubs
            .iter()
            .map(|w| {
                let c = counts.get(&w.key.to_bytes()).copied().unwrap_or_default();
                (
                    w.topic_name.clone(),
                    w.type_name.clone(),
                    w.key,
                    c.samples as f64 / secs,
                    c.bytes as f64 / secs,
                )
            })
            .collect();
        writers.sort_by(|x, y| (&x.0, x.2).cmp(&(&y.0, y.2)));
        let mut readers: Vec<_> = subs
            .iter()
            .map(|r| (r.topic_name.clone(), r.type_name.clone(), r.key))
            .collect();
        readers.sort_by(|x, y| (&x.0, x.2).cmp(&(&y.0, y.2)));
        Table { writers, readers }
    }

    fn text(&self, t: f64) -> String {
        use std::fmt::Write as _;
        let mut topics: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for w in &self.writers {
            topics.entry(&w.0).or_default().0 += 1;
        }
        for r in &self.readers {
            topics.entry(&r.0).or_default().1 += 1;
        }
        let width = topics.keys().map(|k| k.len()).max().unwrap_or(5).max(5);
        let mut s = format!(
            "t={t:.1}s  {} writers  {} readers  {} topics\n",
            self.writers.len(),
            self.readers.len(),
            topics.len()
        );
        let _ = writeln!(
            s,
            "{:<width$}  {:<35}  {:>10}  {:>12}  TYPE",
            "TOPIC", "WRITER", "SAMPLES/S", "BYTES/S"
        );
        for w in &self.writers {
            let _ = writeln!(
                s,
                "{:<width$}  {:<35}  {:>10.1}  {:>12.0}  {}",
                w.0,
                w.2.to_string(),
                w.3,
                w.4,
                w.1
            );
        }
        let _ = writeln!(s, "{:<width$}  READER", "TOPIC");
        for r in &self.readers {
            let _ = writeln!(s, "{:<width$}  {:<35}  {}", r.0, r.2.to_string(), r.1);
        }
        s
    }

    fn json(&self, t: f64) -> serde_json::Value {
        json!({
            "t": t,
            "writers": self.writers.iter().map(|w| json!({
                "topic": w.0, "type": w.1, "guid": w.2.to_string(),
                "samples_per_s": w.3, "bytes_per_s": w.4,
            })).collect::<Vec<_>>(),
            "readers": self.readers.iter().map(|r| json!({
                "topic": r.0, "type": r.1, "guid": r.2.to_string(),
            })).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a = parse(&s(&["-d", "2", "-i", "0.5", "-t", "3", "--json"])).unwrap();
        assert_eq!(a.domain, 2);
        assert_eq!(a.interval, Duration::from_millis(500));
        assert_eq!(a.duration, Some(Duration::from_secs(3)));
        assert!(a.json);
        assert!(parse(&s(&["-i"])).is_err());
        assert!(parse(&s(&["x"])).is_err());
    }
}
