//! The network scheduler: which outgoing flow (one per topic routed to the network) sends next.
//!
//! [`Plan`] is the policy, sans-IO (sizes and `now` in, the flow to serve out), so it is tested
//! on a virtual clock; [`Scheduler`] applies it, writing the chosen samples to the network
//! writers: on the queueing route's thread when there is nothing to order ([`Plan::serve_inline`]),
//! else on its own thread, which also does the timed work.
//!
//! Sending: the network writers batch; a flow's batch goes out when its queue empties, held
//! for up to [`BATCH_WINDOW`] while the flow is busy ([`Coalescer`]), so the samples of many
//! applications on one topic share datagrams.
//!
//! Policy: among flows with queued samples and tokens, the highest TRANSPORT_PRIORITY wins, then
//! the shortest LATENCY_BUDGET, then the one served longest ago. A flow is served at most
//! [`SLICE`] samples at a time, so a high-priority sample waits behind at most one slice of bulk
//! data. A flow with a [`Rate`] has a token bucket in bytes; a flow out of tokens waits (its
//! queue fills, the route waits, the application's reliable writer is pushed back), so one
//! application cannot flood the link.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tessera::{DomainParticipant, UntypedDataWriter};

/// Samples one flow sends before the plan looks again.
pub const SLICE: usize = 8;

/// Samples queued per flow before the route waits.
pub const QUEUE: usize = 1024;

/// How long a flow whose writer is full stands aside.
pub const HOLD: Duration = Duration::from_millis(1);

/// The default [`Coalescer`] window: a flow without a latency budget sends at once when it has
/// sent nothing for this long, else gathers its samples into one datagram until this long after
/// its last send (so at most one datagram per window per flow, plus full ones).
pub const BATCH_WINDOW: Duration = Duration::from_millis(1);

/// When a flow's batched samples go out, for flows without a LATENCY_BUDGET (those with one
/// leave it to their writer, which sends when the budget runs out). A sample that finds the
/// flow idle (nothing sent for `window`) is sent at once: a sparse flow pays no delay. A
/// sample that follows a send within `window` waits until `window` after that send, with the
/// samples that follow it: a busy flow — many applications publishing on one topic — sends a
/// datagram per window instead of one per sample, at most `window` later. Sans-IO.
#[derive(Debug, Clone, Copy)]
pub struct Coalescer {
    window: Duration,
    last_flush: Option<Instant>,
    due: Option<Instant>,
}

impl Coalescer {
    /// A coalescer with `window` (zero: every drained queue is sent at once).
    pub fn new(window: Duration) -> Coalescer {
        Coalescer {
            window,
            last_flush: None,
            due: None,
        }
    }

    /// The flow's queue emptied at `now` with samples written but not sent: true to send them
    /// now; false when they wait for [`Coalescer::next_due`].
    pub fn drained(&mut self, now: Instant) -> bool {
        let idle = self
            .last_flush
            .is_none_or(|t| now.saturating_duration_since(t) >= self.window);
        if self.window.is_zero() || (idle && self.due.is_none()) {
            self.flushed(now);
            return true;
        }
        if self.due.is_none() {
            let last = self.last_flush.unwrap_or(now);
            self.due = Some(last + self.window);
        }
        false
    }

    /// Whether held samples are due at `now` (if so, they count as sent).
    pub fn take_due(&mut self, now: Instant) -> bool {
        if self.due.is_some_and(|d| d <= now) {
            self.flushed(now);
            true
        } else {
            false
        }
    }

    /// When held samples are due, if any are.
    pub fn next_due(&self) -> Option<Instant> {
        self.due
    }

    fn flushed(&mut self, now: Instant) {
        self.last_flush = Some(now);
        self.due = None;
    }
}

/// A token bucket: sustained bytes per second and the burst allowed above it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Sustained rate (bytes/s, > 0).
    pub bytes_per_sec: u64,
    /// Bucket size (bytes).
    pub burst: u64,
}

impl std::str::FromStr for Rate {
    type Err = String;

