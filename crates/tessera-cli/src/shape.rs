//! `tessera shape`: the OMG DDS-RTPS interoperability suite's shape application (`shape_main`),
//! so that the suite's harness can run Tessera against every other vendor.
//!
//! Same options, same ShapeType (`@appendable`, key `color`), same output lines: the harness
//! reads them from standard output (`Create topic: ...`, `Create writer for topic: ...`,
//! `on_publication_matched()`, one line per sample as `printf("%-10s %-10s %03d %03d [%d]")`,
//! instance states, listener lines). Built on the public API only. Features Tessera does not
//! have (a custom SPDP period or fragment size) print a line containing "not supported",
//! which the harness records as an unsupported feature.
//!
//! Presentation as the reference does it: with `--coherent` (or `--ordered`) and
//! `--coherent-sample-count N` the publisher opens a coherent set every N iterations
//! ("Started Coherent Set"), writes N samples per instance and topic, and closes it
//! ("Finished Coherent Set"); the subscriber's publisher and subscriber QoS carry PRESENTATION
//! with `--access-scope`, and each read pass is announced ("Reading coherent sets, iteration
//! N", "Reading with ordered access, iteration N") and bracketed by begin/end_access. At
//! GROUP scope a publisher's set spans all its topics and shows in all the subscriber's
//! readers together; with `--ordered` a pass reads the readers in the order
//! `Subscriber::get_datareaders` gives (the publisher's write order across topics).
//!
//! Statuses are polled once per write or read period rather than taken from listeners: a
//! listener set after `create_datawriter` could miss a match that happened in between, and
//! the suite only needs to see each status change once.

use std::time::{Duration, Instant};

use crate::stop;

use tessera::qos::{
    data_representation, DataReaderQos, DataRepresentation, DataWriterQos, Deadline, Durability,
    History, Lifespan, Ownership, OwnershipStrength, Partition, Presentation,
    PresentationAccessScope, PublisherQos, Reliability, SubscriberQos, TimeBasedFilter, TopicQos,
    WriterDataLifecycle,
};
use tessera::{
    DataReader, DataWriter, DomainParticipant, InstanceHandle, InstanceState, Sample, StateMasks,
    TopicType,
};

/// Exit status for bad arguments.
pub const EXIT_BAD_ARGS: i32 = 3;
/// Exit status when an entity could not be created.
pub const EXIT_FAILED: i32 = 1;

/// The suite's ShapeType: `@appendable struct ShapeType { @key string<128> color; long x;
/// long y; long shapesize; sequence<octet> additional_payload_size; }`.
#[derive(TopicType, Debug, Clone, PartialEq)]
#[topic(type_name = "ShapeType", extensibility = "appendable")]
pub struct ShapeType {
    /// The instance key.
    #[key]
    #[bound(128)]
    pub color: String,
    /// Position.
    pub x: i32,
    /// Position.
    pub y: i32,
    /// Size, or a per-sample counter with `-z 0`.
    pub shapesize: i32,
    /// Extra bytes (`--additional-payload-size`); the last one is 255. IDL `uint8`, as the
    /// suite declares it (not `octet`): Cyclone 11 refuses a type whose identifiers differ.
    #[uint8]
    pub additional_payload_size: Vec<u8>,
}

/// Where the shapes move (the reference application's drawing area).
const AREA_WIDTH: i32 = 240;
const AREA_HEIGHT: i32 = 270;

/// Which end of the exchange this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `-P`.
    Publish,
    /// `-S`.
    Subscribe,
}

/// What happens to the instances when a publisher finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinalState {
    /// `u`: unregister.
    Unregister,
    /// `d`: dispose.
    Dispose,
}

