//! Command-line grammar of `tessera perf`, identical to `ddsperf`'s (cyclonedds-tools 0.10.2).
//!
//! Options are single letters parsed like GNU `getopt` with the option string
//! `1cd:D:i:n:k:ulLK:T:Q:R:Xh` (options may be grouped, arguments attached or separate, options
//! and mode words may be interleaved, `--` ends the options). Two long options are added
//! (tessera extensions): `--json`, `--warmup SECS` (or `--warmup=SECS`) and `--loan SIZE` (or
//! `--loan=SIZE`). The remaining words form the mode mini-language:
//!
//! ```text
//! ping [R[Hz|kHz]|inf] [size S] [waitset|listener]
//! pong [waitset|listener]
//! sub  [waitset|listener|polling]
//! pub  [R[Hz|kHz]|inf] [size S] [burst N] [X%]
//! ```
//!
//! A hand-written parser is used because the mode words are positional and context dependent
//! (a rate, a keyword with an argument, or a trigger-mode prefix such as `wait`), which does not
//! map onto a declarative argument parser. Numbers are scanned with C semantics (see
//! [`super::cnum`]) so that every argument ddsperf accepts is accepted here with the same meaning.

use std::fmt;

use super::cnum;
use super::protocol::TopicKind;

/// How the ping and pong readers are serviced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// A DATA_AVAILABLE listener (default).
    #[default]
    Listener,
    /// A thread blocked on a waitset.
    Waitset,
}

/// How the data reader is serviced (`sub` mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SubMode {
    /// A DATA_AVAILABLE listener (default).
    #[default]
    Listener,
    /// A thread blocked on a waitset.
    Waitset,
    /// A thread that takes and sleeps 1 ms whenever nothing was available.
    Polling,
}

/// When pings are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PingInterval {
    /// No `ping` mode (or `ping 0Hz`): never send pings.
    #[default]
    Never,
    /// `ping` / `ping inf`: a new ping as soon as all expected pongs arrived, with a 1 s
    /// watchdog that restarts the cycle.
    AsFastAsPossible,
    /// `ping R`: one ping every this many nanoseconds (rounded `1e9 / R`).
    Period(u64),
}

/// Publishing rate of the `pub` mode.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PubRate {
    /// Not publishing (no `pub` mode, or `pub 0`).
    #[default]
    Off,
    /// As fast as possible (`pub`, `pub inf`).
    Unlimited,
    /// This many *bursts* per second (finite, > 0).
    Hz(f64),
}

/// History of the data reader and writer (`-k`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum History {
    /// KEEP_ALL (`-k all`, `-k 0`, default).
    #[default]
    KeepAll,
    /// KEEP_LAST with this depth.
    KeepLast(i32),
}

/// `-d DEV[:BW]`: report network load of an interface.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NetloadSpec {
    /// Interface name as in `/proc/net/dev`.
    pub device: String,
    /// Nominal bandwidth in bit/s; 0 (no `:BW`) reports absolute Mb/s instead of percentages.
    pub bandwidth: f64,
}

/// `-Q rss:...`: bound on RSS growth between the first report with output after `minmatch` was
/// reached and the last report: fails if `final >= init * factor + term`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RssCriterion {
    /// Multiplicative bound (`rss:X%` sets it to `1 + X/100`); default 1.
    pub factor: f64,
    /// Additive bound in bytes (`rss:X` sets it to `X * 2^20`); default 0.
    pub term: f64,
}

/// Success criteria (`-Q`).
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Criteria {
    /// RSS growth bound, if any `rss:` criterion was given.
    pub rss: Option<RssCriterion>,
    /// `samples:N`: every data publisher seen must have delivered at least N samples.
    pub min_samples: u64,
    /// `roundtrips:N`: every pong source seen must have answered at least N times.
    pub min_roundtrips: u64,
    /// `minmatch:N`: at least N peers must have matched all expected endpoints.
    pub min_match: u32,
    /// `maxwait:DUR` (seconds): stop the run (exit 1) if `min_match` is not reached by then.
    pub max_wait: Option<f64>,
    /// `initwait:DUR` (seconds): wait for `min_match` before starting to publish; give up (exit
    /// 1) if not reached by then.
    pub init_wait: Option<f64>,
}