    /// `BYTES[/BURST]` with optional `k`/`M` suffixes, e.g. `1M` or `125k/16k`.
    fn from_str(s: &str) -> Result<Rate, String> {
        let num = |t: &str| -> Result<u64, String> {
            let t = t.trim();
            let (n, mult) = match t.strip_suffix(['k', 'K']) {
                Some(n) => (n, 1_000),
                None => match t.strip_suffix('M') {
                    Some(n) => (n, 1_000_000),
                    None => (t, 1),
                },
            };
            n.parse::<u64>()
                .ok()
                .and_then(|v| v.checked_mul(mult))
                .filter(|&v| v > 0)
                .ok_or_else(|| format!("rate {s:?}: expected BYTES[/BURST] (k, M suffixes)"))
        };
        let (rate, burst) = match s.split_once('/') {
            Some((r, b)) => (num(r)?, num(b)?),
            None => {
                let r = num(s)?;
                (r, (r / 10).max(1500))
            }
        };
        Ok(Rate {
            bytes_per_sec: rate,
            burst,
        })
    }
}

/// How a flow ranks: higher `priority` first, then shorter `latency_budget`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rank {
    /// TRANSPORT_PRIORITY (the highest of the writing applications').
    pub priority: i32,
    /// LATENCY_BUDGET (the shortest of the writing applications').
    pub latency_budget: Duration,
}

/// Per-flow counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// The topic.
    pub topic: String,
    /// Samples sent.
    pub sent: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Times the flow had samples but no tokens.
    pub throttled: u64,
    /// Times the flow was served while a lower-ranked flow had samples waiting.
    pub preempted_others: u64,
    /// Samples that waited behind a slice of a lower-ranked flow (a pre-emption missed).
    pub waited_behind_lower: u64,
    /// Times its writer could not take a sample without waiting (the flow then stood aside).
    pub held: u64,
}

/// The scheduler's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    /// One entry per flow, in the order they were added.
    pub flows: Vec<FlowStats>,
}

struct Flow {
    rank: Rank,
    rate: Option<Rate>,
    tokens: f64,
    refilled: Instant,
    queued: VecDeque<usize>,
    last_served: u64,
    /// Not served before this (its writer could not take more without waiting).
    held_until: Option<Instant>,
    /// Its route closed: nothing queued, nothing accepted.
    closed: bool,
    stats: FlowStats,
}

/// The scheduling policy over queued sample sizes, on the caller's clock.
pub struct Plan {
    flows: Vec<Flow>,
    turn: u64,
}

impl Plan {
    /// An empty plan.
    pub fn new() -> Plan {
        Plan {
            flows: Vec::new(),
            turn: 0,
        }
    }

    /// Adds a flow; returns its index.
    pub fn add(&mut self, topic: &str, rank: Rank, rate: Option<Rate>, now: Instant) -> usize {
        self.flows.push(Flow {
            rank,
            rate,
            tokens: rate.map_or(0.0, |r| r.burst as f64),
            refilled: now,
            queued: VecDeque::new(),
            last_served: 0,
            held_until: None,
            closed: false,
            stats: FlowStats {
                topic: topic.to_owned(),
                ..FlowStats::default()
            },
        });
        self.flows.len() - 1
    }

    /// Queues a sample of `len` bytes on `flow`; false when its queue is full (or the flow is
    /// closed).
    pub fn push(&mut self, flow: usize, len: usize) -> bool {
        let f = &mut self.flows[flow];
        if f.queued.len() >= QUEUE || f.closed {
            return false;
        }
        f.queued.push_back(len);
        true
    }

    fn refill(f: &mut Flow, now: Instant) {
        if let Some(r) = f.rate {
            let dt = now.saturating_duration_since(f.refilled).as_secs_f64();
            f.tokens = (f.tokens + dt * r.bytes_per_sec as f64).min(r.burst as f64);
            f.refilled = now;
        }
    }