/// The options of `shape_main`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShapeArgs {
    /// `-P` or `-S`.
    pub role: Role,
    /// `-d`.
    pub domain: u32,
    /// `-b` (false) / `-r` (true, the default).
    pub reliable: bool,
    /// `-k`: history depth, 0 = KEEP_ALL (`None`: the QoS default).
    pub depth: Option<i32>,
    /// `-f`: deadline period.
    pub deadline: Option<Duration>,
    /// `-s`: ownership strength, -1 = shared.
    pub strength: i32,
    /// `-t`.
    pub topic: String,
    /// `-c`: the color written, or a filter on the color read.
    pub color: Option<String>,
    /// `-p`.
    pub partition: Option<String>,
    /// `-D`.
    pub durability: Durability,
    /// `-x`: 1 = XCDR1, 2 = XCDR2.
    pub representation: i16,
    /// `-w`: print each sample written.
    pub print_writes: bool,
    /// `-z`: the shape size, 0 = a per-sample counter.
    pub size: i32,
    /// `-R`: read instead of take.
    pub use_read: bool,
    /// `--write-period`.
    pub write_period: Duration,
    /// `--read-period`.
    pub read_period: Duration,
    /// `--time-filter`.
    pub time_filter: Option<Duration>,
    /// `--lifespan`.
    pub lifespan: Option<Duration>,
    /// `--num-iterations`.
    pub iterations: Option<u64>,
    /// `--num-instances`.
    pub instances: u32,
    /// `--num-topics`.
    pub topics: u32,
    /// `--final-instance-state`.
    pub final_state: Option<FinalState>,
    /// `--additional-payload-size`.
    pub payload: usize,
    /// `--take-read`: take()/read() instead of take_next_instance()/read_next_instance().
    pub take_read: bool,
    /// `--cft`.
    pub cft: Option<String>,
    /// `--size-modulo`.
    pub size_modulo: Option<i32>,
    /// `--coherent`: PRESENTATION coherent_access.
    pub coherent: bool,
    /// `--ordered`: PRESENTATION ordered_access.
    pub ordered: bool,
    /// `--access-scope`.
    pub access_scope: PresentationAccessScope,
    /// `--coherent-sample-count`: iterations per coherent set (0: no sets).
    pub coherent_sample_count: u64,
    /// Options naming features Tessera lacks (printed as "not supported").
    pub unsupported: Vec<String>,
}

impl Default for ShapeArgs {
    fn default() -> Self {
        ShapeArgs {
            role: Role::Publish,
            domain: 0,
            reliable: true,
            depth: None,
            deadline: None,
            strength: -1,
            topic: "Square".into(),
            color: None,
            partition: None,
            durability: Durability::Volatile,
            representation: 1,
            print_writes: false,
            size: 20,
            use_read: false,
            write_period: Duration::from_millis(33),
            read_period: Duration::from_millis(100),
            time_filter: None,
            lifespan: None,
            iterations: None,
            instances: 1,
            topics: 1,
            final_state: None,
            payload: 0,
            take_read: false,
            cft: None,
            size_modulo: None,
            coherent: false,
            ordered: false,
            access_scope: PresentationAccessScope::Instance,
            coherent_sample_count: 0,
            unsupported: Vec::new(),
        }
    }
}

/// Usage text.
pub fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} (-P | -S) [options]\n\
         \n\
         The OMG DDS-RTPS interoperability suite's shape application (shape_main).\n\
         \x20 -P / -S                 publish / subscribe\n\
         \x20 -d N                    domain (default 0)\n\
         \x20 -b / -r                 BEST_EFFORT / RELIABLE (default)\n\
         \x20 -k N                    history depth, 0 = KEEP_ALL\n\
         \x20 -f MS                   deadline period\n\
         \x20 -s N                    ownership strength, -1 = shared (default)\n\
         \x20 -t NAME                 topic (default Square)\n\
         \x20 -c COLOR                color written (default BLUE) / filter on the color read\n\
         \x20 -p NAME                 partition\n\
         \x20 -D v|l|t|p              durability\n\
         \x20 -x 1|2                  data representation XCDR1 (default) / XCDR2\n\
         \x20 -w                      print each sample written\n\
         \x20 -z N                    shape size, 0 = a per-sample counter (default 20)\n\
         \x20 -R                      read instead of take\n\
         \x20 -v e|d                  verbosity (accepted)\n\
         \x20 --write-period MS (33)  --read-period MS (100)  --time-filter MS  --lifespan MS\n\
         \x20 --num-iterations N  --num-instances N  --num-topics N\n\
         \x20 --final-instance-state u|d  --additional-payload-size BYTES  --take-read\n\
         \x20 --cft EXPRESSION  --size-modulo N\n\
         \x20 --coherent --ordered --access-scope i|t|g --coherent-sample-count N\n\
         \x20 --periodic-announcement MS --datafrag-size BYTES   (not supported)\n"
    )
}

fn millis(opt: &str, v: &str) -> Result<Duration, String> {
    v.parse::<u64>()
        .map(Duration::from_millis)
        .map_err(|_| format!("{opt}: `{v}` is not a number of milliseconds"))
}

