//! `tessera ls`: what is on a domain, as a person wants to see it.
//!
//! ```text
//! tessera ls [-d DOMAIN] [--wait SECS] [--json]
//! ```
//!
//! Joins the domain (the library's environment applies: `TESSERA_INTERFACE`,
//! `ROS_DISCOVERY_SERVER`, ...; the domain is `-d`, else `TESSERA_DOMAIN`, else
//! `ROS_DOMAIN_ID`, else 0), listens to the built-in topics for `--wait` seconds (2 by
//! default), and prints the participants, the topics with their types, every writer and reader
//! with its QoS, and the writer/reader pairs of a topic that do not match and why (incompatible
//! QoS, partitions, type names). `--json` prints one JSON document instead.
//!
//! A thin client of the public API: `DomainParticipant::get_builtin_subscriber`, and the
//! matching rule of the protocol core (`evaluate_match`), so what it flags is what a Tessera
//! endpoint would refuse. The participant `ls` itself creates has no endpoints and is not
//! listed. Under `ROS_DISCOVERY_SERVER` a server relays to a client only the participants
//! that share a topic with it (Fast DDS's rule, which `tessera discovery-server` follows), so
//! `ls` sees the servers alone there.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};
use tessera::qos::{
    DestinationOrder, Durability, History, LivelinessKind, Ownership, ReliabilityKind, INFINITE,
};
use tessera::rtps::discovery::{
    evaluate_match, DiscoveredReaderData, DiscoveredWriterData, MatchOutcome, NoMatchReason,
    ParticipantBuiltinTopicData, PublicationBuiltinTopicData, SubscriptionBuiltinTopicData,
};
use tessera::rtps::qos::{QosPolicyId, ReaderSideQos, WriterSideQos};
use tessera::rtps::types::{Guid, VendorId};
use tessera::{DataReader, DomainParticipant, InstanceState, TopicType};

/// Exit status for bad arguments.
pub const EXIT_BAD_ARGS: i32 = 3;
/// Exit status when the domain cannot be joined.
pub const EXIT_FAILED: i32 = 1;

/// Parsed options.
#[derive(Debug, Clone, PartialEq)]
pub struct LsArgs {
    /// The domain id.
    pub domain: u32,
    /// How long to listen before printing.
    pub wait: Duration,
    /// JSON output.
    pub json: bool,
}

/// The domain id the environment names: `TESSERA_DOMAIN`, else `ROS_DOMAIN_ID`, else 0.
pub fn domain_from_env() -> Result<u32, String> {
    for var in ["TESSERA_DOMAIN", "ROS_DOMAIN_ID"] {
        if let Ok(v) = std::env::var(var) {
            if !v.trim().is_empty() {
                return v
                    .trim()
                    .parse()
                    .map_err(|_| format!("{var}={v}: not a domain id"));
            }
        }
    }
    Ok(0)
}

/// The usage text.
pub fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} [-d DOMAIN] [--wait SECS] [--json]\n\
         \n\
         Lists the participants, topics, writers and readers of a domain, with their QoS,\n\
         and the writer/reader pairs that do not match and why.\n\
         \x20 -d, --domain N   domain id (default: TESSERA_DOMAIN, ROS_DOMAIN_ID, or 0)\n\
         \x20 -w, --wait SECS  how long to listen first (default 2)\n\
         \x20 --json           one JSON document instead of text\n"
    )
}

/// Walks the arguments of an inspection command: `-d/--domain N` is handled here (without
/// it, the environment's domain), every other argument goes to `each` with a way to take the
/// value that follows it. Returns the domain.
pub(crate) fn walk_args(
    args: &[String],
    mut each: impl FnMut(&str, &mut dyn FnMut() -> Result<String, String>) -> Result<(), String>,
) -> Result<u32, String> {
    let mut domain = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "-d" | "--domain" => {
                let v = value()?;
                domain = Some(v.parse().map_err(|_| format!("bad domain id {v}"))?);
            }
            other => each(other, &mut value)?,
        }
    }
    match domain {
        Some(d) => Ok(d),
        None => domain_from_env(),
    }
}