    /// The flow to serve now and how many of its queued samples, or `None` (then see
    /// [`Plan::poll_at`]). The caller sends them and the plan counts them as sent.
    pub fn next(&mut self, now: Instant) -> Option<(usize, usize)> {
        let mut best: Option<usize> = None;
        for i in 0..self.flows.len() {
            let f = &mut self.flows[i];
            if f.queued.is_empty() || f.held_until.is_some_and(|t| now < t) {
                continue;
            }
            f.held_until = None;
            Self::refill(f, now);
            if f.rate.is_some() && f.tokens <= 0.0 {
                f.stats.throttled += 1;
                continue;
            }
            let better = match best {
                None => true,
                Some(b) => {
                    let (x, y) = (&self.flows[i], &self.flows[b]);
                    (
                        x.rank.priority,
                        std::cmp::Reverse(x.rank.latency_budget),
                        std::cmp::Reverse(x.last_served),
                    ) > (
                        y.rank.priority,
                        std::cmp::Reverse(y.rank.latency_budget),
                        std::cmp::Reverse(y.last_served),
                    )
                }
            };
            if better {
                best = Some(i);
            }
        }
        let b = best?;
        let rank = self.flows[b].rank;
        let outranks = |r: Rank| {
            (rank.priority, std::cmp::Reverse(rank.latency_budget))
                > (r.priority, std::cmp::Reverse(r.latency_budget))
        };
        let lower_waiting = self
            .flows
            .iter()
            .any(|f| !f.queued.is_empty() && outranks(f.rank));
        self.turn += 1;
        let f = &mut self.flows[b];
        f.last_served = self.turn;
        if lower_waiting {
            f.stats.preempted_others += 1;
        }
        let mut n = 0;
        while n < SLICE {
            let Some(&len) = f.queued.get(n) else { break };
            if f.rate.is_some() && f.tokens <= 0.0 {
                break;
            }
            f.tokens -= len as f64;
            n += 1;
        }
        for len in f.queued.drain(..n) {
            f.stats.sent += 1;
            f.stats.bytes += len as u64;
        }
        // Samples of higher-ranked flows now wait behind this slice: counted, so a test can
        // check that pre-emption works without reading clocks.
        let behind: usize = self
            .flows
            .iter()
            .filter(|g| {
                (g.rank.priority, std::cmp::Reverse(g.rank.latency_budget))
                    > (rank.priority, std::cmp::Reverse(rank.latency_budget))
            })
            .map(|g| g.queued.len())
            .sum();
        if behind > 0 {
            self.flows[b].stats.waited_behind_lower += behind as u64;
        }
        Some((b, n))
    }

    /// Closes `flow`: its queue empties and it takes nothing more.
    pub fn close(&mut self, flow: usize) {
        let f = &mut self.flows[flow];
        f.closed = true;
        f.queued.clear();
    }

    /// Gives back the last `lens.len()` samples [`Plan::next`] handed out for `flow` (their
    /// writer could not take them without waiting): they go first again, their tokens are
    /// returned, and the flow is not served before `until` while the others are.
    /// False (and nothing given back) when the flow was closed meanwhile.
    pub fn give_back(&mut self, flow: usize, lens: &[usize], until: Instant) -> bool {
        let f = &mut self.flows[flow];
        if f.closed {
            return false;
        }
        for &len in lens.iter().rev() {
            f.queued.push_front(len);
            f.stats.sent -= 1;
            f.stats.bytes -= len as u64;
            if f.rate.is_some() {
                f.tokens += len as f64;
            }
        }
        f.stats.held += 1;
        f.held_until = Some(until);
        true
    }