fn number<N: std::str::FromStr>(opt: &str, v: &str) -> Result<N, String> {
    v.parse::<N>()
        .map_err(|_| format!("{opt}: `{v}` is not a number"))
}

/// Parses the options (without the program name).
pub fn parse(args: &[String]) -> Result<ShapeArgs, String> {
    let mut a = ShapeArgs::default();
    let mut role = None;
    let mut it = args.iter();
    while let Some(opt) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{opt} needs a value"))
        };
        match opt.as_str() {
            "-P" => role = Some(Role::Publish),
            "-S" => role = Some(Role::Subscribe),
            "-d" => a.domain = number(opt, &value()?)?,
            "-b" => a.reliable = false,
            "-r" => a.reliable = true,
            "-k" => a.depth = Some(number(opt, &value()?)?),
            "-f" => a.deadline = Some(millis(opt, &value()?)?),
            "-s" => a.strength = number(opt, &value()?)?,
            "-t" => a.topic = value()?,
            "-c" => a.color = Some(value()?),
            "-p" => a.partition = Some(value()?),
            "-D" => {
                a.durability = match value()?.as_str() {
                    "v" => Durability::Volatile,
                    "l" => Durability::TransientLocal,
                    "t" => Durability::Transient,
                    "p" => Durability::Persistent,
                    other => return Err(format!("-D: `{other}` is not v, l, t or p")),
                }
            }
            "-x" => {
                a.representation = match value()?.as_str() {
                    "1" => 1,
                    "2" => 2,
                    other => return Err(format!("-x: `{other}` is not 1 or 2")),
                }
            }
            "-w" => a.print_writes = true,
            "-z" => a.size = number(opt, &value()?)?,
            "-R" => a.use_read = true,
            "-v" => {
                value()?;
            }
            "--write-period" => a.write_period = millis(opt, &value()?)?,
            "--read-period" => a.read_period = millis(opt, &value()?)?,
            "--time-filter" => a.time_filter = Some(millis(opt, &value()?)?),
            "--lifespan" => a.lifespan = Some(millis(opt, &value()?)?),
            "--num-iterations" => a.iterations = Some(number(opt, &value()?)?),
            "--num-instances" => a.instances = number::<u32>(opt, &value()?)?.max(1),
            "--num-topics" => a.topics = number::<u32>(opt, &value()?)?.max(1),
            "--final-instance-state" => {
                a.final_state = Some(match value()?.as_str() {
                    "u" => FinalState::Unregister,
                    "d" => FinalState::Dispose,
                    other => {
                        return Err(format!("--final-instance-state: `{other}` is not u or d"))
                    }
                })
            }
            "--additional-payload-size" => a.payload = number(opt, &value()?)?,
            "--take-read" => a.take_read = true,
            "--cft" => a.cft = Some(value()?),
            "--size-modulo" => a.size_modulo = Some(number::<i32>(opt, &value()?)?.max(1)),
            "--coherent" => a.coherent = true,
            "--ordered" => a.ordered = true,
            "--access-scope" => {
                a.access_scope = match value()?.as_str() {
                    "i" => PresentationAccessScope::Instance,
                    "t" => PresentationAccessScope::Topic,
                    "g" => PresentationAccessScope::Group,
                    other => return Err(format!("--access-scope: `{other}` is not i, t or g")),
                }
            }
            "--coherent-sample-count" => a.coherent_sample_count = number(opt, &value()?)?,
            "--periodic-announcement" | "--datafrag-size" => {
                value()?;
                a.unsupported.push(opt.clone());
            }
            other => return Err(format!("unknown option {other}")),
        }
    }
    a.role = role.ok_or("one of -P or -S is required")?;
    if a.cft.is_some() && a.color.is_some() && a.role == Role::Subscribe {
        return Err("--cft and -c cannot be combined".into());
    }
    Ok(a)
}