/// Everything `tessera perf` was asked to do.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PerfConfig {
    /// `-T`: data type of the Data/Ping/Pong topics.
    pub topic: TopicKind,
    /// `-n`: number of key values the publisher cycles through (≥ 1).
    pub nkeyvals: u32,
    /// `!-u`: reliable (true) or best-effort.
    pub reliable: bool,
    /// `-k`: data history.
    pub history: History,
    /// `-c`: subscribe to peers' CPU statistics and print them.
    pub collect_cpu_stats: bool,
    /// `-d`: network load reporting.
    pub netload: Option<NetloadSpec>,
    /// `-D`: run time limit in seconds (`None`: until SIGINT/SIGTERM/SIGHUP).
    pub duration: Option<f64>,
    /// `-i`: domain id (`None`: the default domain).
    pub domain_id: Option<u32>,
    /// `-l`: track and print latency of received data samples ("sublat" lines).
    pub sub_latency: bool,
    /// `!-L`: ignore readers/writers of the own participant (default true).
    pub ignore_local: bool,
    /// `-Q`: success criteria.
    pub criteria: Criteria,
    /// `-X`: print the extended statistics line.
    pub extended_stats: bool,
    /// `-R`: time reference (ns since the epoch) for the report timestamps; `None`: run start.
    pub time_ref: Option<i64>,
    /// `-1`: print the `sub` line every second even when nothing was received.
    pub sub_every_second: bool,
    /// `--json` (tessera extension): one JSON object per report line.
    pub json: bool,
    /// `--warmup SECS` (tessera extension): round trips completed in the first SECS seconds
    /// after the first pong are left out of the whole-run histogram (the JSON summary); the
    /// per-second lines still count them.
    pub warmup: Option<f64>,
    /// `--count N` (tessera extension): end the run once N pings past the warm-up were answered
    /// by every peer (`-D` still ends it earlier).
    pub count: Option<u64>,
    /// Ping schedule.
    pub ping: PingInterval,
    /// Trigger mode of the ping and pong readers (`ping`/`pong` modes share it).
    pub pingpong_trigger: Trigger,
    /// `sub` mode, if any.
    pub sub: Option<SubMode>,
    /// `pub` rate.
    pub pub_rate: PubRate,
    /// `pub ... burst N`: samples per burst (0 behaves as "never pause").
    pub burst: u32,
    /// `pub ... X%`: probability that a data sample doubles as a ping, as a fraction of
    /// `u32::MAX` (compare a uniform random u32 `<=` this; 0 never, `u32::MAX` always).
    pub ping_fraction: u32,
    /// Octets in the `KS` baggage sequence (`size` minus 12, 0 for the minimum).
    pub baggage: u32,
    /// `--loan SIZE` (tessera extension): samples of this many bytes, a fixed-size plain type
    /// written through loans and taken loaned (see `perf::loan`).
    pub loan: Option<u32>,
    /// `--consistency atomic` (tessera extension): the Data, Ping and Pong endpoints are ATOMIC
    /// (a consensus group per topic; `write` returns after commit). Needs a build with the
    /// `atomic` feature (`tessera-bench perf`, or `tessera` built with the crate's `atomic`
    /// feature); the default `tessera` binary refuses it.
    pub atomic: bool,
}

impl Default for PerfConfig {
    fn default() -> Self {
        PerfConfig {
            topic: TopicKind::KS,
            nkeyvals: 1,
            reliable: true,
            history: History::KeepAll,
            collect_cpu_stats: false,
            netload: None,
            duration: None,
            domain_id: None,
            sub_latency: false,
            ignore_local: true,
            criteria: Criteria::default(),
            extended_stats: false,
            time_ref: None,
            sub_every_second: false,
            json: false,
            warmup: None,
            count: None,
            ping: PingInterval::Never,
            pingpong_trigger: Trigger::Listener,
            sub: None,
            pub_rate: PubRate::Off,
            burst: 1,
            ping_fraction: 0,
            baggage: 0,
            loan: None,
            atomic: false,
        }
    }
}

impl PerfConfig {
    /// Whether a data reader exists (advertised as `R=1` in the user data).
    pub fn has_data_reader(&self) -> bool {
        self.sub.is_some()
    }

    /// Whether a publishing thread runs.
    pub fn publishes(&self) -> bool {
        !matches!(self.pub_rate, PubRate::Off)
    }

    /// Whether the ping/pong readers are serviced by waitset threads (as opposed to listeners):
    /// requested explicitly, or forced when pinging with `-L` (a local loop would otherwise
    /// recurse inside listeners).
    pub fn pingpong_uses_waitset(&self) -> bool {
        (self.ping != PingInterval::Never && !self.ignore_local)
            || self.pingpong_trigger == Trigger::Waitset
    }

    /// Reported/counted size of one sample ("size" in the report lines).
    pub fn payload_size(&self) -> u32 {
        if let Some(size) = self.loan {
            return size;
        }
        self.topic.payload_size(self.baggage)
    }