    /// When a throttled or held flow may go again (`None`: no flow waits for that).
    pub fn poll_at(&self, now: Instant) -> Option<Instant> {
        self.flows
            .iter()
            .filter(|f| !f.queued.is_empty())
            .filter_map(|f| {
                let tokens = f.rate.map(|r| {
                    let missing = (1.0 - f.tokens).max(0.0);
                    now + Duration::from_secs_f64(missing / r.bytes_per_sec as f64)
                });
                match (tokens, f.held_until) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    (a, b) => a.or(b),
                }
            })
            .min()
    }

    /// Whether a sample of `flow` may be served by the thread that queued it: every open flow
    /// has the same rank and `flow` no token bucket (nothing to order or pace).
    pub fn serve_inline(&self, flow: usize) -> bool {
        let Some(f) = self.flows.get(flow) else {
            return false;
        };
        f.rate.is_none()
            && self
                .flows
                .iter()
                .filter(|o| !o.closed)
                .all(|o| o.rank == f.rank)
    }

    /// The counters.
    pub fn stats(&self) -> SchedulerStats {
        SchedulerStats {
            flows: self.flows.iter().map(|f| f.stats.clone()).collect(),
        }
    }
}

impl Default for Plan {
    fn default() -> Self {
        Plan::new()
    }
}

/// One queued operation of a flow.
pub enum Op {
    /// A sample and its source timestamp.
    Write(Vec<u8>, i64),
    /// Dispose the instance of this key payload.
    Dispose(Vec<u8>),
    /// Unregister the instance of this key payload.
    Unregister(Vec<u8>),
}

impl Op {
    fn len(&self) -> usize {
        match self {
            Op::Write(b, _) | Op::Dispose(b) | Op::Unregister(b) => b.len(),
        }
    }
}

/// An operation and the network writer it goes through (the one standing for the application
/// writer it came from).
pub type Queued = (UntypedDataWriter, Op);

struct State {
    plan: Plan,
    ops: Vec<VecDeque<Queued>>,
    /// Per flow, the writers written since its last flush (they hold batched samples).
    unflushed: Vec<Vec<UntypedDataWriter>>,
    coalesce: Vec<Coalescer>,
    /// A thread (a pusher or the scheduler's) is serving: others leave the work to it.
    serving: bool,
    /// When the scheduler thread, waiting, wakes by itself (`None`: it is not waiting).
    sleep_until: Option<Instant>,
}

/// What one [`Scheduler::step`] did.
enum Step<'a> {
    /// Served a slice or flushed due batches (the lock was released).
    Served,
    /// Nothing is ready now; the lock is still held.
    Idle(parking_lot::MutexGuard<'a, State>),
}