/// Sleeps `d` unless a signal asks to stop first.
fn pause(d: Duration) {
    let end = Instant::now() + d;
    while !stop::requested() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Names the suite gives the k-th topic or instance: `Square`, `Square1`, `Square2`, ...
fn nth_name(base: &str, k: u32) -> String {
    if k == 0 {
        base.to_string()
    } else {
        format!("{base}{k}")
    }
}

fn topic_qos(a: &ShapeArgs) -> TopicQos {
    TopicQos::default().with_data_representation(representation(a))
}

fn representation(a: &ShapeArgs) -> DataRepresentation {
    DataRepresentation(vec![if a.representation == 1 {
        data_representation::XCDR
    } else {
        data_representation::XCDR2
    }])
}

fn reliability(a: &ShapeArgs) -> Reliability {
    if a.reliable {
        Reliability::reliable(Duration::from_millis(100))
    } else {
        Reliability::best_effort()
    }
}

fn history(a: &ShapeArgs) -> Option<History> {
    match a.depth {
        None => None,
        Some(d) if d <= 0 => Some(History::KeepAll),
        Some(d) => Some(History::KeepLast(d as u32)),
    }
}

fn presentation(a: &ShapeArgs) -> Presentation {
    Presentation {
        access_scope: a.access_scope,
        coherent_access: a.coherent,
        ordered_access: a.ordered,
    }
}

fn partition(a: &ShapeArgs) -> Partition {
    a.partition
        .as_ref()
        .map_or_else(Partition::default, |p| Partition::new([p.as_str()]))
}

/// The reference application's sample line.
fn sample_line(topic: &str, s: &ShapeType) -> String {
    let mut line = format!(
        "{:<10} {:<10} {:03} {:03} [{}]",
        topic, s.color, s.x, s.y, s.shapesize
    );
    if let Some(last) = s.additional_payload_size.last() {
        line.push_str(&format!(" {{{last}}}"));
    }
    line
}

/// `tessera shape ARGS`: runs until the iterations are done or SIGINT/SIGTERM.
pub fn main(prog: &str, args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        print!("{}", usage(prog));
        return 0;
    }
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{prog}: {e}");
            eprint!("{}", usage(prog));
            return EXIT_BAD_ARGS;
        }
    };
    if !a.unsupported.is_empty() {
        // The suite records a line with these words as an unsupported feature, not a failure.
        println!("{}: not supported by Tessera", a.unsupported.join(", "));
        return EXIT_FAILED;
    }
    crate::stop::install();
    let result = match a.role {
        Role::Publish => publish(&a),
        Role::Subscribe => subscribe(&a),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            println!("{e}");
            EXIT_FAILED
        }
    }
}

struct WriterState {
    topic: String,
    writer: DataWriter<ShapeType>,
    seen: Seen,
}

impl WriterState {
    fn report_statuses(&mut self) {
        let m = self.writer.publication_matched_status();
        let i = self.writer.offered_incompatible_qos_status();
        let d = self.writer.offered_deadline_missed_status();
        self.seen.report(
            &self.topic,
            WRITER_CALLBACKS,
            (m.total_count, m.current_count),
            (i.total_count, i.last_policy_id),
            d.total_count,
        );
    }
}

