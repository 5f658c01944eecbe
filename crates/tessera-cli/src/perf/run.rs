//! The DCPS-facing driver of `tessera perf`: entities, threads and the once-per-second main
//! loop (`docs/ddsperf-protocol.md` §4–§10 and the plan in §14).
//!
//! Threads:
//! - the participant's own receive and event threads, which also run the reader listeners
//!   (data, ping and pong handling by default, as in ddsperf);
//! - `discovery`: participant discovery events (new/gone lines, one pong writer per peer) and
//!   the endpoint-match bookkeeping of [`PeerTable`]. Listeners only *notify* it over a
//!   channel: entity creation never happens inside a listener;
//! - `pub` (with `pub`), `sub` (with `sub waitset|polling`), `ping`/`pong` (with the waitset
//!   trigger);
//! - `signals`: turns SIGINT/SIGTERM/SIGHUP into the termination guard condition;
//! - the main thread: reports, timers and the end-of-run verdict.
//!
//! Mapping of ddsperf's DCPS facilities onto the Tessera API (which has no built-in topic
//! readers): a remote endpoint's participant is the one with the same GUID prefix, so the
//! publication handle of a sample (the writer's GUID) names the peer to answer, and the
//! matched-endpoint GUID lists of our readers/writers name the peers whose endpoints matched.
//! DDS instance handles are stood in for by [`handle_of`], a 64-bit fold of the GUID.
//!
//! Known differences from ddsperf, both from the runtime: `-L` has no effect on matching
//! (Tessera never matches a reader and a writer of the same participant, so with `-L` our own
//! participant stays "unmatched"), and the `-X` line's `rexmit` counts retransmitted *samples*
//! of the data writer (Cyclone counts bytes) while `discarded`, `Trexmit`, `Tthrottle` and
//! `Nthrottle` stay 0 (no such counters are exposed per endpoint).
//!
//! Tessera extensions: `--warmup` (round trips of the first seconds after the first pong stay
//! out of the whole-run histogram), and with `--json` every line carries `"t"`: the stamped
//! lines as in the text, the event lines (participant, errors, summary) seconds since `-R` or,
//! without `-R`, since the process started. Every line is flushed as it is written.

use std::collections::HashSet;
use std::io::{Stdout, Write};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use tessera::crossbeam_channel::{self, Receiver, Sender};
use tessera::qos::{
    Consistency, DataReaderQos, DataWriterQos, DomainParticipantQos, History as QosHistory,
    Partition, PublisherQos, Reliability, ResourceLimits, SubscriberQos, TopicQos, UserData,
};
use tessera::rtps::fasthash::FastHashMap;
use tessera::rtps::types::{EntityId, Guid};
use tessera::status::{PublicationMatchedStatus, SubscriptionMatchedStatus};
use tessera::{
    DataReader, DataReaderListener, DataWriter, DataWriterListener, DomainParticipant,
    GuardCondition, ParticipantConfig, ParticipantEvent, Publisher, SampleBuffer, StateMasks,
    Subscriber, Topic, WaitSet,
};

use super::args::{History, PerfConfig, PingInterval, PubRate, SubMode};
use super::loan::{with_loan_type, LoanSample, LoanTypeFn, PerfIo};
use super::peers::PeerTable;
use super::protocol::{
    data_timestamp, guid_partition, is_ping_timestamp, one_way_latency_ns, pong_timestamp_for_data,
    pong_timestamp_for_ping, user_data, MatchMask, TopicKind, TopicRole, CPU_STATS_TOPIC,
    DATA_MAX_SAMPLES, DATA_TAKE_MAX, PINGPONG_TAKE_MAX,
};
use super::report::{
    verdict, ExtendedStats, PeerLabel, PingAnswers, ReportLine, Reporter, Stamp, VerdictInput,
};
use super::stats::{
    ClockDecimator, KeyOutOfRange, LatencyStats, PingScheduler, PubHist, PubPacer, SeqTracker,
};
use super::sysinfo::{self, CpuSampler, NetloadSampler};
use super::types::{
    CpuStats, Keyed256, Keyed32, KeyedSeq, OneULong, Struct16, Struct256, Struct32k, Struct4k,
    Unkeyed1024, Unkeyed16,
};
use super::{EXIT_BAD_ARGS, EXIT_DDS_ERROR};

mod main_loop;
mod matching;

use main_loop::{finish, main_loop};
use matching::{Discovery, DiscoveryTyped, MatchSources};

/// Cyclone's `DDS_RETCODE_TIMEOUT`, printed by `write error: ...` when a write timed out.
const RETCODE_TIMEOUT: i32 = -10;
/// Cyclone's `DDS_RETCODE_ERROR`, printed for any other write failure.
const RETCODE_ERROR: i32 = -1;
const SEC: i64 = 1_000_000_000;
/// How often the discovery thread re-checks the matched-endpoint lists without being told to.
const MATCH_RESCAN: Duration = Duration::from_millis(100);