    /// Run time limit in ns, rounded as ddsperf does.
    pub fn duration_ns(&self) -> Option<i64> {
        self.duration.map(|d| (d * 1e9 + 0.5) as i64)
    }

    /// `--warmup` in ns (`None` or 0: no warm-up).
    pub fn warmup_ns(&self) -> Option<i64> {
        self.warmup
            .map(|d| (d * 1e9 + 0.5) as i64)
            .filter(|&n| n > 0)
    }

    /// `-Q maxwait` in ns.
    pub fn max_wait_ns(&self) -> Option<i64> {
        self.criteria.max_wait.map(|d| (d * 1e9 + 0.5) as i64)
    }

    /// `-Q initwait` in ns.
    pub fn init_wait_ns(&self) -> Option<i64> {
        self.criteria.init_wait.map(|d| (d * 1e9) as i64)
    }

    /// Whether a lost sample is an error at exit (reliable KEEP_ALL only).
    pub fn loss_is_error(&self) -> bool {
        self.reliable && self.history == History::KeepAll
    }
}

/// Why the command line was rejected. Every variant means exit status 3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsError {
    /// Print the usage text (on stdout), after `diagnostic` (on stderr) if any.
    Usage {
        /// A getopt-style complaint such as `prog: invalid option -- 'x'`.
        diagnostic: Option<String>,
    },
    /// A one-line complaint printed on stdout (no usage), e.g. `foo: undefined mode string`.
    Invalid(String),
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::Usage {
                diagnostic: Some(d),
            } => write!(f, "{d}"),
            ArgsError::Usage { diagnostic: None } => write!(f, "usage requested"),
            ArgsError::Invalid(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for ArgsError {}

fn invalid(msg: String) -> ArgsError {
    ArgsError::Invalid(msg)
}

/// Options taking an argument.
const OPTS_WITH_ARG: &[u8] = b"dDinkKTQR";
/// Options without an argument.
const OPTS_FLAGS: &[u8] = b"1culLXh";

/// The usage text (exit status 3 always follows it). `prog` is how the tool was invoked, e.g.
/// `tessera perf`.
pub fn usage_text(prog: &str) -> String {
    let mut s = String::new();
    s.push_str(&format!("{prog} help                (show this help)\n"));
    s.push_str(&format!("{prog} sanity              (same as: ping 1Hz)\n"));
    s.push_str(&format!("{prog} [OPTIONS] MODE...\n"));
    s.push_str(USAGE_BODY);
    s.push_str(&format!(
        "\nEXAMPLES:\n  {prog} pub size 1k & {prog} sub\n    throughput with 1 KiB samples\n  {prog} ping & {prog} pong\n    round-trip latency\n  {prog} -L -TOU -D10 pub sub\n    throughput inside one process, small keyless samples, 10 s\n"
    ));
    s
}

const USAGE_BODY: &str = "
OPTIONS:
  -L                  also match readers/writers of this process (e.g. to run
                      pub and sub, or ping and pong, in one process)
  -T KS|K32|K256|OU   data type of the topics (default KS):
                        KS   seq, key, octet sequence (\"size\" applies)
                        K32  seq, key, 24 octets (32 bytes)
                        K256 seq, key, 248 octets (256 bytes)
                        OU   seq only (no key)
     UK16|UK1024        seq and 12 or 1020 octets (no key)
     S16|S256|S4k|S32k  nested structs with junk, seq and key
                        (32, 528, 8464, 67728 bytes)
  -n N                how many key values the publisher cycles through
                      (keyed types only)
  -u                  best-effort (default: reliable)
  -k all|N            data history: keep-all (default) or keep-last N;
                      ping and pong always keep the last 1
  -c                  show the CPU statistics peers publish
  -d DEV[:BW]         show the load of network interface DEV; with BW (in
                      bit/s, e.g. eth0:1e9) as a percentage of BW
  -D DUR              stop after DUR seconds
  -Q KEY:VAL          success criterion (exit status 1 if not met):
                        rss:X%        RSS may grow by at most X percent
                        rss:X         RSS may grow by at most X MB
                        samples:N     each publisher delivered >= N samples
                        roundtrips:N  each ponging peer answered >= N pings
                        minmatch:N    >= N peers matched all endpoints
                        initwait:DUR  wait up to DUR s for minmatch peers
                                      before starting; fail if they don't
                                      show up
                        maxwait:DUR   fail if minmatch peers have not
                                      matched within DUR s
  -R TREF             print times relative to TREF (ns since the epoch)
                      instead of relative to the start of the run
  -1                  print the \"sub\" line every second, also when nothing
                      was received
  -X                  print extended statistics (retransmits, throttling)
  -l                  also measure the latency of received data (\"sublat\")
  -i ID               domain id (default: the default domain)
  --json              one JSON object per report line instead of text; the
                      final \"summary\" line carries each pong source's whole-run
                      latency histogram (\"hist\": [[value_ns, count], ...])
  --warmup SECS       leave the round trips of the first SECS seconds after
                      the first pong out of the whole-run (summary) latency
                      histogram; the per-second lines still count them
  --count N           end the run once N pings past the warm-up were answered
                      by every peer (-D still ends it earlier)
  --loan SIZE         zero-copy loans: every process of the run passes the
                      same SIZE (16, 1k, 4k, 16k, 64k, 256k, 1M or 4M bytes);
                      samples are a plain type of exactly SIZE bytes written
                      with loan()/write_loan() and taken with take_loaned(),
                      so on shared memory (TESSERA_TRANSPORTS=shm,udp4)
                      only a reference travels; a pong answers with a new
                      loan carrying the ping's number. \"size\", if given,
                      must equal SIZE; -T and -n do not apply. The receive
                      threads wait as in every run (TESSERA_WAIT=block,
                      spin:US, adaptive:US or poll)
  --consistency C     eventual (default) or atomic: the Data, Ping and Pong
                      endpoints form a consensus group per topic and a write
                      returns after commit; every process of the run passes
                      the same C; reliable only; needs a build with ATOMIC
                      consistency: tessera-bench perf, or tessera built with
                      its `atomic` feature (scripts/pgo-build --atomic)

MODE... is any sequence of:
  ping [R[Hz]] [size S] [waitset|listener]
    Without R: ping again as soon as every peer answered (and at least
    once a second). With R (Hz or kHz suffix): ping R times a second;
    0 means never. Pongs are handled by a listener (default) or a waitset.
  pong [waitset|listener]
    Every instance answers pings anyway; this only selects how pings and
    pongs are handled (shared with ping).
  sub [waitset|listener|polling]
    Receive data and report throughput and loss every second; take the
    data in a listener (default), after a waitset trigger, or by polling
    every millisecond.
  pub [R[Hz]] [size S] [burst N] [X%]
    Publish data: R bursts a second (Hz or kHz suffix; default or \"inf\":
    as fast as possible), N samples per burst (default 1). X% of the
    samples also ask for a pong, giving latency under load.

  size S sets the total payload size of the KS type (the last one given
  wins); S may carry a k, M, kB, KiB, MB or MiB suffix and must be 0 (the
  minimum, 12 bytes) or at least 12.

EXIT STATUS:
  0  success
  1  a success criterion failed: too few peers, unmatched endpoints,
     samples lost (reliable keep-all only), too few samples or round trips,
     RSS growth
  2  a DDS operation failed
  3  bad command line (also after printing this help)
";

struct Multiplier {
    suffix: &'static str,
    mult: u32,
}

const FREQ_UNITS: &[Multiplier] = &[
    Multiplier {
        suffix: "Hz",
        mult: 1,
    },
    Multiplier {
        suffix: "kHz",
        mult: 1000,
    },
];

const SIZE_UNITS: &[Multiplier] = &[
    Multiplier {
        suffix: "B",
        mult: 1,
    },
    Multiplier {
        suffix: "k",
        mult: 1024,
    },
    Multiplier {
        suffix: "M",
        mult: 1_048_576,
    },
    Multiplier {
        suffix: "kB",
        mult: 1024,
    },
    Multiplier {
        suffix: "KiB",
        mult: 1024,
    },
    Multiplier {
        suffix: "MB",
        mult: 1_048_576,
    },
    Multiplier {
        suffix: "MiB",
        mult: 1_048_576,
    },
];

/// Unit multiplier of `suffix` after skipping blanks: 1 for an empty suffix, 0 if unknown.
fn lookup_multiplier(units: Option<&[Multiplier]>, suffix: &str) -> u32 {
    let suffix = suffix.trim_start_matches(' ');
    if suffix.is_empty() {
        return 1;
    }
    units
        .and_then(|u| u.iter().find(|m| m.suffix == suffix))
        .map_or(0, |m| m.mult)
}

const MODE_WORDS: [&str; 4] = ["ping", "pong", "sub", "pub"];

fn is_mode_word(s: &str) -> bool {
    MODE_WORDS.contains(&s)
}

/// Exact match, else a unique prefix of at least 3 characters.
fn lookup_prefix<T: Copy>(table: &[(&str, T)], label: &str, word: &str) -> Result<T, ArgsError> {
    let mut found = None;
    let mut ambiguous = false;
    for (name, v) in table {
        if *name == word {
            return Ok(*v);
        }
        if word.len() >= 3 && name.len() >= 3 && name.starts_with(word) {
            if found.is_none() {
                found = Some(*v);
            } else {
                ambiguous = true;
            }
        }
    }
    if ambiguous {
        return Err(invalid(format!("{word}: ambiguous {label}specification")));
    }
    found.ok_or_else(|| invalid(format!("{word}: undefined {label}")))
}

/// A rate word: `inf[unit]` or `<double>[unit]` with unit Hz/kHz. `Some(rate)` if it is one.
fn parse_rate(word: &str) -> Option<f64> {
    if word.starts_with("inf") && lookup_multiplier(Some(FREQ_UNITS), &word[3..]) > 0 {
        return Some(f64::INFINITY);
    }
    let (r, pos) = cnum::scan_double(word)?;
    let mult = lookup_multiplier(Some(FREQ_UNITS), word.get(pos..).unwrap_or(""));
    (mult > 0).then(|| r * f64::from(mult))
}

/// `KEYWORD N[unit]`: returns `Ok(Some(value))` and advances `i` past the argument if
/// `words[*i] == keyword`.
fn simple_uint32(
    words: &[String],
    i: &mut usize,
    keyword: &str,
    units: Option<&[Multiplier]>,
) -> Result<Option<u32>, ArgsError> {
    if words[*i] != keyword {
        return Ok(None);
    }
    *i += 1;
    let Some(arg) = words.get(*i) else {
        return Err(invalid(format!(
            "argument missing in {keyword} specification"
        )));
    };
    if let Some((x, pos)) = cnum::scan_uint(arg) {
        let mult = lookup_multiplier(units, arg.get(pos..).unwrap_or(""));
        if mult > 0 {
            return Ok(Some(x.wrapping_mul(mult)));
        }
    }
    Err(invalid(format!("{arg}: invalid {keyword} specification")))
}

const PINGPONG_TRIGGERS: [(&str, Trigger); 2] = [
    ("waitset", Trigger::Waitset),
    ("listener", Trigger::Listener),
];

const SUB_MODES: [(&str, SubMode); 3] = [
    ("waitset", SubMode::Waitset),
    ("polling", SubMode::Polling),
    ("listener", SubMode::Listener),
];

fn parse_ping(cfg: &mut PerfConfig, words: &[String], i: &mut usize) -> Result<(), ArgsError> {
    cfg.ping = PingInterval::AsFastAsPossible;
    cfg.pingpong_trigger = Trigger::Listener;
    while *i < words.len() && !is_mode_word(&words[*i]) {
        let w = &words[*i];
        if let Some(rate) = parse_rate(w) {
            cfg.ping = if rate == 0.0 {
                PingInterval::Never
            } else if rate > 0.0 {
                match (1e9 / rate + 0.5) as u64 {
                    0 => PingInterval::AsFastAsPossible,
                    ns => PingInterval::Period(ns),
                }
            } else {
                return Err(invalid(format!("{w}: invalid ping rate")));
            };
        } else if let Some(size) = simple_uint32(words, i, "size", Some(SIZE_UNITS))? {
            cfg.baggage = size;
        } else {
            cfg.pingpong_trigger = lookup_prefix(&PINGPONG_TRIGGERS, "ping mode", w)?;
        }
        *i += 1;
    }
    Ok(())
}

fn parse_pong(cfg: &mut PerfConfig, words: &[String], i: &mut usize) -> Result<(), ArgsError> {
    cfg.pingpong_trigger = Trigger::Listener;
    while *i < words.len() && !is_mode_word(&words[*i]) {
        cfg.pingpong_trigger = lookup_prefix(&PINGPONG_TRIGGERS, "pong mode", &words[*i])?;
        *i += 1;
    }
    Ok(())
}

fn parse_sub(cfg: &mut PerfConfig, words: &[String], i: &mut usize) -> Result<(), ArgsError> {
    cfg.sub = Some(SubMode::Listener);
    while *i < words.len() && !is_mode_word(&words[*i]) {
        cfg.sub = Some(lookup_prefix(&SUB_MODES, "subscription mode", &words[*i])?);
        *i += 1;
    }
    Ok(())
}

fn parse_pub(cfg: &mut PerfConfig, words: &[String], i: &mut usize) -> Result<(), ArgsError> {
    cfg.pub_rate = PubRate::Unlimited;
    cfg.burst = 1;
    cfg.ping_fraction = 0;
    while *i < words.len() && !is_mode_word(&words[*i]) {
        let w = &words[*i];
        if let Some(rate) = parse_rate(w) {
            if rate < 0.0 {
                return Err(invalid(format!("{w}: invalid publish rate")));
            }
            cfg.pub_rate = if rate == f64::INFINITY {
                PubRate::Unlimited
            } else if rate > 0.0 {
                PubRate::Hz(rate)
            } else {
                // 0 or NaN: no publishing thread.
                PubRate::Off
            };
        } else if let Some(n) = simple_uint32(words, i, "burst", None)? {
            cfg.burst = n;
        } else if let Some(size) = simple_uint32(words, i, "size", Some(SIZE_UNITS))? {
            cfg.baggage = size;
        } else if let Some(pct) = cnum::scan_double(w)
            .filter(|(_, pos)| w.get(*pos..) == Some("%"))
            .map(|(r, _)| r)
        {
            // NaN passes ddsperf's range check and converts to 0.
            if !pct.is_nan() && !(0.0..=100.0).contains(&pct) {
                return Err(invalid(format!("{w}: ping fraction out of range")));
            }
            cfg.ping_fraction = (f64::from(u32::MAX) * (pct / 100.0) + 0.5) as u32;
        } else {
            // (ddsperf also has a "ping X%" form, but "ping" always starts the ping mode, so
            // that form can never be reached; it is not replicated.)
            return Err(invalid(format!("{w}: unrecognised publish specification")));
        }
        *i += 1;
    }
    Ok(())
}

fn parse_modes(cfg: &mut PerfConfig, words: &[String]) -> Result<(), ArgsError> {
    cfg.pub_rate = PubRate::Off;
    cfg.sub = None;
    cfg.pingpong_trigger = Trigger::Listener;
    cfg.ping = PingInterval::Never;
    cfg.ping_fraction = 0;
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        i += 1;
        match w {
            "ping" => parse_ping(cfg, words, &mut i)?,
            "pong" => parse_pong(cfg, words, &mut i)?,
            "sub" => parse_sub(cfg, words, &mut i)?,
            "pub" => parse_pub(cfg, words, &mut i)?,
            _ => return Err(invalid(format!("{w}: undefined mode string"))),
        }
    }
    Ok(())
}

fn apply_option(cfg: &mut PerfConfig, opt: u8, arg: Option<&str>) -> Result<(), ArgsError> {
    let arg = arg.unwrap_or("");
    match opt {
        b'1' => cfg.sub_every_second = true,
        b'c' => cfg.collect_cpu_stats = true,
        b'd' => {
            // The C code copies the argument into a 256-byte buffer first.
            let mut dev: String = arg.to_string();
            if dev.len() > 255 {
                let mut cut = 255;
                while !dev.is_char_boundary(cut) {
                    cut -= 1;
                }
                dev.truncate(cut);
            }
            let bandwidth = match dev.rfind(':') {
                None => 0.0,
                Some(col) => {
                    let bw_text = &dev[col + 1..];
                    let bw = cnum::scan_double(bw_text)
                        .filter(|(_, pos)| *pos == bw_text.len())
                        .map(|(v, _)| v);
                    match bw {
                        Some(v) if col > 0 => {
                            dev.truncate(col);
                            v
                        }
                        _ => return Err(invalid(format!("-d {arg}: expected DEVICE:BANDWIDTH"))),
                    }
                }
            };
            cfg.netload = Some(NetloadSpec {
                device: dev,
                bandwidth,
            });
        }
        b'D' => {
            let d = cnum::atof(arg);
            cfg.duration = if d > 0.0 && d.is_finite() {
                Some(d)
            } else {
                None
            };
        }
        b'i' => cfg.domain_id = Some(cnum::atoi(arg) as u32),
        b'n' => cfg.nkeyvals = cnum::atoi(arg) as u32,
        b'u' => cfg.reliable = false,
        b'k' => {
            let k = cnum::atoi(arg);
            cfg.history = if k <= 0 {
                History::KeepAll
            } else {
                History::KeepLast(k)
            };
        }
        b'l' => cfg.sub_latency = true,
        b'L' => cfg.ignore_local = false,
        b'T' => {
            cfg.topic = TopicKind::from_arg(arg)
                .ok_or_else(|| invalid(format!("-T {arg}: unknown topic")))?;
        }
        b'Q' => parse_criterion(&mut cfg.criteria, arg)?,
        b'X' => cfg.extended_stats = true,
        b'R' => match cnum::scan_i64(arg) {
            Some((t, pos)) if pos == arg.len() => cfg.time_ref = Some(t),
            _ => return Err(invalid(format!("-R {arg}: invalid reference time"))),
        },
        // 'h', 'K' (accepted by the option string but not implemented) and anything else.
        _ => return Err(ArgsError::Usage { diagnostic: None }),
    }
    Ok(())
}

/// `KEY:VALUE` with `KEY:` literal and VALUE scanned by `scan`; returns the value and the rest.
fn keyed<'a, T>(
    arg: &'a str,
    key: &str,
    scan: impl Fn(&str) -> Option<(T, usize)>,
) -> Option<(T, &'a str)> {
    let rest = arg.strip_prefix(key)?;
    let (v, pos) = scan(rest)?;
    Some((v, rest.get(pos..).unwrap_or("")))
}

fn parse_criterion(c: &mut Criteria, arg: &str) -> Result<(), ArgsError> {
    if let Some((d, rest)) = keyed(arg, "rss:", cnum::scan_double) {
        if rest.is_empty() || rest.starts_with('%') {
            let r = c.rss.get_or_insert(RssCriterion {
                factor: 1.0,
                term: 0.0,
            });
            if rest.is_empty() {
                r.term = d * 1_048_576.0;
            } else {
                r.factor = 1.0 + d / 100.0;
            }
            return Ok(());
        }
    }
    if let Some((n, "")) = keyed(arg, "samples:", cnum::scan_ulong) {
        c.min_samples = n;
        return Ok(());
    }
    if let Some((n, "")) = keyed(arg, "roundtrips:", cnum::scan_ulong) {
        c.min_roundtrips = n;
        return Ok(());
    }
    if let Some((d, "")) = keyed(arg, "maxwait:", cnum::scan_double) {
        c.max_wait = (d > 0.0 && d.is_finite()).then_some(d);
        return Ok(());
    }
    if let Some((d, "")) = keyed(arg, "initwait:", cnum::scan_double) {
        c.init_wait = (d > 0.0).then_some(d);
        return Ok(());
    }
    if let Some((n, "")) = keyed(arg, "minmatch:", cnum::scan_ulong) {
        c.min_match = n as u32;
        return Ok(());
    }
    Err(invalid(format!("-Q {arg}: invalid success criterium")))
}

/// The argument of the long option `--NAME ARG` or `--NAME=ARG` when `a` is that option (`i`
/// then points past ARG); `None` for any other word.
fn long_arg(
    prog: &str,
    name: &str,
    a: &str,
    args: &[String],
    i: &mut usize,
) -> Result<Option<String>, ArgsError> {
    let Some(rest) = a.strip_prefix("--").and_then(|r| r.strip_prefix(name)) else {
        return Ok(None);
    };
    if let Some(v) = rest.strip_prefix('=') {
        return Ok(Some(v.to_string()));
    }
    if !rest.is_empty() {
        return Ok(None);
    }
    match args.get(*i) {
        Some(v) => {
            *i += 1;
            Ok(Some(v.clone()))
        }
        None => Err(ArgsError::Usage {
            diagnostic: Some(format!("{prog}: option '--{name}' requires an argument")),
        }),
    }
}

/// Parses the arguments following `perf` (i.e. without the program name). `prog` is used in
/// getopt-style diagnostics.
pub fn parse(prog: &str, args: &[String]) -> Result<PerfConfig, ArgsError> {
    let mut cfg = PerfConfig::default();
    let mut positional: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if a == "--" {
            positional.extend(args[i..].iter().cloned());
            break;
        }
        if a == "--json" {
            cfg.json = true;
            continue;
        }
        if let Some(v) = long_arg(prog, "warmup", a, args, &mut i)? {
            match v.parse::<f64>() {
                Ok(d) if d >= 0.0 && d.is_finite() => cfg.warmup = Some(d),
                _ => return Err(invalid(format!("--warmup {v}: invalid duration"))),
            }
            continue;
        }
        if let Some(v) = long_arg(prog, "count", a, args, &mut i)? {
            match v.parse::<u64>() {
                Ok(n) if n > 0 => cfg.count = Some(n),
                _ => {
                    return Err(invalid(format!(
                        "--count {v}: invalid number of round trips"
                    )))
                }
            }
            continue;
        }
        if let Some(v) = long_arg(prog, "consistency", a, args, &mut i)? {
            cfg.atomic = match v.as_str() {
                "atomic" => true,
                "eventual" => false,
                _ => {
                    return Err(invalid(format!(
                        "--consistency {v} invalid: eventual or atomic"
                    )))
                }
            };
            continue;
        }
        if let Some(v) = long_arg(prog, "loan", a, args, &mut i)? {
            let words = ["--loan".to_string(), v];
            let size = simple_uint32(&words, &mut 0, "--loan", Some(SIZE_UNITS))?.unwrap_or(0);
            cfg.loan = Some(size);
            continue;
        }
        if a == "--help" {
            return Err(ArgsError::Usage { diagnostic: None });
        }
        if let Some(long) = a.strip_prefix("--") {
            return Err(ArgsError::Usage {
                diagnostic: Some(format!("{prog}: unrecognized option '--{long}'")),
            });
        }
        if a.len() < 2 || !a.starts_with('-') {
            positional.push(a.to_string());
            continue;
        }
        // A group of short options, e.g. "-uD10".
        let bytes = a.as_bytes();
        let mut j = 1;
        while j < bytes.len() {
            let c = bytes[j];
            j += 1;
            if OPTS_WITH_ARG.contains(&c) {
                let optarg = if j < bytes.len() {
                    // The rest of this word; `j` is at a char boundary because `c` was ASCII.
                    let v = a[j..].to_string();
                    j = bytes.len();
                    v
                } else if i < args.len() {
                    i += 1;
                    args[i - 1].clone()
                } else {
                    return Err(ArgsError::Usage {
                        diagnostic: Some(format!(
                            "{prog}: option requires an argument -- '{}'",
                            c as char
                        )),
                    });
                };
                apply_option(&mut cfg, c, Some(&optarg))?;
            } else if OPTS_FLAGS.contains(&c) {
                apply_option(&mut cfg, c, None)?;
            } else {
                let shown = a[j - 1..].chars().next().unwrap_or('?');
                return Err(ArgsError::Usage {
                    diagnostic: Some(format!("{prog}: invalid option -- '{shown}'")),
                });
            }
        }
    }

    match positional.as_slice() {
        [] => return Err(ArgsError::Usage { diagnostic: None }),
        [only] if only == "help" => return Err(ArgsError::Usage { diagnostic: None }),
        [only] if only == "sanity" => {
            parse_modes(&mut cfg, &["ping".to_string(), "1Hz".to_string()])?
        }
        words => parse_modes(&mut cfg, words)?,
    }

    if cfg.nkeyvals == 0 {
        cfg.nkeyvals = 1;
    }
    if cfg.topic == TopicKind::OU && cfg.nkeyvals != 1 {
        return Err(invalid(format!(
            "-n {} invalid: topic OU has no key",
            cfg.nkeyvals
        )));
    }
    if cfg.topic != TopicKind::KS && cfg.baggage != 0 {
        return Err(invalid(format!(
            "size {} invalid: only topic KS has a sequence",
            cfg.baggage
        )));
    }
    if cfg.baggage != 0 && cfg.baggage < 12 {
        return Err(invalid(format!(
            "size {} invalid: too small to allow for overhead",
            cfg.baggage
        )));
    }
    if cfg.atomic {
        // A consensus log is reliable by construction, and loans hand out references to one
        // host's shared memory, which a replicated log cannot carry.
        if !cfg.reliable {
            return Err(invalid(
                "--consistency atomic invalid with -u: ATOMIC endpoints are reliable".into(),
            ));
        }
        if cfg.loan.is_some() {
            return Err(invalid(
                "--consistency atomic invalid with --loan: loans are not replicated".into(),
            ));
        }
    }
    if let Some(size) = cfg.loan {
        check_loan(&cfg, size)?;
        return Ok(cfg);
    }
    if cfg.baggage > 0 {
        cfg.baggage -= 12;
    }
    Ok(cfg)
}

/// `--loan SIZE`: a size with a loan type, the default topic type, one key value, and a
/// `size` (if any) equal to SIZE (`cfg.baggage` still holds the `size` word's value).
fn check_loan(cfg: &PerfConfig, size: u32) -> Result<(), ArgsError> {
    use super::loan::{loan_sizes_text, LOAN_SIZES};
    if !LOAN_SIZES.contains(&size) {
        return Err(invalid(format!(
            "--loan {size} invalid: no loan type of that size (sizes: {})",
            loan_sizes_text()
        )));
    }
    if cfg.topic != TopicKind::KS {
        return Err(invalid(format!(
            "-T {} invalid with --loan: the loan types are fixed by the size",
            cfg.topic.suffix()
        )));
    }
    if cfg.nkeyvals != 1 {
        return Err(invalid(format!(
            "-n {} invalid with --loan: the loan types have no key",
            cfg.nkeyvals
        )));
    }
    if cfg.baggage != 0 && cfg.baggage != size {
        return Err(invalid(format!(
            "size {} invalid with --loan {size}: the loan type has {size} bytes",
            cfg.baggage
        )));
    }
    Ok(())
}

#[cfg(test)]
#[path = "args_tests.rs"]
mod tests;