/// The listener callbacks the reference application prints, per side: matched (and what
/// matched), incompatible QoS, deadline missed.
type Callbacks = [&'static str; 4];
const WRITER_CALLBACKS: Callbacks = [
    "on_publication_matched",
    "readers",
    "on_offered_incompatible_qos",
    "on_offered_deadline_missed",
];
const READER_CALLBACKS: Callbacks = [
    "on_subscription_matched",
    "writers",
    "on_requested_incompatible_qos",
    "on_requested_deadline_missed",
];

/// The status total counts already reported.
#[derive(Default)]
struct Seen {
    matched: i32,
    incompatible: i32,
    deadline_missed: i32,
}

impl Seen {
    /// Prints a listener line for each status whose total count grew since the last call.
    fn report(
        &mut self,
        topic: &str,
        names: Callbacks,
        (matched, current): (i32, i32),
        (incompatible, policy): (i32, u32),
        deadline_missed: i32,
    ) {
        let line = |callback: &str, details: String| {
            println!("{callback}() topic: '{topic}'  type: 'ShapeType' : {details}");
        };
        if matched > self.matched {
            self.matched = matched;
            line(
                names[0],
                format!("matched {} {current} (change = 1)", names[1]),
            );
        }
        if incompatible > self.incompatible {
            self.incompatible = incompatible;
            line(names[2], format!("policy id {policy}"));
        }
        if deadline_missed > self.deadline_missed {
            self.deadline_missed = deadline_missed;
            line(names[3], format!("total count {deadline_missed}"));
        }
    }
}

/// A shape bouncing in the drawing area.
struct Motion {
    x: i32,
    y: i32,
    dx: i32,
    dy: i32,
}

impl Motion {
    fn new(seed: u32) -> Motion {
        // A small deterministic spread is enough: the suite checks sizes and order, not paths.
        let s = seed.wrapping_mul(2_654_435_761);
        Motion {
            x: (s % 200) as i32,
            y: ((s >> 8) % 200) as i32,
            dx: 1 + (s % 5) as i32,
            dy: 1 + ((s >> 4) % 5) as i32,
        }
    }

    fn step(&mut self, size: i32) {
        let (max_x, max_y) = (AREA_WIDTH - size.max(0), AREA_HEIGHT - size.max(0));
        self.x += self.dx;
        self.y += self.dy;
        if self.x < 0 || self.x > max_x {
            self.dx = -self.dx;
            self.x = self.x.clamp(0, max_x.max(0));
        }
        if self.y < 0 || self.y > max_y {
            self.dy = -self.dy;
            self.y = self.y.clamp(0, max_y.max(0));
        }
    }
}

fn publish(a: &ShapeArgs) -> Result<(), String> {
    let p = DomainParticipant::new(a.domain).map_err(|e| format!("create participant: {e}"))?;
    let publisher = p
        .create_publisher(PublisherQos {
            partition: partition(a),
            presentation: presentation(a),
            ..PublisherQos::default()
        })
        .map_err(|e| format!("create publisher: {e}"))?;
    let mut qos = DataWriterQos::default()
        .with_reliability(reliability(a))
        .with_durability(a.durability)
        .with_data_representation(representation(a));
    if let Some(h) = history(a) {
        qos = qos.with_history(h);
    }
    if let Some(d) = a.deadline {
        qos = qos.with_deadline(Deadline { period: d });
    }
    if let Some(l) = a.lifespan {
        qos = qos.with_lifespan(Lifespan { duration: l });
    }
    if a.final_state == Some(FinalState::Unregister) {
        // Unregistering is to leave the instance NOT_ALIVE_NO_WRITERS, not to dispose it
        // (the DDS default disposes an instance its writer unregisters).
        qos = qos.with_writer_data_lifecycle(WriterDataLifecycle {
            autodispose_unregistered_instances: false,
        });
    }
    if a.strength >= 0 {
        qos = qos
            .with_ownership(Ownership::Exclusive)
            .with_ownership_strength(OwnershipStrength(a.strength));
    }
    let color = a.color.clone().unwrap_or_else(|| "BLUE".into());
    let mut writers = Vec::new();
    for k in 0..a.topics {
        let name = nth_name(&a.topic, k);
        println!("Create topic: {name}");
        let topic = p
            .create_topic::<ShapeType>(&name, topic_qos(a))
            .map_err(|e| format!("failed to create topic: {e}"))?;
        println!("Create writer for topic: {name} color: {color}");
        let writer = publisher
            .create_datawriter(&topic, qos.clone())
            .map_err(|e| format!("failed to create writer: {e}"))?;
        writers.push(WriterState {
            topic: name,
            writer,
            seen: Seen::default(),
        });
    }
    let colors: Vec<String> = (0..a.instances).map(|k| nth_name(&color, k)).collect();
    let mut motions: Vec<Motion> = (0..a.instances).map(Motion::new).collect();
    let payload: Vec<u8> = if a.payload > 0 {
        let mut v = vec![0u8; a.payload];
        if let Some(last) = v.last_mut() {
            *last = 255;
        }
        v
    } else {
        Vec::new()
    };
    let mut counter: i32 = 0;
    let mut iteration: u64 = 0;
    while !stop::requested() && a.iterations.is_none_or(|n| iteration < n) {
        for w in writers.iter_mut() {
            w.report_statuses();
        }
        let size = if a.size == 0 {
            counter = counter.wrapping_add(1);
            a.size_modulo.map_or(counter, |m| (counter - 1) % m + 1)
        } else {
            a.size
        };
        let sets = a.coherent_sample_count;
        let presenting = (a.coherent || a.ordered) && sets != 0;
        if presenting && iteration % sets == 0 {
            println!("Started Coherent Set");
            if a.coherent {
                if let Err(e) = publisher.begin_coherent_changes() {
                    eprintln!("begin_coherent_changes failed: {e}");
                }
            }
        }
        for w in &writers {
            for (c, m) in colors.iter().zip(motions.iter_mut()) {
                m.step(if a.size == 0 { 0 } else { size });
                let s = ShapeType {
                    color: c.clone(),
                    x: m.x,
                    y: m.y,
                    shapesize: size,
                    additional_payload_size: payload.clone(),
                };
                match w.writer.write(&s) {
                    Ok(()) if a.print_writes => println!("{}", sample_line(&w.topic, &s)),
                    Ok(()) => {}
                    Err(e) => eprintln!("write failed: {e}"),
                }
            }
        }
        if presenting && iteration % sets == sets - 1 {
            println!("Finished Coherent Set");
            if a.coherent {
                if let Err(e) = publisher.end_coherent_changes() {
                    eprintln!("end_coherent_changes failed: {e}");
                }
            }
        }
        iteration += 1;
        pause(a.write_period);
    }
    if let Some(f) = a.final_state {
        for w in &writers {
            for c in &colors {
                let key = ShapeType {
                    color: c.clone(),
                    x: 0,
                    y: 0,
                    shapesize: 0,
                    additional_payload_size: Vec::new(),
                };
                let r = match f {
                    FinalState::Unregister => w.writer.unregister_instance(&key),
                    FinalState::Dispose => w.writer.dispose(&key),
                };
                if let Err(e) = r {
                    eprintln!("final instance state: {e}");
                }
            }
        }
        // Give the last DATA(u/d) time to leave before the participant goes away; keep
        // reporting statuses meanwhile, as the reference application does.
        pause(Duration::from_millis(500));
    }
    while !stop::requested() {
        for w in writers.iter_mut() {
            w.report_statuses();
        }
        pause(a.write_period);
    }
    Ok(())
}

struct ReaderState {
    topic: String,
    reader: DataReader<ShapeType>,
    /// The color of each instance seen with data (to name instances whose samples carry
    /// none) and the last instance state printed for it.
    colors: Vec<(InstanceHandle, String, InstanceState)>,
    seen: Seen,
}

impl ReaderState {
    fn report_statuses(&mut self) {
        let m = self.reader.subscription_matched_status();
        let i = self.reader.requested_incompatible_qos_status();
        let d = self.reader.requested_deadline_missed_status();
        self.seen.report(
            &self.topic,
            READER_CALLBACKS,
            (m.total_count, m.current_count),
            (i.total_count, i.last_policy_id),
            d.total_count,
        );
    }

    fn color_of(&self, h: InstanceHandle) -> &str {
        self.colors
            .iter()
            .find(|(k, _, _)| *k == h)
            .map_or("(unknown)", |(_, c, _)| c.as_str())
    }

    fn print(&mut self, samples: Vec<Sample<ShapeType>>) {
        // A dispose or unregister that arrives while data of the instance is still unread
        // comes as the state of those samples, not as a sample of its own: print each
        // instance's state once each time it changes, after the data lines of this pass.
        let mut changed: Vec<(InstanceHandle, InstanceState)> = Vec::new();
        for s in samples {
            let h = s.info.instance_handle;
            if let Some(d) = &s.data {
                if !self.colors.iter().any(|(k, _, _)| *k == h) {
                    self.colors.push((h, d.color.clone(), InstanceState::Alive));
                }
                println!("{}", sample_line(&self.topic, d));
            }
            match changed.iter_mut().find(|(k, _)| *k == h) {
                Some((_, last)) => *last = s.info.instance_state,
                None => changed.push((h, s.info.instance_state)),
            }
        }
        for (h, state) in changed {
            let last = self.colors.iter_mut().find(|(k, _, _)| *k == h);
            match last {
                Some((_, _, last)) if *last == state => continue,
                Some((_, _, last)) => *last = state,
                None => {}
            }
            let name = match state {
                InstanceState::NotAliveDisposed => "NOT_ALIVE_DISPOSED_INSTANCE_STATE",
                InstanceState::NotAliveNoWriters => "NOT_ALIVE_NO_WRITERS_INSTANCE_STATE",
                InstanceState::Alive => continue,
            };
            println!("{:<10} {:<10} {name}", self.topic, self.color_of(h));
        }
    }

    /// The next `n` samples in arrival order (GROUP ordered access: one run of
    /// `Subscriber::get_datareaders`).
    fn read_run(&mut self, a: &ShapeArgs, n: usize, masks: StateMasks) -> Result<(), String> {
        let got = if a.use_read {
            self.reader.read_with(n, masks)
        } else {
            self.reader.take_with(n, masks)
        }
        .map_err(|e| format!("read failed: {e}"))?;
        self.print(got);
        Ok(())
    }

    /// One read pass: every instance in turn, or everything at once with `--take-read`.
    fn read_pass(&mut self, a: &ShapeArgs) -> Result<(), String> {
        let masks = if a.use_read {
            StateMasks::NOT_READ
        } else {
            StateMasks::ANY
        };
        if a.take_read {
            let got = if a.use_read {
                self.reader.read_with(usize::MAX, masks)
            } else {
                self.reader.take_with(usize::MAX, masks)
            }
            .map_err(|e| format!("read failed: {e}"))?;
            self.print(got);
            return Ok(());
        }
        let mut previous: Option<InstanceHandle> = None;
        loop {
            let got = if a.use_read {
                self.reader.read_next_instance(previous, usize::MAX, masks)
            } else {
                self.reader.take_next_instance(previous, usize::MAX, masks)
            }
            .map_err(|e| format!("read failed: {e}"))?;
            let Some(last) = got.last() else {
                return Ok(());
            };
            previous = Some(last.info.instance_handle);
            self.print(got);
        }
    }
}

fn subscribe(a: &ShapeArgs) -> Result<(), String> {
    let p = DomainParticipant::new(a.domain).map_err(|e| format!("create participant: {e}"))?;
    let subscriber = p
        .create_subscriber(SubscriberQos {
            partition: partition(a),
            presentation: presentation(a),
            ..SubscriberQos::default()
        })
        .map_err(|e| format!("create subscriber: {e}"))?;
    let mut qos = DataReaderQos::default()
        .with_reliability(reliability(a))
        .with_durability(a.durability)
        .with_data_representation(representation(a));
    if let Some(h) = history(a) {
        qos = qos.with_history(h);
    }
    if let Some(d) = a.deadline {
        qos = qos.with_deadline(Deadline { period: d });
    }
    if let Some(t) = a.time_filter {
        qos = qos.with_time_based_filter(TimeBasedFilter {
            minimum_separation: t,
        });
    }
    if a.strength >= 0 {
        qos = qos.with_ownership(Ownership::Exclusive);
    }
    let mut readers = Vec::new();
    for k in 0..a.topics {
        let name = nth_name(&a.topic, k);
        println!("Create topic: {name}");
        let topic = p
            .create_topic::<ShapeType>(&name, topic_qos(a))
            .map_err(|e| format!("failed to create topic: {e}"))?;
        let filter = match (&a.color, &a.cft) {
            (Some(c), _) => Some(("color = %0".to_string(), vec![format!("'{c}'")])),
            (None, Some(expr)) => Some((expr.clone(), Vec::new())),
            (None, None) => None,
        };
        let reader = match filter {
            Some((expr, params)) => {
                let cft = p
                    .create_contentfilteredtopic(&format!("{name}_filtered"), &topic, &expr, params)
                    .map_err(|e| format!("failed to create content filtered topic: {e}"))?;
                println!("Create reader for topic: {name}_filtered filter: {expr}");
                subscriber.create_datareader(&cft, qos.clone())
            }
            None => {
                println!("Create reader for topic: {name}");
                subscriber.create_datareader(&topic, qos.clone())
            }
        }
        .map_err(|e| format!("failed to create reader: {e}"))?;
        readers.push(ReaderState {
            topic: name,
            reader,
            colors: Vec::new(),
            seen: Seen::default(),
        });
    }
    let mut iteration: u64 = 0;
    while !stop::requested() && a.iterations.is_none_or(|n| iteration < n) {
        if a.coherent {
            println!("Reading coherent sets, iteration {iteration}");
        }
        if a.ordered {
            println!("Reading with ordered access, iteration {iteration}");
        }
        let bracket = a.coherent || a.ordered;
        if bracket {
            subscriber
                .begin_access()
                .map_err(|e| format!("begin_access failed: {e}"))?;
        }
        for r in readers.iter_mut() {
            r.report_statuses();
        }
        if a.ordered && a.access_scope == PresentationAccessScope::Group {
            // GROUP ordered access: the readers in the order of the samples across topics,
            // each for its run of samples.
            let masks = if a.use_read {
                StateMasks::NOT_READ
            } else {
                StateMasks::ANY
            };
            let runs = subscriber
                .get_datareaders(masks)
                .map_err(|e| format!("get_datareaders failed: {e}"))?;
            for run in runs {
                if let Some(r) = readers.iter_mut().find(|r| r.reader.guid() == run.reader) {
                    r.read_run(a, run.samples, masks)?;
                }
            }
        } else {
            for r in readers.iter_mut() {
                r.read_pass(a)?;
            }
        }
        if bracket {
            subscriber
                .end_access()
                .map_err(|e| format!("end_access failed: {e}"))?;
        }
        iteration += 1;
        pause(a.read_period);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_the_suites_options() {
        let a = parse(&args(
            "-P -t Circle -c RED -d 3 -b -k 0 -f 50 -s 20 -p p1 -D l -x 1 -w -z 0 \
             --write-period 10 --num-instances 3 --num-topics 2 --final-instance-state d \
             --additional-payload-size 100 --lifespan 40 --size-modulo 4",
        ))
        .unwrap();
        assert_eq!(a.role, Role::Publish);
        assert_eq!(a.topic, "Circle");
        assert_eq!(a.color.as_deref(), Some("RED"));
        assert_eq!(a.domain, 3);
        assert!(!a.reliable);
        assert_eq!(history(&a), Some(History::KeepAll));
        assert_eq!(a.deadline, Some(Duration::from_millis(50)));
        assert_eq!(a.strength, 20);
        assert_eq!(a.durability, Durability::TransientLocal);
        assert_eq!(a.representation, 1);
        assert!(a.print_writes);
        assert_eq!(a.size, 0);
        assert_eq!(a.instances, 3);
        assert_eq!(a.topics, 2);
        assert_eq!(a.final_state, Some(FinalState::Dispose));
        assert_eq!(a.payload, 100);
        assert_eq!(a.size_modulo, Some(4));
    }

    #[test]
    fn refuses_what_the_suite_never_sends() {
        assert!(parse(&args("-t Square")).is_err(), "no role");
        assert!(parse(&args("-S -c RED --cft x>1")).is_err());
        assert!(parse(&args("-P -D q")).is_err());
        assert!(parse(&args("-P -k")).is_err());
        assert!(parse(&args("-P --bogus")).is_err());
    }

    #[test]
    fn presentation_options_are_parsed_group_scope_included() {
        let a = parse(&args(
            "-P --coherent --ordered --access-scope t --coherent-sample-count 3",
        ))
        .unwrap();
        assert!(a.unsupported.is_empty());
        assert_eq!(
            presentation(&a),
            Presentation {
                access_scope: PresentationAccessScope::Topic,
                coherent_access: true,
                ordered_access: true,
            }
        );
        assert_eq!(a.coherent_sample_count, 3);
        let g = parse(&args("-S --coherent --access-scope g")).unwrap();
        assert!(g.unsupported.is_empty());
        assert_eq!(g.access_scope, PresentationAccessScope::Group);
        assert!(parse(&args("-S --access-scope x")).is_err());
    }

    #[test]
    fn sample_line_matches_the_reference_format() {
        let s = ShapeType {
            color: "BLUE".into(),
            x: 7,
            y: 123,
            shapesize: 30,
            additional_payload_size: vec![0, 0, 255],
        };
        assert_eq!(
            sample_line("Square", &s),
            "Square     BLUE       007 123 [30] {255}"
        );
        let plain = ShapeType {
            additional_payload_size: Vec::new(),
            ..s
        };
        assert_eq!(
            sample_line("Square", &plain),
            "Square     BLUE       007 123 [30]"
        );
    }

    #[test]
    fn shape_type_has_the_suites_identifiers() {
        // Cyclone DDS 11's identifiers for the suite's IDL (xtypes.md §3).
        let ours = ShapeType::type_bundle();
        let suite = tessera::rtps::xtypes::TypeBundle::new(&tessera::rtps::xtypes::shape_type());
        assert_eq!(ours.minimal, suite.minimal);
        assert_eq!(ours.complete, suite.complete);
    }

    #[test]
    fn names_follow_the_suite() {
        assert_eq!(nth_name("Square", 0), "Square");
        assert_eq!(nth_name("Square", 2), "Square2");
    }

    #[test]
    fn shapes_stay_in_the_area() {
        let mut m = Motion::new(7);
        for _ in 0..10_000 {
            m.step(30);
            assert!((0..=AREA_WIDTH - 30).contains(&m.x));
            assert!((0..=AREA_HEIGHT - 30).contains(&m.y));
        }
    }
}