/// Runs the benchmark described by `cfg` and returns the exit status.
pub fn run(cfg: &PerfConfig) -> i32 {
    let base = match Base::new(cfg) {
        Ok(b) => b,
        Err(code) => return code,
    };
    if let Some(size) = cfg.loan {
        /// The run with the loan type of the size.
        struct Loaned<'a>(&'a PerfConfig, Base);
        impl LoanTypeFn<i32> for Loaned<'_> {
            fn call<T: PerfIo + LoanSample>(self) -> i32 {
                run_typed::<T>(self.0, self.1)
            }
        }
        // The size was checked by the argument parser.
        return with_loan_type(size, Loaned(cfg, base)).unwrap_or(EXIT_BAD_ARGS);
    }
    match cfg.topic {
        TopicKind::KS => run_typed::<KeyedSeq>(cfg, base),
        TopicKind::K32 => run_typed::<Keyed32>(cfg, base),
        TopicKind::K256 => run_typed::<Keyed256>(cfg, base),
        TopicKind::OU => run_typed::<OneULong>(cfg, base),
        TopicKind::UK16 => run_typed::<Unkeyed16>(cfg, base),
        TopicKind::UK1024 => run_typed::<Unkeyed1024>(cfg, base),
        TopicKind::S16 => run_typed::<Struct16>(cfg, base),
        TopicKind::S256 => run_typed::<Struct256>(cfg, base),
        TopicKind::S4k => run_typed::<Struct4k>(cfg, base),
        TopicKind::S32k => run_typed::<Struct32k>(cfg, base),
    }
}

/// Wall-clock time in ns since the Unix epoch (ddsperf's `dds_time()`): source timestamps
/// and latencies use it.
fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A 64-bit stand-in for a DDS instance handle of the entity with this GUID.
fn handle_of(guid: &[u8; 16]) -> u64 {
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    a.copy_from_slice(&guid[..8]);
    b.copy_from_slice(&guid[8..]);
    u64::from_be_bytes(a) ^ u64::from_be_bytes(b).rotate_left(32)
}

/// The GUID of the participant owning the endpoint `guid`.
fn participant_guid(guid: &[u8; 16]) -> [u8; 16] {
    let mut p = *guid;
    p[12..].copy_from_slice(&EntityId::PARTICIPANT.0);
    p
}

fn participant_handle_of(endpoint: &[u8; 16]) -> u64 {
    handle_of(&participant_guid(endpoint))
}

fn prefix_of(guid: &[u8; 16]) -> [u8; 12] {
    let mut p = [0u8; 12];
    p.copy_from_slice(&guid[..12]);
    p
}

/// Locks a mutex, ignoring poisoning (a panicking thread already ended the run's usefulness,
/// and the state it guards stays consistent enough for the final report).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A small xorshift generator for the `pub ... X%` ping flag (quality is irrelevant here).
struct Rng(u64);

impl Rng {
    fn new() -> Self {
        let seed = (now_ns() as u64) ^ (u64::from(sysinfo::pid()) << 32) | 1;
        Rng(seed)
    }

    fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        (x >> 32) as u32
    }
}

/// A pong source: one remote pong writer whose answers we measured.
struct PongSource {
    handle: u64,
    participant: u64,
    stats: LatencyStats,
}

/// State shared by every thread and listener of one run: the part that does not depend on the
/// sample type ([`Shared`], reached through `Deref`) and the typed writers.
///
/// The split keeps the type-independent code (the main loop, the reports, the verdict) out of
/// the ten monomorphized copies of the run, one per `-T` type: a smaller `tessera` binary, whose
/// text is most of its resident memory.
struct Ctx<T: PerfIo> {
    shared: Shared,
    ping_writer: DataWriter<T>,
    /// Pong writer per peer participant, by GUID prefix.
    pong_writers: RwLock<FastHashMap<[u8; 12], DataWriter<T>>>,
    /// The data writer (for the `-X` retransmit counter).
    data_writer: DataWriter<T>,
}

impl<T: PerfIo> std::ops::Deref for Ctx<T> {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// What the type-independent code needs from the typed half of [`Ctx`].
trait Typed {
    /// Sends a ping with sequence number `seq`.
    fn send_ping(&self, seq: u32);
    /// The data writer's retransmitted samples (`-X`).
    fn retransmitted_samples(&self) -> u64;
}

impl<T: PerfIo> Typed for Ctx<T> {
    fn send_ping(&self, seq: u32) {
        Ctx::send_ping(self, seq);
    }

    fn retransmitted_samples(&self) -> u64 {
        self.data_writer.retransmitted_samples()
    }
}

/// The type-independent state of a run.
struct Shared {
    cfg: PerfConfig,
    pid: u32,
    out: Mutex<Reporter<Stdout>>,
    /// Set (with `guard`) to end the run; shared with the signal thread, which must not hold
    /// the whole context (that would keep the participant alive past the end of the run).
    stop: Arc<AtomicBool>,
    guard: GuardCondition,
    peers: Mutex<PeerTable>,
    ping: Mutex<PingScheduler>,
    pongs: Mutex<Vec<PongSource>>,
    seq: Mutex<SeqTracker>,
    pubhist: Mutex<PubHist>,
    /// Wakes the discovery thread when any of our endpoints (un)matched.
    matched: Sender<()>,
    /// Whether the data listener processes data (switched on after `initwait`).
    data_on: AtomicBool,
    /// Time reference (ns) of the `"t"` of JSON event lines: `-R`, else the process start.
    t_events_ref: i64,
    /// When the first pong arrived (ns; 0: none yet), for `--warmup`.
    first_pong: AtomicI64,
    /// Per ping, its first and last answers (1-to-N) and the pings counted for `--count`.
    answers: Mutex<Answers>,
}

/// What a pinger knows of its pings' answers: the first pong of the current ping, and per
/// measured ping (past the warm-up, answered by every peer) the one-way time to its first
/// pong and to its last.
struct Answers {
    /// The current ping's sequence number and its first pong's one-way latency (ns).
    current: Option<(u32, i64)>,
    first: LatencyStats,
    all: LatencyStats,
    pings: u64,
}

impl Answers {
    fn new() -> Self {
        Answers {
            current: None,
            first: LatencyStats::new(),
            all: LatencyStats::new(),
            pings: 0,
        }
    }