/// Parses the arguments after `ls`.
pub fn parse(args: &[String]) -> Result<LsArgs, String> {
    let (mut wait, mut json) = (Duration::from_secs(2), false);
    let domain = walk_args(args, |a, value| {
        match a {
            "-w" | "--wait" => wait = parse_wait(&value()?)?,
            "--json" => json = true,
            other => return Err(format!("unknown argument {other}")),
        }
        Ok(())
    })?;
    Ok(LsArgs { domain, wait, json })
}

/// The newest data of every alive instance of a built-in reader.
pub(crate) fn alive<T: TopicType>(r: &DataReader<T>) -> Vec<T> {
    r.read(100_000)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.info.instance_state == InstanceState::Alive)
        .filter_map(|s| s.data)
        .collect()
}

/// The start every inspection command shares: help, arguments, then joining `domain(&args)`.
/// `Err` is the exit status, after saying why.
pub(crate) fn start<A>(
    prog: &str,
    args: &[String],
    usage: fn(&str) -> String,
    parse: fn(&[String]) -> Result<A, String>,
    domain: fn(&A) -> u32,
) -> Result<(A, DomainParticipant), i32> {
    if args
        .iter()
        .any(|a| a == "-h" || a == "--help" || a == "help")
    {
        print!("{}", usage(prog));
        return Err(0);
    }
    let a = parse(args).map_err(|e| {
        eprintln!("{prog}: {e}");
        eprint!("{}", usage(prog));
        EXIT_BAD_ARGS
    })?;
    let d = domain(&a);
    let p = DomainParticipant::new(d).map_err(|e| {
        eprintln!("{prog}: cannot join domain {d}: {e}");
        EXIT_FAILED
    })?;
    Ok((a, p))
}

/// Parses a `--wait` value (seconds, 0 to 3600).
pub(crate) fn parse_wait(v: &str) -> Result<Duration, String> {
    let secs: f64 = v.parse().map_err(|_| format!("bad --wait {v}"))?;
    if !(0.0..=3600.0).contains(&secs) {
        return Err(format!("--wait {v}: 0 to 3600 seconds"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `tessera ls ARGS`; returns the exit status.
pub fn main(prog: &str, args: &[String]) -> i32 {
    let (a, p) = match start(prog, args, usage, parse, |a: &LsArgs| a.domain) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let snap = Snapshot::collect(&p, a.wait);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&snap.to_json()).unwrap_or_default()
        );
    } else {
        print!("{}", snap.to_text());
    }
    0
}

/// What the built-in readers held, alive entities only.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Remote participants.
    pub participants: Vec<ParticipantBuiltinTopicData>,
    /// Remote writers.
    pub writers: Vec<PublicationBuiltinTopicData>,
    /// Remote readers.
    pub readers: Vec<SubscriptionBuiltinTopicData>,
}

/// A writer and a reader of one topic that do not match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// The topic.
    pub topic: String,
    /// The writer.
    pub writer: Guid,
    /// The reader.
    pub reader: Guid,
    /// Why, one line per policy or rule.
    pub reasons: Vec<String>,
}

impl Snapshot {
    /// Waits `wait`, then reads the participant's built-in readers.
    pub fn collect(p: &DomainParticipant, wait: Duration) -> Snapshot {
        let b = p.get_builtin_subscriber();
        std::thread::sleep(wait);
        let mut s = Snapshot {
            participants: alive(&b.participant_reader()),
            writers: alive(&b.publication_reader()),
            readers: alive(&b.subscription_reader()),
        };
        s.participants.sort_by_key(|x| x.key);
        s.writers
            .sort_by(|x, y| (&x.topic_name, x.key).cmp(&(&y.topic_name, y.key)));
        s.readers
            .sort_by(|x, y| (&x.topic_name, x.key).cmp(&(&y.topic_name, y.key)));
        s
    }