/// The scheduler thread and its queues.
pub struct Scheduler {
    state: Mutex<State>,
    wake: Condvar,
    room: Condvar,
    rates: HashMap<Option<String>, Rate>,
    batch_window: Duration,
    /// The participant of the network writers: a flush bundles their datagrams.
    net: DomainParticipant,
    stop: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Scheduler {
    /// Starts the thread; `rates` by topic (`None`: the default for other topics); flows
    /// without a latency budget and of priority ≤ 0 hold a batch for up to half `batch_window`
    /// after their last send ([`Coalescer`]; the node plane's receiver gathers for the whole
    /// window).
    pub fn start(
        rates: HashMap<Option<String>, Rate>,
        batch_window: Duration,
        net: DomainParticipant,
    ) -> Arc<Scheduler> {
        let s = Arc::new(Scheduler {
            state: Mutex::new(State {
                plan: Plan::new(),
                ops: Vec::new(),
                unflushed: Vec::new(),
                coalesce: Vec::new(),
                serving: false,
                sleep_until: None,
            }),
            wake: Condvar::new(),
            room: Condvar::new(),
            rates,
            batch_window,
            net,
            stop: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        let weak = Arc::downgrade(&s);
        let t = std::thread::Builder::new()
            .name("tessera-node-sched".into())
            .spawn(move || {
                while let Some(s) = weak.upgrade() {
                    if s.stop.load(Ordering::Relaxed) {
                        break;
                    }
                    s.run_once();
                }
            })
            .ok();
        *s.thread.lock() = t;
        s
    }

    /// Adds a flow (a topic to the network); its samples name their writers, which must batch
    /// (`set_batching(true)`): they are flushed when the flow's queue empties, as its
    /// [`Coalescer`] says, their datagrams bundled.
    pub fn add_flow(&self, topic: &str, rank: Rank) -> usize {
        let rate = self
            .rates
            .get(&Some(topic.to_owned()))
            .or_else(|| self.rates.get(&None))
            .copied();
        // A high-priority flow is latency-sensitive: it never waits for company. Others hold
        // for half the batch window: the node's shared-memory receiver already hands a busy
        // topic over once per batch window (it gathers for that long), so a full-window hold
        // only ever caught a stray sample between two gathered batches — and then held every
        // later batch too, each sent by a timed flush on the scheduler's thread just before the
        // next came (phase-locked: a second wake-up per window at 16 applications × 1 kHz, for
        // no fewer datagrams). Half a window still bounds a trickle to two datagrams a window.
        let window = if rank.priority > 0 {
            Duration::ZERO
        } else {
            self.batch_window / 2
        };
        let mut st = self.state.lock();
        let i = st.plan.add(topic, rank, rate, Instant::now());
        st.ops.push(VecDeque::new());
        st.unflushed.push(Vec::new());
        st.coalesce.push(Coalescer::new(window));
        i
    }

    /// Queues `op` on `flow`, waiting while its queue is full, and serves it (see
    /// [`Scheduler::push_all`]); false once the scheduler or `stop` (the caller's) says to
    /// stop.
    pub fn push(&self, flow: usize, op: Queued, stop: &AtomicBool) -> bool {
        self.push_all(flow, std::iter::once(op), stop)
    }

    /// Queues `ops` on `flow` in order, waiting while its queue is full, then serves them; false
    /// once the scheduler or `stop` (the caller's) says to stop. What a route took in one pass
    /// is queued before any of it is served, so it leaves together (a datagram where it fits)
    /// instead of its first sample going alone and the rest waiting for the next window.
    pub fn push_all(
        &self,
        flow: usize,
        ops: impl IntoIterator<Item = Queued>,
        stop: &AtomicBool,
    ) -> bool {
        let mut st = self.state.lock();
        for op in ops {
            let mut served = false;
            while !st.plan.push(flow, op.1.len()) {
                if self.stop.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                    return false;
                }
                if !served {
                    // Full: serve what is queued before waiting for room.
                    served = true;
                    drop(st);
                    self.serve(flow);
                    st = self.state.lock();
                    continue;
                }
                self.room.wait_for(&mut st, Duration::from_millis(100));
            }
            st.ops[flow].push_back(op);
        }
        drop(st);
        self.serve(flow);
        true
    }

    /// Serves what `flow` queued: on this thread when there is no order to keep, else by
    /// waking the scheduler's thread.
    fn serve(&self, flow: usize) {
        let mut st = self.state.lock();
        if st.serving {
            // The serving thread loops until nothing is ready: it sees these samples.
            return;
        }
        if !st.plan.serve_inline(flow) {
            // Flows of different ranks, or a rate limit: the scheduler's thread serves, so
            // that samples queue where a higher-ranked flow can pass them.
            drop(st);
            self.wake.notify_one();
            return;
        }
        // One rank and no rate limit, so no order to keep: serve on this thread. Waking the
        // scheduler's thread for every sample cost more CPU than the forwarding itself (16
        // applications at 1 kHz). That thread keeps the timed work (held batches, flows
        // standing aside) and is woken only when that work comes due sooner.
        st.serving = true;
        drop(st);
        let mut st = self.serve_all();
        st.serving = false;
        let next = Self::next_timed(&st, Instant::now());
        let sooner = next.is_some_and(|t| st.sleep_until.is_some_and(|s| t < s));
        drop(st);
        if sooner {
            self.wake.notify_one();
        }
    }

    /// Serves until nothing is ready; returns with the lock held.
    fn serve_all(&self) -> parking_lot::MutexGuard<'_, State> {
        loop {
            if let Step::Idle(st) = self.step() {
                return st;
            }
        }
    }

    /// When timed work comes due: a flow's tokens or hold, a held batch.
    fn next_timed(st: &State, now: Instant) -> Option<Instant> {
        let flush = st.coalesce.iter().filter_map(Coalescer::next_due).min();
        st.plan.poll_at(now).into_iter().chain(flush).min()
    }

    /// The scheduler thread's turn: serve what is ready unless a pusher does, then wait for
    /// timed work or a wake-up.
    fn run_once(&self) {
        let mut st = self.state.lock();
        if !st.serving {
            st.serving = true;
            drop(st);
            st = self.serve_all();
            st.serving = false;
        }
        let now = Instant::now();
        let wait = Self::next_timed(&st, now)
            .map_or(Duration::from_millis(100), |t| {
                t.saturating_duration_since(now)
            })
            .max(Duration::from_micros(50));
        st.sleep_until = Some(now + wait);
        self.wake.wait_for(&mut st, wait);
        st.sleep_until = None;
    }

    /// Sends what `writers` batched, their datagrams bundled (samples of several application
    /// writers, and of several topics, to one destination share datagrams).
    fn flush(&self, writers: Vec<UntypedDataWriter>) {
        if writers.is_empty() {
            return;
        }
        let _bundle = self.net.bundle_sends();
        for w in &writers {
            w.flush();
        }
    }

    /// Flushes due batches or serves one slice of the flow the plan picks, if any is ready.
    fn step(&self) -> Step<'_> {
        let mut st = self.state.lock();
        let now = Instant::now();
        let st_ref = &mut *st;
        let due: Vec<UntypedDataWriter> = st_ref
            .coalesce
            .iter_mut()
            .zip(st_ref.unflushed.iter_mut())
            .filter_map(|(c, w)| c.take_due(now).then(|| std::mem::take(w)))
            .flatten()
            .collect();
        if !due.is_empty() {
            drop(st);
            self.flush(due);
            return Step::Served;
        }
        let Some((flow, n)) = st.plan.next(now) else {
            return Step::Idle(st);
        };
        let mut ops: VecDeque<Queued> = st.ops[flow].drain(..n).collect();
        let empty = st.ops[flow].is_empty();
        // A flow with a latency budget is not flushed when its queue empties: its writers send
        // a batch when a datagram fills or the budget runs out, so the samples of all its
        // applications share datagrams.
        let flush_when_empty = st.plan.flows[flow].rank.latency_budget.is_zero();
        drop(st);
        self.room.notify_all();
        let mut written: Vec<UntypedDataWriter> = Vec::new();
        // The network writers wait briefly (their max_blocking_time, which paces a bulk flow
        // to the link); one still full after that says Timeout, and its flow stands aside for
        // a moment while the others are served.
        while let Some((w, op)) = ops.pop_front() {
            let r = match &op {
                Op::Write(b, ts) => w.write_serialized_with_timestamp(b, *ts),
                Op::Dispose(k) => w.dispose_serialized(k),
                Op::Unregister(k) => w.unregister_serialized(k),
            };
            match r {
                Ok(()) => add_writer(&mut written, w),
                Err(tessera::Error::Timeout) => {
                    ops.push_front((w, op));
                    let lens: Vec<usize> = ops.iter().map(|(_, op)| op.len()).collect();
                    let mut st = self.state.lock();
                    if st.plan.give_back(flow, &lens, Instant::now() + HOLD) {
                        for op in ops.into_iter().rev() {
                            st.ops[flow].push_front(op);
                        }
                    }
                    let mut pending = std::mem::take(&mut st.unflushed[flow]);
                    drop(st);
                    for w in written {
                        add_writer(&mut pending, w);
                    }
                    self.flush(pending);
                    return Step::Served;
                }
                Err(e) => tracing::debug!(%e, "node: forwarding to the network failed"),
            }
        }
        let mut st = self.state.lock();
        for w in written {
            add_writer(&mut st.unflushed[flow], w);
        }
        if empty && flush_when_empty && st.coalesce[flow].drained(Instant::now()) {
            let pending = std::mem::take(&mut st.unflushed[flow]);
            drop(st);
            self.flush(pending);
        }
        Step::Served
    }