    /// A pong of the current ping `seq` with one-way latency `ns`; `completed`: it was the
    /// last one expected; `measured`: past the warm-up. Returns the measured pings so far.
    fn on_pong(&mut self, seq: u32, ns: i64, completed: bool, measured: bool) -> u64 {
        if self.current.map(|(s, _)| s) != Some(seq) {
            self.current = Some((seq, ns));
        }
        if completed && measured {
            let first = self.current.map_or(ns, |(_, f)| f);
            self.first.record(first);
            self.all.record(ns);
            self.pings += 1;
        }
        self.pings
    }
}

impl Shared {
    /// Prints one line right away (event lines from any thread). Returns whether something was
    /// printed.
    fn emit(&self, line: &ReportLine) -> bool {
        let t = (now_ns() - self.t_events_ref) as f64 / 1e9;
        lock(&self.out).emit_at(line, t).unwrap_or(false)
    }

    /// Whether a round trip completed at `now` counts in the whole-run histogram (false
    /// during the `--warmup` seconds after the first pong).
    fn past_warmup(&self, now: i64) -> bool {
        let Some(w) = self.cfg.warmup_ns() else {
            return true;
        };
        let first =
            match self
                .first_pong
                .compare_exchange(0, now, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => now,
                Err(f) => f,
            };
        now >= first.saturating_add(w)
    }

    fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.guard.set_trigger_value(true);
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    fn key_out_of_range(&self, k: KeyOutOfRange) -> ! {
        self.emit(&ReportLine::KeyOutOfRange(k));
        let _ = std::io::stdout().flush();
        std::process::exit(EXIT_BAD_ARGS);
    }
}

impl<T: PerfIo> Ctx<T> {
    /// Flushes the batch after a ping/pong write that succeeded.
    fn flush_ok(w: &DataWriter<T>, r: tessera::Result<()>) {
        if r.is_ok() {
            w.flush();
        }
    }

    /// Answers a sample from the writer `writer_guid` on the pong writer for its participant;
    /// nothing if that participant is not (yet) a known peer.
    ///
    /// Writes under the map's read lock rather than on a clone: this runs in a listener, inside
    /// the participant's receive path, and a clone could become the writer's last handle (the
    /// peer was just lost, or the run is ending) whose drop there deletes the writer and
    /// deadlocks on the participant's endpoint table. Pong writers are KEEP_LAST(1), so
    /// writing never blocks while the lock is held; writers are dropped only after they leave
    /// the map ([`Ctx::remove_pong_writers`]).
    fn answer(&self, writer_guid: &[u8; 16], sample: &T::Item, ts: i64) {
        let writers = self.pong_writers.read().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = writers.get(&prefix_of(writer_guid)) {
            Self::flush_ok(w, T::echo(w, sample, ts));
        }
    }

    /// Adds the pong writer for the peer `prefix`; one it replaces is dropped after the map's
    /// lock is released (see [`Ctx::remove_pong_writers`]).
    fn add_pong_writer(&self, prefix: [u8; 12], w: DataWriter<T>) {
        let old = self
            .pong_writers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(prefix, w);
        drop(old);
    }

    /// Takes the pong writers out of the map (all, or the one of `prefix`) and returns them, so
    /// that the caller drops them with no lock held (deleting a writer takes the participant's
    /// endpoint table, which a listener in [`Ctx::answer`] holds while waiting for the map).
    fn remove_pong_writers(&self, prefix: Option<&[u8; 12]>) -> Vec<DataWriter<T>> {
        let mut map = self.pong_writers.write().unwrap_or_else(|e| e.into_inner());
        match prefix {
            Some(p) => map.remove(p).into_iter().collect(),
            None => map.drain().map(|(_, w)| w).collect(),
        }
    }

    /// Takes up to [`DATA_TAKE_MAX`] data samples and accounts them; answers those flagged as
    /// pings. Returns how many samples were taken.
    fn process_data(&self, reader: &DataReader<T>, buf: &mut SampleBuffer<T::Item>) -> usize {
        buf.clear();
        let mut any_ping = false;
        let n;
        {
            // Take under the tracker's lock, so that batches taken by concurrent callers
            // (two receive threads, or the start-up drain) are accounted in order.
            let mut seq = lock(&self.seq);
            n = T::take(reader, buf, DATA_TAKE_MAX);
            if n == 0 {
                return 0;
            }
            let now = now_ns();
            for s in buf.iter() {
                let Some(d) = s.data.as_ref().map(T::data) else {
                    continue;
                };
                let ts = s.info.source_timestamp;
                let w = &s.info.publication_handle;
                let r = seq.on_sample(
                    handle_of(w),
                    d.seq(),
                    d.keyval(),
                    d.size(),
                    now - ts,
                    || Some(participant_handle_of(w)),
                );
                if let Err(k) = r {
                    drop(seq);
                    self.key_out_of_range(k);
                }
                any_ping |= is_ping_timestamp(ts);
            }
        }
        if any_ping {
            for s in buf.iter() {
                let ts = s.info.source_timestamp;
                if let (Some(d), true) = (&s.data, is_ping_timestamp(ts)) {
                    self.answer(&s.info.publication_handle, d, pong_timestamp_for_data(ts));
                }
            }
        }
        n
    }