    /// Topic name → (type names, writers, readers).
    fn topics(&self) -> BTreeMap<&str, (Vec<&str>, usize, usize)> {
        let mut t: BTreeMap<&str, (Vec<&str>, usize, usize)> = BTreeMap::new();
        for w in &self.writers {
            let e = t.entry(&w.topic_name).or_default();
            e.1 += 1;
            if !e.0.contains(&w.type_name.as_str()) {
                e.0.push(&w.type_name);
            }
        }
        for r in &self.readers {
            let e = t.entry(&r.topic_name).or_default();
            e.2 += 1;
            if !e.0.contains(&r.type_name.as_str()) {
                e.0.push(&r.type_name);
            }
        }
        t
    }

    /// The writer/reader pairs of a topic that do not match, and why: every pair with
    /// incompatible QoS (an error on both sides), and pairs kept apart by partitions or types
    /// when neither side matches anything else on the topic (ddsperf, for one, uses
    /// partitions on purpose to pair its endpoints).
    pub fn mismatches(&self) -> Vec<Mismatch> {
        let mut outcomes = Vec::new();
        let mut w_matched = vec![false; self.writers.len()];
        let mut r_matched = vec![false; self.readers.len()];
        for (wi, w) in self.writers.iter().enumerate() {
            let wd = DiscoveredWriterData::from(w);
            for (ri, r) in self.readers.iter().enumerate() {
                if r.topic_name != w.topic_name {
                    continue;
                }
                match evaluate_match(&wd, &DiscoveredReaderData::from(r)) {
                    MatchOutcome::Match => {
                        w_matched[wi] = true;
                        r_matched[ri] = true;
                    }
                    MatchOutcome::OtherTopic => {}
                    other => outcomes.push((wi, ri, other)),
                }
            }
        }
        let mut out = Vec::new();
        for (wi, ri, outcome) in outcomes {
            let (w, r) = (&self.writers[wi], &self.readers[ri]);
            let lonely = !w_matched[wi] && !r_matched[ri];
            let reasons = match outcome {
                MatchOutcome::Incompatible(policies) => policies
                    .iter()
                    .map(|p| explain(*p, &w.qos, &r.qos))
                    .collect(),
                _ if !lonely => continue,
                MatchOutcome::NoMatch(NoMatchReason::Partition) => vec![format!(
                    "PARTITION: writer {} / reader {} have none in common",
                    partitions(&w.qos.partition.0),
                    partitions(&r.qos.partition.0)
                )],
                MatchOutcome::NoMatch(NoMatchReason::TypeName) => vec![format!(
                    "TYPE: writer {} / reader {}",
                    w.type_name, r.type_name
                )],
                MatchOutcome::NoMatch(NoMatchReason::TypeMismatch) => vec![
                    "TYPE: the XTypes identifiers differ and the reader disallows coercion \
                     (or requires type information one side did not send)"
                        .to_string(),
                ],
                MatchOutcome::NoMatch(NoMatchReason::KeyKind) => {
                    vec!["TYPE: one side is keyed, the other keyless".to_string()]
                }
                MatchOutcome::Match | MatchOutcome::OtherTopic => continue,
            };
            out.push(Mismatch {
                topic: w.topic_name.clone(),
                writer: w.key,
                reader: r.key,
                reasons,
            });
        }
        out
    }