    /// The counters.
    pub fn stats(&self) -> SchedulerStats {
        self.state.lock().plan.stats()
    }

    /// Ends `flow`: its queued samples are dropped and its writer deleted (its instances
    /// unregistered beyond the node). Its counters stay.
    pub fn close_flow(&self, flow: usize) {
        let mut st = self.state.lock();
        st.plan.close(flow);
        st.ops[flow].clear();
        st.unflushed[flow].clear();
        drop(st);
        self.room.notify_all();
    }

    /// Stops the thread (queued samples are dropped).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.notify_all();
        self.room.notify_all();
        if let Some(t) = self.thread.lock().take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// Adds `w` to `list` unless it is there already (a flow's writers are few).
fn add_writer(list: &mut Vec<UntypedDataWriter>, w: UntypedDataWriter) {
    if !list.iter().any(|x| x.guid() == w.guid()) {
        list.push(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(priority: i32) -> Rank {
        Rank {
            priority,
            latency_budget: Duration::ZERO,
        }
    }

    #[test]
    fn only_flows_of_one_rank_without_a_rate_are_served_inline() {
        let t0 = Instant::now();
        let mut p = Plan::new();
        let a = p.add("a", rank(0), None, t0);
        let b = p.add("b", rank(0), None, t0);
        assert!(p.serve_inline(a) && p.serve_inline(b));
        let high = p.add("high", rank(10), None, t0);
        assert!(!p.serve_inline(a) && !p.serve_inline(high));
        p.close(high);
        assert!(p.serve_inline(a));
        let limited = p.add("limited", rank(0), Some("1M".parse().unwrap()), t0);
        assert!(!p.serve_inline(limited) && p.serve_inline(a));
    }

    #[test]
    fn high_priority_preempts_queued_bulk() {
        let t0 = Instant::now();
        let mut p = Plan::new();
        let bulk = p.add("bulk", rank(0), None, t0);
        let high = p.add("high", rank(10), None, t0);
        for _ in 0..100 {
            assert!(p.push(bulk, 1000));
        }
        // Bulk is served a slice while alone.
        assert_eq!(p.next(t0), Some((bulk, SLICE)));
        // A high-priority sample arrives: it goes next, ahead of 92 bulk samples.
        assert!(p.push(high, 64));
        assert_eq!(p.next(t0), Some((high, 1)));
        let s = p.stats();
        assert_eq!(s.flows[high].preempted_others, 1);
        assert_eq!(s.flows[bulk].waited_behind_lower, 0);
        assert_eq!(p.next(t0), Some((bulk, SLICE)));
    }

    #[test]
    fn latency_budget_breaks_priority_ties_and_equal_flows_alternate() {
        let t0 = Instant::now();
        let mut p = Plan::new();
        let slow = p.add(
            "slow",
            Rank {
                priority: 0,
                latency_budget: Duration::from_millis(100),
            },
            None,
            t0,
        );
        let a = p.add("a", rank(0), None, t0);
        let b = p.add("b", rank(0), None, t0);
        for f in [slow, a, b] {
            for _ in 0..2 * SLICE {
                p.push(f, 10);
            }
        }
        let order: Vec<usize> = std::iter::from_fn(|| p.next(t0).map(|(f, _)| f)).collect();
        assert_eq!(order, vec![a, b, a, b, slow, slow]);
    }

    #[test]
    fn token_bucket_limits_a_flooding_flow() {
        let t0 = Instant::now();
        let mut p = Plan::new();
        let rate = Rate {
            bytes_per_sec: 10_000,
            burst: 2_000,
        };
        let flood = p.add("flood", rank(0), Some(rate), t0);
        let other = p.add("other", rank(0), None, t0);
        for _ in 0..QUEUE {
            p.push(flood, 1000);
        }
        assert!(!p.push(flood, 1000), "the queue is bounded");
        // The burst lets 2 samples out, then the flow waits for tokens.
        assert_eq!(p.next(t0), Some((flood, 2)));
        assert_eq!(p.next(t0), None);
        assert!(p.stats().flows[flood].throttled >= 1);
        // An unlimited flow is not held up by it.
        p.push(other, 1000);
        assert_eq!(p.next(t0), Some((other, 1)));
        // After 1 s, 10 kB more went: about 10 samples (the bucket caps at the burst per look).
        let mut sent = 0;
        let mut t = t0;
        for _ in 0..1000 {
            t += Duration::from_millis(1);
            while let Some((f, n)) = p.next(t) {
                assert_eq!(f, flood);
                sent += n;
            }
        }
        assert!((9..=12).contains(&sent), "{sent} samples in 1 s at 10 kB/s");
        assert!(p.poll_at(t).is_some());
    }

    #[test]
    fn a_flow_given_back_stands_aside_then_goes_first() {
        let t0 = Instant::now();
        let mut p = Plan::new();
        let bulk = p.add("bulk", rank(0), None, t0);
        let high = p.add("high", rank(5), None, t0);
        for len in [1, 2, 3] {
            p.push(bulk, len);
        }
        assert_eq!(p.next(t0), Some((bulk, 3)));
        // The writer took the first sample only.
        assert!(p.give_back(bulk, &[2, 3], t0 + HOLD));
        assert_eq!(p.next(t0), None, "held");
        assert_eq!(p.poll_at(t0), Some(t0 + HOLD));
        p.push(high, 9);
        assert_eq!(p.next(t0), Some((high, 1)), "others go meanwhile");
        assert_eq!(p.next(t0 + HOLD), Some((bulk, 2)));
        let s = &p.stats().flows[bulk];
        assert_eq!((s.sent, s.bytes, s.held), (3, 6, 1));
        // A closed flow takes nothing, not even what it gives back.
        p.close(bulk);
        assert!(!p.push(bulk, 1));
        assert!(!p.give_back(bulk, &[1], t0));
        assert_eq!(p.next(t0 + HOLD), None);
    }

    /// Samples arriving every `gap` for `span`, each draining the queue: how many sends.
    fn sends(window: Duration, gap: Duration, span: Duration) -> usize {
        let t0 = Instant::now();
        let mut c = Coalescer::new(window);
        let mut sends = 0;
        let mut t = t0;
        while t < t0 + span {
            // A held send comes due before the next sample.
            if c.take_due(t) {
                sends += 1;
            }
            if c.drained(t) {
                sends += 1;
            }
            t += gap;
        }
        if c.next_due().is_some() {
            sends += 1;
        }
        sends
    }

    #[test]
    fn a_busy_flow_sends_once_per_window_and_a_sparse_one_at_once() {
        let ms = Duration::from_millis;
        // 16 applications at 1 kHz: a sample every 62.5 µs for 100 ms.
        let busy = sends(ms(1), Duration::from_micros(62), ms(100));
        assert!((95..=105).contains(&busy), "{busy} sends");
        assert_eq!(
            sends(Duration::ZERO, Duration::from_micros(62), ms(100)),
            1613
        );
        // 100 Hz: every sample finds the flow idle and goes at once.
        let mut c = Coalescer::new(ms(1));
        let t0 = Instant::now();
        for i in 0..10u32 {
            assert!(c.drained(t0 + ms(10) * i), "sample {i} waited");
        }
        assert_eq!(c.next_due(), None);
    }

    #[test]
    fn a_held_send_is_due_one_window_after_the_last() {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut c = Coalescer::new(ms(1));
        assert!(c.drained(t0));
        assert!(!c.drained(t0 + Duration::from_micros(100)));
        assert!(!c.drained(t0 + Duration::from_micros(500)));
        assert_eq!(c.next_due(), Some(t0 + ms(1)));
        assert!(!c.take_due(t0 + Duration::from_micros(999)));
        assert!(c.take_due(t0 + ms(1)));
        assert_eq!(c.next_due(), None);
    }

    #[test]
    fn rates_parse() {
        assert_eq!(
            "125k/16k".parse::<Rate>(),
            Ok(Rate {
                bytes_per_sec: 125_000,
                burst: 16_000
            })
        );
        assert_eq!("2M".parse::<Rate>().unwrap().burst, 200_000);
        assert!("0".parse::<Rate>().is_err());
        assert!("x/1".parse::<Rate>().is_err());
    }
}