    /// Takes pings and answers each on the pong writer for its sender.
    fn process_ping(&self, reader: &DataReader<T>, buf: &mut SampleBuffer<T::Item>) -> usize {
        let n = T::take(reader, buf, PINGPONG_TAKE_MAX);
        for s in buf.iter() {
            if let Some(d) = &s.data {
                self.answer(
                    &s.info.publication_handle,
                    d,
                    pong_timestamp_for_ping(s.info.source_timestamp),
                );
            }
        }
        n
    }

    /// Takes pongs: records the latency per pong writer and, in as-fast-as-possible mode,
    /// sends the next ping once every peer answered.
    fn process_pong(&self, reader: &DataReader<T>, buf: &mut SampleBuffer<T::Item>) -> usize {
        let n = T::take(reader, buf, PINGPONG_TAKE_MAX);
        if n == 0 {
            return 0;
        }
        let now = now_ns();
        let overall = self.past_warmup(now);
        for s in buf.iter_mut() {
            let ts = s.info.source_timestamp;
            let w = s.info.publication_handle;
            let Some(d) = s.data.as_mut() else { continue };
            let ns = one_way_latency_ns(now, ts);
            {
                let h = handle_of(&w);
                let mut pongs = lock(&self.pongs);
                let idx = match pongs.iter().position(|p| p.handle == h) {
                    Some(i) => i,
                    None => {
                        pongs.push(PongSource {
                            handle: h,
                            participant: participant_handle_of(&w),
                            stats: LatencyStats::new(),
                        });
                        pongs.len() - 1
                    }
                };
                pongs[idx].stats.record_with(ns, overall);
            }
            let seq = T::data(d).seq();
            let (current, next) = {
                let mut sched = lock(&self.ping);
                let current = is_ping_timestamp(ts) && seq == sched.current_seq();
                (current, sched.on_pong(is_ping_timestamp(ts), seq, now))
            };
            if current {
                let pings = lock(&self.answers).on_pong(seq, ns, next.is_some(), overall);
                if self.cfg.count.is_some_and(|n| pings >= n) {
                    self.request_stop();
                    continue;
                }
            }
            if let Some(seq) = next {
                let w = &self.ping_writer;
                Self::flush_ok(w, T::write_next(w, d, seq, now_ns() | 1));
            }
        }
        n
    }

    /// Sends a ping with sequence number `seq` (from the main loop's timer).
    fn send_ping(&self, seq: u32) {
        let mut t = T::template(self.cfg.baggage);
        let w = &self.ping_writer;
        Self::flush_ok(w, T::write_new(w, &mut t, seq, 0, now_ns() | 1));
    }
}

/// Which reader a listener or service thread handles.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ReaderRole {
    Data,
    Ping,
    Pong,
}

fn process<T: PerfIo>(
    ctx: &Ctx<T>,
    role: ReaderRole,
    reader: &DataReader<T>,
    buf: &mut SampleBuffer<T::Item>,
) -> usize {
    match role {
        ReaderRole::Data => ctx.process_data(reader, buf),
        ReaderRole::Ping => ctx.process_ping(reader, buf),
        ReaderRole::Pong => ctx.process_pong(reader, buf),
    }
}

/// Reader listener: handles data when `handle_data` (listener trigger mode; for the data
/// reader only once `Ctx::data_on` is set) and always tells the discovery thread about
/// matches.
struct ReaderListener<T: PerfIo> {
    ctx: Arc<Ctx<T>>,
    role: ReaderRole,
    handle_data: bool,
    buf: Mutex<SampleBuffer<T::Item>>,
}

impl<T: PerfIo> DataReaderListener<T> for ReaderListener<T> {
    fn on_data_available(&self, reader: &DataReader<T>) {
        if !self.handle_data
            || (self.role == ReaderRole::Data && !self.ctx.data_on.load(Ordering::Acquire))
        {
            return;
        }
        let mut buf = lock(&self.buf);
        process(&self.ctx, self.role, reader, &mut buf);
    }

    fn on_subscription_matched(&self, _reader: &DataReader<T>, _s: SubscriptionMatchedStatus) {
        let _ = self.ctx.matched.try_send(());
    }
}

/// Writer listener: tells the discovery thread about matches.
struct WriterListener {
    matched: Sender<()>,
}

impl<T: PerfIo> DataWriterListener<T> for WriterListener {
    fn on_publication_matched(&self, _writer: &DataWriter<T>, _s: PublicationMatchedStatus) {
        let _ = self.matched.try_send(());
    }
}