    /// The listing for people.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(s, "PARTICIPANTS ({})", self.participants.len());
        for p in &self.participants {
            let a = &p.announced;
            let _ = write!(s, "  {}  {}", p.key.prefix_hex(), vendor_name(a.vendor_id));
            if let Some(n) = &a.entity_name {
                let _ = write!(s, "  name \"{n}\"");
            }
            if !p.user_data.is_empty() {
                let _ = write!(s, "  user_data {}", bytes_text(&p.user_data));
            }
            let _ = writeln!(s, "  lease {}", duration(a.lease_duration));
        }
        let topics = self.topics();
        let _ = writeln!(s, "\nTOPICS ({})", topics.len());
        for (name, (types, w, r)) in &topics {
            let _ = writeln!(
                s,
                "  {name}  type {}  writers {w}  readers {r}",
                types.join(" | ")
            );
        }
        let _ = writeln!(s, "\nWRITERS ({})", self.writers.len());
        for w in &self.writers {
            let _ = writeln!(
                s,
                "  {}  {}  {}\n      {}",
                w.key,
                w.topic_name,
                w.type_name,
                writer_qos_text(&w.qos)
            );
        }
        let _ = writeln!(s, "\nREADERS ({})", self.readers.len());
        for r in &self.readers {
            let _ = writeln!(
                s,
                "  {}  {}  {}\n      {}",
                r.key,
                r.topic_name,
                r.type_name,
                reader_qos_text(&r.qos)
            );
        }
        let m = self.mismatches();
        let _ = writeln!(s, "\nNOT MATCHED ({})", m.len());
        for x in &m {
            let _ = writeln!(
                s,
                "  {}: writer {} -> reader {}",
                x.topic, x.writer, x.reader
            );
            for r in &x.reasons {
                let _ = writeln!(s, "      {r}");
            }
        }
        s
    }

    /// The listing as one JSON document.
    pub fn to_json(&self) -> Value {
        let topics: Vec<Value> = self
            .topics()
            .iter()
            .map(
                |(n, (types, w, r))| json!({"name": n, "types": types, "writers": w, "readers": r}),
            )
            .collect();
        json!({
            "participants": self.participants.iter().map(|p| json!({
                "guid": p.key.to_string(),
                "vendor": vendor_name(p.announced.vendor_id),
                "name": p.announced.entity_name,
                "user_data": String::from_utf8_lossy(&p.user_data),
                "lease_s": secs(p.announced.lease_duration),
                "unicast": p.announced.default_unicast_locators.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "topics": topics,
            "writers": self.writers.iter().map(|w| json!({
                "guid": w.key.to_string(),
                "participant": w.participant_key.to_string(),
                "topic": w.topic_name,
                "type": w.type_name,
                "type_information": w.type_information.is_some(),
                "qos": writer_qos_json(&w.qos),
            })).collect::<Vec<_>>(),
            "readers": self.readers.iter().map(|r| json!({
                "guid": r.key.to_string(),
                "participant": r.participant_key.to_string(),
                "topic": r.topic_name,
                "type": r.type_name,
                "type_information": r.type_information.is_some(),
                "qos": reader_qos_json(&r.qos),
            })).collect::<Vec<_>>(),
            "not_matched": self.mismatches().iter().map(|m| json!({
                "topic": m.topic,
                "writer": m.writer.to_string(),
                "reader": m.reader.to_string(),
                "reasons": m.reasons,
            })).collect::<Vec<_>>(),
        })
    }
}

/// A GUID prefix as 24 hex digits.
trait PrefixHex {
    fn prefix_hex(&self) -> String;
}

impl PrefixHex for Guid {
    fn prefix_hex(&self) -> String {
        self.prefix.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

fn vendor_name(v: VendorId) -> String {
    match v.0 {
        [0x01, 0x01] => "RTI Connext".into(),
        [0x01, 0x03] => "OpenDDS".into(),
        [0x01, 0x0f] => "Fast DDS".into(),
        [0x01, 0x10] => "Cyclone DDS".into(),
        [0x01, 0xa7] => "Tessera".into(),
        [a, b] => format!("vendor {a:02x}.{b:02x}"),
    }
}

/// Bytes as a quoted string when printable, else hex.
fn bytes_text(b: &[u8]) -> String {
    match std::str::from_utf8(b) {
        Ok(s) if s.chars().all(|c| !c.is_control()) => format!("\"{s}\""),
        _ => b.iter().map(|x| format!("{x:02x}")).collect(),
    }
}

fn duration(d: Duration) -> String {
    if d == INFINITE || d.as_secs() >= 0x7fff_ffff {
        "inf".into()
    } else if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) && d.subsec_nanos() % 1_000_000 == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// Seconds, `null` for infinite.
fn secs(d: Duration) -> Value {
    if d == INFINITE || d.as_secs() >= 0x7fff_ffff {
        Value::Null
    } else {
        json!(d.as_secs_f64())
    }
}

fn partitions(p: &[String]) -> String {
    if p.is_empty() {
        "[\"\"]".into()
    } else {
        format!("{p:?}")
    }
}

fn reliability(k: ReliabilityKind) -> &'static str {
    match k {
        ReliabilityKind::BestEffort => "best-effort",
        ReliabilityKind::Reliable => "reliable",
    }
}

fn durability(d: Durability) -> &'static str {
    match d {
        Durability::Volatile => "volatile",
        Durability::TransientLocal => "transient-local",
        Durability::Transient => "transient",
        Durability::Persistent => "persistent",
    }
}

fn history(h: History) -> String {
    match h {
        History::KeepLast(n) => format!("keep-last {n}"),
        History::KeepAll => "keep-all".into(),
    }
}

fn ownership(o: Ownership) -> &'static str {
    match o {
        Ownership::Shared => "shared",
        Ownership::Exclusive => "exclusive",
    }
}

fn liveliness(k: LivelinessKind) -> &'static str {
    match k {
        LivelinessKind::Automatic => "automatic",
        LivelinessKind::ManualByParticipant => "manual-by-participant",
        LivelinessKind::ManualByTopic => "manual-by-topic",
    }
}

