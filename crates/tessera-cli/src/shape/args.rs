//! The options of `shape_main`: what they hold, their defaults, the usage text and the parser.

use std::time::Duration;

use tessera::qos::{Durability, PresentationAccessScope};

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