/// A thread servicing `reader` after waitset triggers (or by polling every 1 ms).
fn spawn_reader_thread<T: PerfIo>(
    name: &str,
    ctx: Arc<Ctx<T>>,
    role: ReaderRole,
    reader: DataReader<T>,
    polling: bool,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let mut buf = SampleBuffer::new();
            if polling {
                while !ctx.stopping() {
                    if process(&ctx, role, &reader, &mut buf) == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                return;
            }
            let mut ws = WaitSet::new();
            ws.attach(&reader.create_readcondition(StateMasks::ANY));
            ws.attach(&ctx.guard.condition());
            let mut active = Vec::new();
            while !ctx.stopping() {
                let _ = ws.wait_into(&mut active, Some(Duration::from_secs(1)));
                while !ctx.stopping() && process(&ctx, role, &reader, &mut buf) > 0 {}
            }
        })
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread (and so in every thread started
/// after it) and starts a thread that waits for them and requests the end of the run.
fn block_signals() -> Option<libc::sigset_t> {
    // SAFETY: sigset_t is plain data; sigemptyset/sigaddset initialise it, and
    // pthread_sigmask only changes this thread's signal mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return None;
        }
        Some(set)
    }
}

fn spawn_signal_thread(set: libc::sigset_t, on_signal: impl Fn() + Send + 'static) {
    let _ = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is an initialised signal set and `sig` a valid out-pointer.
            if unsafe { libc::sigwait(&set, &mut sig) } == 0 {
                on_signal();
            }
        });
}

fn reliability(cfg: &PerfConfig) -> Reliability {
    if cfg.reliable {
        Reliability::reliable(Duration::from_secs(10))
    } else {
        Reliability::best_effort()
    }
}

/// `--consistency`: of the Data, Ping and Pong endpoints (CPU statistics stay EVENTUAL).
fn consistency(cfg: &PerfConfig) -> Consistency {
    if cfg.atomic {
        Consistency::Atomic
    } else {
        Consistency::Eventual
    }
}

/// Whether a ping or pong writer batches (then flushes after each write, as ddsperf does). An
/// ATOMIC one does not: with batching its `write` would only queue the sample for its committer
/// thread and the flush wait for that thread's commit, a hand-off a synchronous write skips.
fn batches_pings(qos: &DataWriterQos) -> bool {
    qos.consistency != Consistency::Atomic
}

fn data_history(cfg: &PerfConfig) -> QosHistory {
    match cfg.history {
        History::KeepAll => QosHistory::KeepAll,
        History::KeepLast(k) => QosHistory::KeepLast(k.max(1) as u32),
    }
}

fn data_limits() -> ResourceLimits {
    ResourceLimits {
        max_samples: Some(DATA_MAX_SAMPLES as u32),
        ..ResourceLimits::UNLIMITED
    }
}

/// A DDS call failed while setting up: print it ddsperf-style and give exit status 2.
fn dds_error(what: &str, e: tessera::Error) -> i32 {
    println!("{what}: {e}");
    let _ = std::io::stdout().flush();
    EXIT_DDS_ERROR
}

macro_rules! tryd {
    ($what:expr, $e:expr) => {
        match $e {
            Ok(v) => v,
            Err(e) => return dds_error($what, e),
        }
    };
}

/// Peers' CPU statistics seen with `-c`: the latest sample per (host, pid) and whether it is
/// new since the last report.
type PeerCpu = Vec<((String, u32), super::protocol::CpuStatsSample, bool)>;

/// The type-independent start of a run: the participant (with ddsperf's user data), its
/// publisher and subscriber, with the signals blocked first.
struct Base {
    t_process: i64,
    pid: u32,
    hostname: String,
    sigset: Option<libc::sigset_t>,
    participant: DomainParticipant,
    own_guid: [u8; 16],
    publisher: Publisher,
    subscriber: Subscriber,
}

impl Base {
    /// Creates the participant and its publisher and subscriber; `Err` holds the exit status
    /// after the error was printed.
    fn new(cfg: &PerfConfig) -> Result<Base, i32> {
        let t_process = now_ns();
        let pid = sysinfo::pid();
        let hostname = sysinfo::hostname();
        let sigset = block_signals();
        let pqos = DomainParticipantQos::default().with_user_data(UserData(user_data(
            cfg.has_data_reader(),
            pid,
            &hostname,
        )));
        let participant = DomainParticipant::with_qos(
            cfg.domain_id.unwrap_or(0),
            pqos,
            // ddsperf ignores its own participant's endpoints unless -L.
            ParticipantConfig {
                ignore_local: cfg.ignore_local,
                ..Default::default()
            },
        )
        .map_err(|e| dds_error("dds_create_participant", e))?;
        let publisher = participant
            .create_publisher(PublisherQos::default())
            .map_err(|e| dds_error("dds_create_publisher", e))?;
        let subscriber = participant
            .create_subscriber(SubscriberQos::default())
            .map_err(|e| dds_error("dds_create_subscriber", e))?;
        Ok(Base {
            t_process,
            pid,
            hostname,
            sigset,
            own_guid: participant.guid().to_bytes(),
            participant,
            publisher,
            subscriber,
        })
    }
}