fn order(d: DestinationOrder) -> &'static str {
    match d {
        DestinationOrder::ByReceptionTimestamp => "by-reception",
        DestinationOrder::BySourceTimestamp => "by-source",
    }
}

/// The policies both sides announce, in a common form: what the text and JSON show.
struct Common<'a> {
    reliability: ReliabilityKind,
    durability: Durability,
    history: History,
    deadline: Duration,
    latency_budget: Duration,
    liveliness: (LivelinessKind, Duration),
    ownership: Ownership,
    destination_order: DestinationOrder,
    partition: &'a [String],
    data_representation: &'a [i16],
}

fn common_w(q: &WriterSideQos) -> Common<'_> {
    Common {
        reliability: q.reliability.kind,
        durability: q.durability,
        history: q.history,
        deadline: q.deadline.period,
        latency_budget: q.latency_budget.duration,
        liveliness: (q.liveliness.kind, q.liveliness.lease_duration),
        ownership: q.ownership,
        destination_order: q.destination_order,
        partition: &q.partition.0,
        data_representation: &q.data_representation.0,
    }
}

fn common_r(q: &ReaderSideQos) -> Common<'_> {
    Common {
        reliability: q.reliability.kind,
        durability: q.durability,
        history: q.history,
        deadline: q.deadline.period,
        latency_budget: q.latency_budget.duration,
        liveliness: (q.liveliness.kind, q.liveliness.lease_duration),
        ownership: q.ownership,
        destination_order: q.destination_order,
        partition: &q.partition.0,
        data_representation: &q.data_representation.0,
    }
}

fn common_text(c: &Common<'_>) -> String {
    let mut s = format!(
        "{} {} {} partition {}",
        reliability(c.reliability),
        durability(c.durability),
        history(c.history),
        partitions(c.partition)
    );
    if c.deadline != INFINITE {
        s += &format!(" deadline {}", duration(c.deadline));
    }
    if !c.latency_budget.is_zero() {
        s += &format!(" latency-budget {}", duration(c.latency_budget));
    }
    if c.liveliness.0 != LivelinessKind::Automatic || c.liveliness.1 != INFINITE {
        s += &format!(
            " liveliness {} {}",
            liveliness(c.liveliness.0),
            duration(c.liveliness.1)
        );
    }
    if c.ownership != Ownership::Shared {
        s += &format!(" ownership {}", ownership(c.ownership));
    }
    if c.destination_order != DestinationOrder::ByReceptionTimestamp {
        s += &format!(" order {}", order(c.destination_order));
    }
    if c.data_representation != [0] {
        s += &format!(" data-representation {:?}", c.data_representation);
    }
    s
}

