//! What the threads and listeners of one run share: the typed context `Ctx`, its
//! type-independent part `Shared`, and the bookkeeping of each ping's answers.

use super::*;

/// A pong source: one remote pong writer whose answers we measured.
pub(super) struct PongSource {
    pub(super) handle: u64,
    pub(super) participant: u64,
    pub(super) stats: LatencyStats,
}

/// State shared by every thread and listener of one run: the part that does not depend on the
/// sample type ([`Shared`], reached through `Deref`) and the typed writers.
///
/// The split keeps the type-independent code (the main loop, the reports, the verdict) out of
/// the ten monomorphized copies of the run, one per `-T` type: a smaller `tessera` binary, whose
/// text is most of its resident memory.
pub(super) struct Ctx<T: PerfIo> {
    pub(super) shared: Shared,
    pub(super) ping_writer: DataWriter<T>,
    /// Pong writer per peer participant, by GUID prefix.
    pub(super) pong_writers: RwLock<FastHashMap<[u8; 12], DataWriter<T>>>,
    /// The data writer (for the `-X` retransmit counter).
    pub(super) data_writer: DataWriter<T>,
}

impl<T: PerfIo> std::ops::Deref for Ctx<T> {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.shared
    }
}

/// What the type-independent code needs from the typed half of [`Ctx`].
pub(super) trait Typed {
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
pub(super) struct Shared {
    pub(super) cfg: PerfConfig,
    pub(super) pid: u32,
    pub(super) out: Mutex<Reporter<Stdout>>,
    /// Set (with `guard`) to end the run; shared with the signal thread, which must not hold
    /// the whole context (that would keep the participant alive past the end of the run).
    pub(super) stop: Arc<AtomicBool>,
    pub(super) guard: GuardCondition,
    pub(super) peers: Mutex<PeerTable>,
    pub(super) ping: Mutex<PingScheduler>,
    pub(super) pongs: Mutex<Vec<PongSource>>,
    pub(super) seq: Mutex<SeqTracker>,
    pub(super) pubhist: Mutex<PubHist>,
    /// Wakes the discovery thread when any of our endpoints (un)matched.
    pub(super) matched: Sender<()>,
    /// Whether the data listener processes data (switched on after `initwait`).
    pub(super) data_on: AtomicBool,
    /// Time reference (ns) of the `"t"` of JSON event lines: `-R`, else the process start.
    pub(super) t_events_ref: i64,
    /// When the first pong arrived (ns; 0: none yet), for `--warmup`.
    pub(super) first_pong: AtomicI64,
    /// Per ping, its first and last answers (1-to-N) and the pings counted for `--count`.
    pub(super) answers: Mutex<Answers>,
}

/// What a pinger knows of its pings' answers: the first pong of the current ping, and per
/// measured ping (past the warm-up, answered by every peer) the one-way time to its first
/// pong and to its last.
pub(super) struct Answers {
    /// The current ping's sequence number and its first pong's one-way latency (ns).
    current: Option<(u32, i64)>,
    pub(super) first: LatencyStats,
    pub(super) all: LatencyStats,
    pub(super) pings: u64,
}

impl Answers {
    pub(super) fn new() -> Self {
        Answers {
            current: None,
            first: LatencyStats::new(),
            all: LatencyStats::new(),
            pings: 0,
        }
    }

    /// A pong of the current ping `seq` with one-way latency `ns`; `completed`: it was the
    /// last one expected; `measured`: past the warm-up. Returns the measured pings so far.
    pub(super) fn on_pong(&mut self, seq: u32, ns: i64, completed: bool, measured: bool) -> u64 {
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
    pub(super) fn emit(&self, line: &ReportLine) -> bool {
        let t = (now_ns() - self.t_events_ref) as f64 / 1e9;
        lock(&self.out).emit_at(line, t).unwrap_or(false)
    }

    /// Whether a round trip completed at `now` counts in the whole-run histogram (false
    /// during the `--warmup` seconds after the first pong).
    pub(super) fn past_warmup(&self, now: i64) -> bool {
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

    pub(super) fn request_stop(&self) {
        self.stop.store(true, Ordering::Release);
        self.guard.set_trigger_value(true);
    }

    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Acquire)
    }

    pub(super) fn key_out_of_range(&self, k: KeyOutOfRange) -> ! {
        self.emit(&ReportLine::KeyOutOfRange(k));
        let _ = std::io::stdout().flush();
        std::process::exit(EXIT_BAD_ARGS);
    }
}

impl Shared {
    pub(super) fn new(cfg: &PerfConfig, base: &Base, matched: Sender<()>) -> Shared {
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
    pub(super) fn init_wait(&self) -> bool {
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