impl Shared {
    fn new(cfg: &PerfConfig, base: &Base, matched: Sender<()>) -> Shared {
        Shared {
            cfg: cfg.clone(),
            pid: base.pid,
            out: Mutex::new(Reporter::new(std::io::stdout(), cfg.json)),
            stop: Arc::new(AtomicBool::new(false)),
            guard: GuardCondition::new(),
            peers: Mutex::new(PeerTable::new(
                base.pid,
                handle_of(&base.own_guid),
                cfg.ignore_local,
                cfg.has_data_reader(),
            )),
            ping: Mutex::new(PingScheduler::new(cfg.ping)),
            pongs: Mutex::new(Vec::new()),
            seq: Mutex::new(SeqTracker::new(cfg.nkeyvals, cfg.sub_latency)),
            pubhist: Mutex::new(PubHist::default()),
            matched,
            data_on: AtomicBool::new(false),
            t_events_ref: cfg.time_ref.unwrap_or(base.t_process),
            first_pong: AtomicI64::new(0),
            answers: Mutex::new(Answers::new()),
        }
    }

    /// `-Q initwait`: waits for enough peers before starting; true when they did not come (or
    /// the run was stopped).
    fn init_wait(&self) -> bool {
        let cfg = &self.cfg;
        let Some(iw) = cfg.init_wait_ns() else {
            return false;
        };
        let deadline = now_ns() + iw;
        loop {
            if lock(&self.peers).match_count() >= cfg.criteria.min_match {
                std::thread::sleep(Duration::from_millis(100));
                return false;
            }
            if now_ns() >= deadline || self.stopping() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn run_typed<T: PerfIo>(cfg: &PerfConfig, base: Base) -> i32 {
    let (pid, sigset, own_guid) = (base.pid, base.sigset, base.own_guid);
    let (hostname, participant) = (&base.hostname, &base.participant);
    let (publisher, subscriber) = (&base.publisher, &base.subscriber);
    // Topics.
    let rel = reliability(cfg);
    let cons = consistency(cfg);
    let tqos = TopicQos::default()
        .with_reliability(rel)
        .with_consistency(cons);
    let cpu_topic = tryd!(
        "dds_create_topic(CPUStats)",
        participant.create_topic::<CpuStats>(
            CPU_STATS_TOPIC,
            TopicQos::default().with_reliability(Reliability::reliable(Duration::from_millis(100)))
        )
    );
    let data_topic = tryd!(
        "dds_create_topic(data)",
        participant.create_topic::<T>(
            &T::topic_name(TopicRole::Data, cfg.reliable, cfg.topic),
            tqos.clone()
        )
    );
    let ping_topic = tryd!(
        "dds_create_topic(ping)",
        participant.create_topic::<T>(
            &T::topic_name(TopicRole::Ping, cfg.reliable, cfg.topic),
            tqos.clone()
        )
    );
    let pong_topic = tryd!(
        "dds_create_topic(pong)",
        participant.create_topic::<T>(
            &T::topic_name(TopicRole::Pong, cfg.reliable, cfg.topic),
            tqos.clone()
        )
    );

    // QoS of the endpoints.
    let pp_wqos = DataWriterQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(QosHistory::KeepLast(1));
    let pp_rqos = DataReaderQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(QosHistory::KeepLast(1));
    let data_wqos = DataWriterQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(data_history(cfg))
        .with_resource_limits(data_limits());
    let data_rqos = DataReaderQos::default()
        .with_reliability(rel)
        .with_consistency(cons)
        .with_history(data_history(cfg))
        .with_resource_limits(data_limits());

    // CPU statistics.
    let cpu_writer = tryd!(
        "dds_create_writer(CPUStats)",
        publisher.create_datawriter(
            &cpu_topic,
            DataWriterQos::default()
                .with_reliability(Reliability::reliable(Duration::from_millis(100)))
                .with_history(QosHistory::KeepLast(1))
        )
    );
    let cpu_reader = if cfg.collect_cpu_stats {
        Some(tryd!(
            "dds_create_reader(CPUStats)",
            subscriber.create_datareader(
                &cpu_topic,
                DataReaderQos::default()
                    .with_reliability(Reliability::reliable(Duration::from_millis(100)))
                    .with_history(QosHistory::KeepLast(1))
            )
        ))
    } else {
        None
    };

    // Ping reader and writer, data reader (sub) and writer (always), pong reader.
    let ping_reader = tryd!(
        "dds_create_reader(ping)",
        subscriber.create_datareader(&ping_topic, pp_rqos)
    );
    let ping_writer = tryd!(
        "dds_create_writer(ping)",
        publisher.create_datawriter(&ping_topic, pp_wqos.clone())
    );
    ping_writer.set_batching(batches_pings(&pp_wqos));
    let data_reader = if cfg.has_data_reader() {
        Some(tryd!(
            "dds_create_reader(data)",
            subscriber.create_datareader(&data_topic, data_rqos.clone())
        ))
    } else {
        None
    };
    let data_writer = tryd!(
        "dds_create_writer(data)",
        publisher.create_datawriter(&data_topic, data_wqos)
    );
    data_writer.set_batching(true);
    let pong_subscriber = tryd!(
        "dds_create_subscriber(pong)",
        participant.create_subscriber(
            SubscriberQos::default().with_partition(Partition(vec![guid_partition(&own_guid)]))
        )
    );
    let pong_reader = tryd!(
        "dds_create_reader(pong)",
        pong_subscriber.create_datareader(&pong_topic, data_rqos)
    );

    // Shared state.
    let (matched_tx, matched_rx) = crossbeam_channel::bounded::<()>(1);
    let own_handle = handle_of(&own_guid);
    let shared = Shared::new(cfg, &base, matched_tx.clone());
    let ctx = Arc::new(Ctx {
        shared,
        ping_writer: ping_writer.clone(),
        pong_writers: RwLock::new(FastHashMap::default()),
        data_writer: data_writer.clone(),
    });
    if let Some(set) = sigset {
        let (stop, guard) = (ctx.stop.clone(), ctx.guard.clone());
        spawn_signal_thread(set, move || {
            stop.store(true, Ordering::Release);
            guard.set_trigger_value(true);
        });
    }

    // Listeners: matches always go to the discovery thread; ping/pong data is handled in the
    // listener unless the waitset trigger is selected.
    let pp_listener = !cfg.pingpong_uses_waitset();
    let reader_listener = |role, handle_data| {
        Arc::new(ReaderListener {
            ctx: ctx.clone(),
            role,
            handle_data,
            buf: Mutex::new(SampleBuffer::new()),
        })
    };
    ping_reader.set_listener(Some(reader_listener(ReaderRole::Ping, pp_listener)));
    pong_reader.set_listener(Some(reader_listener(ReaderRole::Pong, pp_listener)));
    ping_writer.set_listener(Some(Arc::new(WriterListener {
        matched: matched_tx.clone(),
    })));
    data_writer.set_listener(Some(Arc::new(WriterListener {
        matched: matched_tx.clone(),
    })));
    if let Some(r) = &data_reader {
        // Data handling starts after `initwait` (`Ctx::data_on`).
        r.set_listener(Some(reader_listener(
            ReaderRole::Data,
            cfg.sub == Some(SubMode::Listener),
        )));
    }

    // Our own participant (ddsperf sees itself through the built-in topic; Tessera's
    // discovery events only cover remote participants).
    let own_ud = user_data(cfg.has_data_reader(), pid, hostname);
    let tdisc = now_ns();
    let own = lock(&ctx.peers).on_participant(own_handle, own_guid, &own_ud, tdisc);
    if let Some(own) = own {
        ctx.emit(&own.line);
        if let Some(partition) = own.pong_partition {
            // Only with -L. Tessera does not match endpoints of one participant with each
            // other, so this writer never matches; it is created for fidelity.
            let publisher = tryd!(
                "dds_create_publisher(pong)",
                participant.create_publisher(
                    PublisherQos::default().with_partition(Partition(vec![partition]))
                )
            );
            let w = tryd!(
                "dds_create_writer(pong)",
                publisher.create_datawriter(&pong_topic, pp_wqos.clone())
            );
            w.set_batching(batches_pings(&pp_wqos));
            ctx.add_pong_writer(prefix_of(&own_guid), w);
            lock(&ctx.ping).peers_changed(1, tdisc);
        }
    }

    // Discovery thread.
    let events = participant.participant_events();
    let disc = Discovery {
        ops: Box::new(DiscoveryTyped {
            ctx: ctx.clone(),
            participant: participant.clone(),
            pong_topic: pong_topic.clone(),
            pong_qos: pp_wqos,
            sources: MatchSources {
                data_writer: data_writer.clone(),
                data_reader: data_reader.clone(),
                ping_reader: ping_reader.clone(),
                pong_reader: pong_reader.clone(),
            },
            matched_tx,
        }),
        seen: HashSet::new(),
    };
    let disc_thread = std::thread::Builder::new()
        .name("discovery".into())
        .spawn(move || disc.run(events, matched_rx));
    let disc_thread = match disc_thread {
        Ok(t) => t,
        Err(e) => return dds_error("thread", tessera::Error::Io(e)),
    };

    let mut aborted = ctx.init_wait();

    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    if !aborted {
        match start_threads(&ctx, &data_reader, &data_writer, &ping_reader, &pong_reader) {
            Ok(t) => threads = t,
            Err(e) => return dds_error("thread", tessera::Error::Io(e)),
        }
    }

    let mut code = 0;
    let mut tref = None;
    if !aborted {
        let r = main_loop(&ctx, &*ctx, hostname, &cpu_writer, cpu_reader.as_ref());
        aborted = r.aborted;
        tref = Some(r.tref);
        code = finish(&ctx, aborted, r.rss);
    } else {
        code = code.max(finish(&ctx, true, None));
    }

    // Tear down: stop threads, remove listeners (they hold the shared state), drop entities.
    ctx.request_stop();
    for t in threads {
        let _ = t.join();
    }
    if let Some(tref) = tref {
        linger(&ctx, &data_writer, tref);
    }
    let _ = disc_thread.join();
    ping_reader.set_listener(None);
    pong_reader.set_listener(None);
    if let Some(r) = &data_reader {
        r.set_listener(None);
    }
    ping_writer.set_listener(None);
    data_writer.set_listener(None);
    drop(ctx.remove_pong_writers(None));
    let _ = lock(&ctx.out).flush();
    code
}

/// How long a reliable publisher waits at the end of the run for its readers to acknowledge
/// what it wrote, like Cyclone DDS's writer linger duration (1 s by default): without it, the
/// unacknowledged tail of a lossy run dies with the process.
const WRITER_LINGER: Duration = Duration::from_secs(1);

/// The writer linger: a reliable publisher waits up to [`WRITER_LINGER`] for acknowledgments
/// before its writer is deleted; with `-X` the retransmit counter is reported once more after.
fn linger<T: PerfIo>(ctx: &Ctx<T>, w: &DataWriter<T>, tref: i64) {
    let cfg = &ctx.cfg;
    if !cfg.publishes() || !cfg.reliable {
        return;
    }
    let before = w.retransmitted_samples();
    let _ = w.wait_for_acknowledgments(WRITER_LINGER);
    let rexmit = w.retransmitted_samples();
    if cfg.extended_stats && rexmit != before {
        let mut out = lock(&ctx.out);
        let _ = out.emit(&ReportLine::Extended {
            stamp: Stamp::new(ctx.pid, now_ns(), tref),
            stats: ExtendedStats {
                rexmit,
                ..ExtendedStats::default()
            },
        });
        let _ = out.flush();
    }
}

/// Starts the data-path threads (publisher, subscriber/ping/pong service threads) or
/// switches on the data listener.
fn start_threads<T: PerfIo>(
    ctx: &Arc<Ctx<T>>,
    data_reader: &Option<DataReader<T>>,
    data_writer: &DataWriter<T>,
    ping_reader: &DataReader<T>,
    pong_reader: &DataReader<T>,
) -> std::io::Result<Vec<JoinHandle<()>>> {
    let cfg = &ctx.cfg;
    let mut threads = Vec::new();
    if let (Some(mode), Some(r)) = (cfg.sub, data_reader) {
        match mode {
            SubMode::Listener => {
                ctx.data_on.store(true, Ordering::Release);
                // Samples that arrived before the listener was switched on.
                let mut buf = SampleBuffer::new();
                while ctx.process_data(r, &mut buf) > 0 {}
            }
            SubMode::Waitset | SubMode::Polling => threads.push(spawn_reader_thread(
                "sub",
                ctx.clone(),
                ReaderRole::Data,
                r.clone(),
                mode == SubMode::Polling,
            )?),
        }
    }
    if cfg.pingpong_uses_waitset() {
        threads.push(spawn_reader_thread(
            "ping",
            ctx.clone(),
            ReaderRole::Pong,
            pong_reader.clone(),
            false,
        )?);
        threads.push(spawn_reader_thread(
            "pong",
            ctx.clone(),
            ReaderRole::Ping,
            ping_reader.clone(),
            false,
        )?);
    }
    if cfg.publishes() {
        let c = ctx.clone();
        let w = data_writer.clone();
        threads.push(
            std::thread::Builder::new()
                .name("pub".into())
                .spawn(move || publish(&c, &w))?,
        );
    }
    Ok(threads)
}

/// The publishing loop (§7): registers the instances, then writes as fast as allowed.
fn publish<T: PerfIo>(ctx: &Ctx<T>, w: &DataWriter<T>) {
    let cfg = &ctx.cfg;
    let n = cfg.nkeyvals.max(1);
    let mut sample = T::template(cfg.baggage);
    T::register(w, &mut sample, n);
    let (mut seq, mut keyval) = (0u32, 0u32);
    let rate = match cfg.pub_rate {
        PubRate::Hz(r) => Some(r),
        PubRate::Unlimited | PubRate::Off => None,
    };
    let mut t = now_ns();
    let mut pacer = PubPacer::new(rate, cfg.burst, t);
    let mut dec = ClockDecimator::default();
    let mut rng = Rng::new();
    while !ctx.stopping() {
        let flag = cfg.ping_fraction != 0 && rng.next_u32() <= cfg.ping_fraction;
        match T::write_new(w, &mut sample, seq, keyval, data_timestamp(t, flag)) {
            Ok(()) => {}
            // An ATOMIC write may also end without a verdict (no commit seen in time): like a
            // timeout, the sample may be missing, and publishing goes on.
            Err(tessera::Error::Timeout | tessera::Error::Indeterminate) => {
                ctx.emit(&ReportLine::WriteError {
                    code: RETCODE_TIMEOUT,
                });
                dec.reset();
                t = now_ns();
                continue;
            }
            Err(_) if ctx.stopping() => break,
            Err(_) => {
                ctx.emit(&ReportLine::WriteError {
                    code: RETCODE_ERROR,
                });
                std::process::exit(EXIT_DDS_ERROR);
            }
        }
        if flag {
            w.flush();
        }
        let dt = if dec.read_clock_now() {
            let t2 = now_ns();
            let d = t2 - t;
            t = t2;
            d
        } else {
            0
        };
        lock(&ctx.pubhist).record(dt.max(0) as u64);
        dec.after_write(dt);
        seq = seq.wrapping_add(1);
        if n > 1 {
            keyval = (keyval + 1) % n;
        }
        if pacer.after_write() {
            let mut slept = false;
            while pacer.must_wait(t) && !ctx.stopping() {
                w.flush();
                std::thread::sleep(Duration::from_millis(1));
                t = now_ns();
                slept = true;
            }
            if slept {
                dec.reset();
            }
        }
    }
    w.flush();
}

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