fn writer_qos_text(q: &WriterSideQos) -> String {
    let mut s = common_text(&common_w(q));
    if q.ownership == Ownership::Exclusive {
        s += &format!(" strength {}", q.ownership_strength.0);
    }
    if q.lifespan.duration != INFINITE {
        s += &format!(" lifespan {}", duration(q.lifespan.duration));
    }
    s
}

fn reader_qos_text(q: &ReaderSideQos) -> String {
    let mut s = common_text(&common_r(q));
    if !q.time_based_filter.minimum_separation.is_zero() {
        s += &format!(
            " time-based-filter {}",
            duration(q.time_based_filter.minimum_separation)
        );
    }
    s
}

fn common_json(c: &Common<'_>) -> Value {
    json!({
        "reliability": reliability(c.reliability),
        "durability": durability(c.durability),
        "history": history(c.history),
        "deadline_s": secs(c.deadline),
        "latency_budget_s": secs(c.latency_budget),
        "liveliness": liveliness(c.liveliness.0),
        "liveliness_lease_s": secs(c.liveliness.1),
        "ownership": ownership(c.ownership),
        "destination_order": order(c.destination_order),
        "partition": c.partition,
        "data_representation": c.data_representation,
    })
}

fn writer_qos_json(q: &WriterSideQos) -> Value {
    let mut v = common_json(&common_w(q));
    v["ownership_strength"] = json!(q.ownership_strength.0);
    v["lifespan_s"] = secs(q.lifespan.duration);
    v
}

fn reader_qos_json(q: &ReaderSideQos) -> Value {
    let mut v = common_json(&common_r(q));
    v["time_based_filter_s"] = secs(q.time_based_filter.minimum_separation);
    v
}

/// One incompatible policy, with both sides' values.
fn explain(p: QosPolicyId, w: &WriterSideQos, r: &ReaderSideQos) -> String {
    let (wc, rc) = (common_w(w), common_r(r));
    match p {
        QosPolicyId::Reliability => format!(
            "RELIABILITY: writer offers {}, reader requests {}",
            reliability(wc.reliability),
            reliability(rc.reliability)
        ),
        QosPolicyId::Durability => format!(
            "DURABILITY: writer offers {}, reader requests {}",
            durability(wc.durability),
            durability(rc.durability)
        ),
        QosPolicyId::Deadline => format!(
            "DEADLINE: writer offers {}, reader requests {} (the writer's must be shorter)",
            duration(wc.deadline),
            duration(rc.deadline)
        ),
        QosPolicyId::LatencyBudget => format!(
            "LATENCY_BUDGET: writer offers {}, reader requests {}",
            duration(wc.latency_budget),
            duration(rc.latency_budget)
        ),
        QosPolicyId::Ownership => format!(
            "OWNERSHIP: writer {}, reader {}",
            ownership(wc.ownership),
            ownership(rc.ownership)
        ),
        QosPolicyId::Liveliness => format!(
            "LIVELINESS: writer offers {} {}, reader requests {} {}",
            liveliness(wc.liveliness.0),
            duration(wc.liveliness.1),
            liveliness(rc.liveliness.0),
            duration(rc.liveliness.1)
        ),
        QosPolicyId::DestinationOrder => format!(
            "DESTINATION_ORDER: writer offers {}, reader requests {}",
            order(wc.destination_order),
            order(rc.destination_order)
        ),
        QosPolicyId::DataRepresentation => format!(
            "DATA_REPRESENTATION: writer {:?}, reader accepts {:?}",
            &wc.data_representation[..wc.data_representation.len().min(1)],
            rc.data_representation
        ),
        QosPolicyId::Presentation => format!(
            "PRESENTATION: writer offers {:?}, reader requests {:?}",
            w.presentation, r.presentation
        ),
        other => format!("{other:?}: incompatible"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera::qos::{Deadline, Partition, Reliability};
    use tessera::rtps::types::{EntityId, GuidPrefix};

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn arguments() {
        let a = parse(&args(&["-d", "7", "--wait", "0.5", "--json"])).unwrap();
        assert_eq!(a.domain, 7);
        assert_eq!(a.wait, Duration::from_millis(500));
        assert!(a.json);
        assert!(parse(&args(&["--wait"])).is_err());
        assert!(parse(&args(&["--wait", "-1"])).is_err());
        assert!(parse(&args(&["-x"])).is_err());
    }

    fn w(n: u8, topic: &str, qos: WriterSideQos) -> PublicationBuiltinTopicData {
        let g = Guid::new(GuidPrefix([n; 12]), EntityId::new(1, 2));
        (&DiscoveredWriterData::new(g, topic, "T").with_qos(qos)).into()
    }

    fn r(n: u8, topic: &str, qos: ReaderSideQos) -> SubscriptionBuiltinTopicData {
        let g = Guid::new(GuidPrefix([n; 12]), EntityId::new(1, 7));
        let mut d = DiscoveredReaderData::new(g, topic, "T");
        d.qos = qos;
        (&d).into()
    }

    #[test]
    fn mismatches_name_the_policies_and_both_values() {
        let best_effort = WriterSideQos::default().with_reliability(Reliability::best_effort());
        let reliable_reader = ReaderSideQos::default()
            .with_reliability(Reliability::reliable(Duration::from_millis(100)))
            .with_deadline(Deadline {
                period: Duration::from_millis(100),
            });
        let s = Snapshot {
            participants: Vec::new(),
            writers: vec![
                w(1, "a", best_effort),
                w(
                    2,
                    "b",
                    WriterSideQos::default().with_partition(Partition::new(["x"])),
                ),
                w(3, "c", WriterSideQos::default()),
            ],
            readers: vec![
                r(4, "a", reliable_reader),
                r(
                    5,
                    "b",
                    ReaderSideQos::default().with_partition(Partition::new(["y"])),
                ),
                r(6, "c", ReaderSideQos::default()),
            ],
        };
        let mut m = s.mismatches();
        assert_eq!(m.len(), 2, "{m:?}");
        // A partition mismatch is not flagged when each side matches someone else.
        let mut s2 = s.clone();
        s2.writers.push(w(
            7,
            "b",
            WriterSideQos::default().with_partition(Partition::new(["y"])),
        ));
        s2.readers.push(r(
            8,
            "b",
            ReaderSideQos::default().with_partition(Partition::new(["x"])),
        ));
        let m2 = s2.mismatches();
        assert_eq!(m2.len(), 1, "{m2:?}");
        assert_eq!(m2[0].topic, "a");
        m.sort_by(|x, y| x.topic.cmp(&y.topic));
        assert_eq!(m[0].topic, "a");
        assert!(m[0]
            .reasons
            .iter()
            .any(|x| x
                .starts_with("RELIABILITY: writer offers best-effort, reader requests reliable")));
        assert!(m[0]
            .reasons
            .iter()
            .any(|x| x.starts_with("DEADLINE: writer offers inf, reader requests 100ms")));
        assert_eq!(m[1].topic, "b");
        assert!(m[1].reasons[0].starts_with("PARTITION"));
        let text = s.to_text();
        assert!(text.contains("NOT MATCHED (2)"), "{text}");
        assert!(text.contains("TOPICS (3)"), "{text}");
        let j = s.to_json();
        assert_eq!(j["not_matched"].as_array().unwrap().len(), 2);
        assert_eq!(j["writers"][0]["qos"]["reliability"], "best-effort");
        assert_eq!(j["readers"][0]["qos"]["deadline_s"], 0.1);
    }
}
