//! Measurement state of `tessera perf`, computing exactly what ddsperf computes:
//!
//! - [`LatencyStats`]: round-trip (pong) and receive ("sublat") latency per reporting interval —
//!   mean, min, max over all samples, percentiles over the first [`RAW_CAPACITY`] samples of the
//!   interval with ddsperf's index rule — plus a whole-run HdrHistogram for the JSON summary.
//! - [`PubHist`]: the publisher's 30 × 1 µs histogram of time spent in `write`.
//! - [`SeqTracker`]: per-publisher, per-key sequence tracking for received/lost counts and the
//!   1 s / 10 s throughput windows.
//! - [`PubPacer`] and [`ClockDecimator`]: the publisher's rate limiter and its clock-read
//!   thinning.
//! - [`PingScheduler`]: when to send pings and how pongs complete a ping cycle.
//!
//! All of it is plain data driven by the caller with explicit timestamps (ns); no clocks or
//! locks inside, so the integrator decides on the locking and every rule is unit tested.

use hdrhistogram::Histogram;

use super::args::PingInterval;

/// Latency samples kept per interval for the percentiles (later ones still count towards
/// mean/min/max/count).
pub const RAW_CAPACITY: usize = 20_000;

/// Summary of one reporting interval, all in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct LatencySummary {
    /// Samples in the interval.
    pub cnt: u32,
    /// Mean over all samples.
    pub mean_ns: f64,
    /// Minimum over all samples.
    pub min_ns: i64,
    /// Median (of the first [`RAW_CAPACITY`] samples).
    pub p50_ns: i64,
    /// 90th percentile (idem).
    pub p90_ns: i64,
    /// 99th percentile (idem).
    pub p99_ns: i64,
    /// Maximum over all samples.
    pub max_ns: i64,
}

/// Whole-run latency summary from the HdrHistogram (3 significant digits), in nanoseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OverallLatency {
    /// All samples of the run.
    pub cnt: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Minimum.
    pub min_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Maximum.
    pub max_ns: u64,
    /// The recorded histogram: `(value_ns, count)` per non-empty bucket in ascending order
    /// (HdrHistogram `iter_recorded`, value = highest equivalent value of the bucket), so that a
    /// reader can rebuild the exact distribution.
    pub hist: Vec<(u64, u64)>,
}

/// Latency statistics of one source (a pong writer, or a data writer with `-l`).
#[derive(Debug, Clone)]
pub struct LatencyStats {
    min: i64,
    max: i64,
    sum: i64,
    cnt: u32,
    totcnt: u64,
    raw: RawSamples,
    /// Bucket counts are `u32` (saturating at 2^32 - 1 per bucket), half the memory of `u64`:
    /// the histogram grows to ~12,000 buckets for a run with millisecond outliers.
    overall: Histogram<u32>,
}

/// The first [`RAW_CAPACITY`] latencies of an interval, for ddsperf's percentiles. Values that
/// fit an `i32` (±2.1 s in ns: nearly all) take 4 bytes; the others are kept apart at full
/// width. Those all lie below or above every narrow value, so the sorted whole is
/// `wide below ++ narrow ++ wide above` and indexing stays exact. Half the memory of a
/// `Vec<i64>`, which a ping at 16,000 round trips/s fills to 128 KiB every second.
#[derive(Debug, Clone, Default)]
struct RawSamples {
    narrow: Vec<i32>,
    wide: Vec<i64>,
}

impl RawSamples {
    fn len(&self) -> usize {
        self.narrow.len() + self.wide.len()
    }

    fn push(&mut self, v: i64) {
        match i32::try_from(v) {
            Ok(n) => self.narrow.push(n),
            Err(_) => self.wide.push(v),
        }
    }

    fn clear(&mut self) {
        self.narrow.clear();
        self.wide.clear();
    }

    fn sort(&mut self) {
        self.narrow.sort_unstable();
        self.wide.sort_unstable();
    }

    /// The `i`-th smallest value (0-based) once sorted.
    fn sorted_at(&self, i: usize) -> Option<i64> {
        let below = self.wide.partition_point(|&v| v < 0);
        if i < below {
            return self.wide.get(i).copied();
        }
        let i = i - below;
        match self.narrow.get(i) {
            Some(&v) => Some(i64::from(v)),
            None => self.wide.get(below + i - self.narrow.len()).copied(),
        }
    }
}

impl Default for LatencyStats {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyStats {
    /// Empty statistics.
    pub fn new() -> Self {
        LatencyStats {
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            cnt: 0,
            totcnt: 0,
            raw: RawSamples {
                narrow: Vec::with_capacity(RAW_CAPACITY),
                wide: Vec::new(),
            },
            // 3 significant digits, auto-resizing: 1 ns .. whatever shows up.
            overall: Histogram::new(3).expect("3 significant digits is a valid precision"),
        }
    }

    /// Records one latency in ns (may be negative for receive latency across clocks).
    pub fn record(&mut self, ns: i64) {
        self.record_with(ns, true);
    }

    /// Records one latency in ns in the interval statistics, and in the whole-run histogram
    /// only if `overall` (false during `--warmup`).
    pub fn record_with(&mut self, ns: i64, overall: bool) {
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum = self.sum.wrapping_add(ns);
        if self.raw.len() < RAW_CAPACITY {
            self.raw.push(ns);
        }
        self.cnt = self.cnt.wrapping_add(1);
        self.totcnt += 1;
        if overall {
            // `record` grows the auto-resizing histogram; `saturating_record` would clamp to
            // its initial range (2047 ns) instead.
            let v = ns.max(0) as u64;
            if self.overall.record(v).is_err() {
                self.overall.saturating_record(v);
            }
        }
    }

    /// Samples recorded in the current interval.
    pub fn interval_count(&self) -> u32 {
        self.cnt
    }

    /// Samples recorded over the whole run (what `-Q roundtrips:N` checks).
    pub fn total_count(&self) -> u64 {
        self.totcnt
    }

    /// Ends the current interval: its summary (`None` if it had no samples, in which case
    /// nothing is printed) and a reset of the interval state.
    pub fn take_interval(&mut self) -> Option<LatencySummary> {
        if self.cnt == 0 {
            return None;
        }
        self.raw.sort();
        let n = self.raw.len();
        let at = |k: usize| self.raw.sorted_at(n - k).unwrap_or(0);
        let s = LatencySummary {
            cnt: self.cnt,
            mean_ns: self.sum as f64 / f64::from(self.cnt),
            min_ns: self.min,
            p50_ns: at(n.div_ceil(2)),
            p90_ns: at(n.div_ceil(10)),
            p99_ns: at(n.div_ceil(100)),
            max_ns: self.max,
        };
        self.min = i64::MAX;
        self.max = i64::MIN;
        self.sum = 0;
        self.cnt = 0;
        self.raw.clear();
        Some(s)
    }

    /// Whole-run summary (`None` before the first sample).
    pub fn overall(&self) -> Option<OverallLatency> {
        let h = &self.overall;
        (!h.is_empty()).then(|| OverallLatency {
            cnt: h.len(),
            mean_ns: h.mean(),
            min_ns: h.min(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            hist: h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), u64::from(v.count_at_value())))
                .collect(),
        })
    }
}

/// Number of bins of the publisher histogram.
pub const PUB_HIST_BINS: usize = 30;
/// Width of one bin of the publisher histogram, ns.
pub const PUB_HIST_BIN_NS: u64 = 1000;

/// The publisher's histogram of the time between consecutive clock reads around `write`
/// (0 when the clock was not read for that sample; see [`ClockDecimator`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PubHist {
    /// Counts per 1 µs bin, `[0,1µs)`, `[1µs,2µs)`, ...
    pub bins: [u64; PUB_HIST_BINS],
    /// Values ≥ 30 µs.
    pub over: u64,
    /// Smallest value since the last reset (`u64::MAX` if none).
    pub min: u64,
    /// Largest value since the last reset (0 if none).
    pub max: u64,
}

impl Default for PubHist {
    fn default() -> Self {
        PubHist {
            bins: [0; PUB_HIST_BINS],
            over: 0,
            min: u64::MAX,
            max: 0,
        }
    }
}

impl PubHist {
    /// Records one value in ns.
    pub fn record(&mut self, ns: u64) {
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        let bin = ns / PUB_HIST_BIN_NS;
        if bin >= PUB_HIST_BINS as u64 {
            self.over += 1;
        } else {
            self.bins[bin as usize] += 1;
        }
    }

    /// Total number of recorded values.
    pub fn count(&self) -> u64 {
        self.over + self.bins.iter().sum::<u64>()
    }

    /// Returns the current contents and resets.
    pub fn take(&mut self) -> PubHist {
        std::mem::take(self)
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct RefCounts {
    nrecv: u64,
    nlost: u64,
    nrecv_bytes: u64,
}

/// Receive statistics of one data publisher (one writer instance handle).
#[derive(Debug, Clone)]
pub struct PubSeqState {
    /// Publication (writer) instance handle.
    pub handle: u64,
    /// The writer's participant handle, if it was known when the first sample arrived.
    pub participant: Option<u64>,
    expected: Vec<u32>,
    /// Samples received.
    pub nrecv: u64,
    /// Samples lost (sum of sequence gaps, wrapping like ddsperf).
    pub nlost: u64,
    /// Payload bytes received (sum of reported sizes).
    pub nrecv_bytes: u64,
    /// Size of the latest sample.
    pub last_size: u32,
    refs: [RefCounts; 10],
    refidx: usize,
    /// Receive latency (`-l` only).
    pub latency: Option<LatencyStats>,
}

/// A received sample carried a key value outside `0..nkeys`: ddsperf prints
/// `received key K >= nkeys N` and exits with status 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyOutOfRange {
    /// The key value received.
    pub key: u32,
    /// The configured number of keys (`-n`).
    pub nkeys: u32,
}

impl std::fmt::Display for KeyOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "received key {} >= nkeys {}", self.key, self.nkeys)
    }
}

/// Counts of one `sub` report line (before dividing by the interval).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct SubInterval {
    /// Size of the latest sample of the last publisher in the table (0 if none).
    pub last_size: u32,
    /// Received since the start.
    pub total: u64,
    /// Lost since the start.
    pub total_lost: u64,
    /// Received in this interval.
    pub delta: u64,
    /// Lost in this interval.
    pub delta_lost: u64,
    /// Bytes received in this interval.
    pub delta_bytes: u64,
    /// Received since the report 10 reports ago (or since the start).
    pub delta10: u64,
    /// Bytes received since the report 10 reports ago (or since the start).
    pub delta10_bytes: u64,
}

/// Per-publisher, per-key expected-sequence tracking (ddsperf's loss accounting).
///
/// A publisher numbers its samples 0, 1, 2, ... across all keys and cycles the key value
/// 0, 1, ..., n−1, so each key sees every n-th sequence number. The tracker expects, per
/// (publisher, key), `last seq + nkeys`; a larger sequence number counts the difference as lost.
#[derive(Debug, Clone)]
pub struct SeqTracker {
    nkeys: u32,
    track_latency: bool,
    pubs: Vec<PubSeqState>,
}

impl SeqTracker {
    /// A tracker for `nkeys` key values (`-n`, ≥ 1); `track_latency` for `-l`.
    pub fn new(nkeys: u32, track_latency: bool) -> Self {
        SeqTracker {
            nkeys: nkeys.max(1),
            track_latency,
            pubs: Vec::new(),
        }
    }

    /// Accounts one valid data sample from publication `handle`. `participant_of` is called for
    /// a publisher seen for the first time (to label its "sublat" line). `latency_ns` is
    /// `now - source_timestamp` (only used with `-l`). Returns whether the sequence number was
    /// the expected one.
    pub fn on_sample(
        &mut self,
        handle: u64,
        seq: u32,
        keyval: u32,
        size: u32,
        latency_ns: i64,
        participant_of: impl FnOnce() -> Option<u64>,
    ) -> Result<bool, KeyOutOfRange> {
        if keyval >= self.nkeys {
            return Err(KeyOutOfRange {
                key: keyval,
                nkeys: self.nkeys,
            });
        }
        let k = keyval as usize;
        if let Some(p) = self.pubs.iter_mut().find(|p| p.handle == handle) {
            let e = p.expected[k];
            p.expected[k] = seq.wrapping_add(self.nkeys);
            p.nrecv += 1;
            p.nrecv_bytes += u64::from(size);
            p.nlost = p.nlost.wrapping_add(u64::from(seq.wrapping_sub(e)));
            p.last_size = size;
            if let Some(l) = p.latency.as_mut() {
                l.record(latency_ns);
            }
            return Ok(seq == e);
        }
        let n = self.nkeys;
        let expected = (0..n)
            .map(|i| {
                seq.wrapping_add(i.wrapping_sub(keyval))
                    .wrapping_add(if i <= keyval { n } else { 0 })
            })
            .collect();
        let latency = self.track_latency.then(|| {
            let mut l = LatencyStats::new();
            l.record(latency_ns);
            l
        });
        self.pubs.push(PubSeqState {
            handle,
            participant: participant_of(),
            expected,
            nrecv: 1,
            nlost: 0,
            nrecv_bytes: u64::from(size),
            last_size: size,
            refs: [RefCounts::default(); 10],
            refidx: 0,
            latency,
        });
        Ok(true)
    }

    /// Ends a reporting interval: the counts for the `sub` line, advancing the 10-report ring.
    pub fn interval(&mut self) -> SubInterval {
        let mut out = SubInterval::default();
        for p in &mut self.pubs {
            let r1 = p.refs[(p.refidx + 9) % 10];
            let r10 = p.refs[p.refidx];
            out.total += p.nrecv;
            out.total_lost = out.total_lost.wrapping_add(p.nlost);
            out.delta += p.nrecv - r1.nrecv;
            out.delta_lost = out.delta_lost.wrapping_add(p.nlost.wrapping_sub(r1.nlost));
            out.delta_bytes += p.nrecv_bytes - r1.nrecv_bytes;
            out.delta10 += p.nrecv - r10.nrecv;
            out.delta10_bytes += p.nrecv_bytes - r10.nrecv_bytes;
            out.last_size = p.last_size;
            p.refs[p.refidx] = RefCounts {
                nrecv: p.nrecv,
                nlost: p.nlost,
                nrecv_bytes: p.nrecv_bytes,
            };
            p.refidx = (p.refidx + 1) % 10;
        }
        out
    }

    /// The publishers seen so far, in order of their first sample.
    pub fn publishers(&self) -> &[PubSeqState] {
        &self.pubs
    }

    /// Mutable access (to take the per-publisher latency intervals).
    pub fn publishers_mut(&mut self) -> &mut [PubSeqState] {
        &mut self.pubs
    }

    /// Total lost over all publishers (checked at exit for reliable keep-all runs).
    pub fn total_lost(&self) -> u64 {
        self.pubs.iter().fold(0u64, |a, p| a.wrapping_add(p.nlost))
    }

    /// Whether every publisher seen delivered at least `min` samples (`-Q samples:N`); true when
    /// no publisher was seen.
    pub fn all_received_at_least(&self, min: u64) -> bool {
        self.pubs.iter().all(|p| p.nrecv >= min)
    }
}

/// The publisher's rate limiter. The rate is in bursts per second and is averaged over the whole
/// run: after each complete burst the publisher sleeps in 1 ms steps (flushing first) while
/// `(written / burst) / (elapsed_s + 0.005) > rate`.
#[derive(Debug, Clone)]
pub struct PubPacer {
    rate: Option<f64>,
    burst: u32,
    in_burst: u32,
    written: u64,
    tfirst: i64,
}

impl PubPacer {
    /// A pacer starting at `tfirst` (ns). `rate` `None` means unlimited; `burst` 0 means the
    /// burst never completes, i.e. unlimited too.
    pub fn new(rate: Option<f64>, burst: u32, tfirst: i64) -> Self {
        PubPacer {
            rate,
            burst,
            in_burst: 0,
            written: 0,
            tfirst,
        }
    }

    /// Samples written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Call after each successful write. Returns true when a burst just completed and the
    /// caller must loop `while pacer.must_wait(now) { flush; sleep 1 ms; now = clock }`.
    pub fn after_write(&mut self) -> bool {
        self.written += 1;
        if self.rate.is_none() {
            return false;
        }
        self.in_burst = self.in_burst.wrapping_add(1);
        if self.in_burst == self.burst {
            self.in_burst = 0;
            true
        } else {
            false
        }
    }

    /// Whether the publisher is ahead of its rate at time `now` (ns).
    pub fn must_wait(&self, now: i64) -> bool {
        match self.rate {
            None => false,
            Some(_) if self.burst == 0 => false,
            Some(rate) => {
                let bursts = (self.written / u64::from(self.burst)) as f64;
                bursts / ((now - self.tfirst) as f64 / 1e9 + 5e-3) > rate
            }
        }
    }
}

/// Thins out clock reads in the publishing loop: the clock is read after a write only every
/// `interval`-th sample, with `interval` adapting between 1 and 10 so that reads happen about
/// every 1–5 µs. Samples written without a clock read get the previous timestamp and record 0
/// in the [`PubHist`].
#[derive(Debug, Clone)]
pub struct ClockDecimator {
    interval: u32,
    counter: u32,
}

impl Default for ClockDecimator {
    fn default() -> Self {
        ClockDecimator {
            interval: 1,
            counter: 1,
        }
    }
}

impl ClockDecimator {
    /// Whether the clock must be read after the write just done.
    pub fn read_clock_now(&self) -> bool {
        self.counter == 1
    }

    /// Call after each write with `dt` = (time after the write) − (timestamp of the write),
    /// which is 0 when the clock was not read.
    pub fn after_write(&mut self, dt_ns: i64) {
        self.counter -= 1;
        if self.counter == 0 {
            if dt_ns < 5_000 && self.interval < 10 {
                self.interval += 1;
            } else if dt_ns > 1_000 && self.interval > 1 {
                self.interval = if dt_ns > 10_000 { 1 } else { self.interval - 1 };
            }
            self.counter = self.interval;
        }
    }

    /// Forces a clock read for every sample again (after sleeping or a write timeout).
    pub fn reset(&mut self) {
        self.interval = 1;
        self.counter = 1;
    }
}

/// What the main loop must do when the ping timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingTimerAction {
    /// Next time (ns) the timer must fire; `None`: keep the previous deadline.
    pub next_deadline: Option<i64>,
    /// Send a new ping with this sequence number (timestamp `now | 1`, then flush).
    pub send_seq: Option<u32>,
    /// Print the "ping timed out" line with this running total.
    pub warn_timeouts: Option<u32>,
}

/// Ping bookkeeping: the current ping's sequence number and send time, how many pongs it got and
/// how many it expects (one per known ddsperf peer, excluding ourselves unless `-L`).
#[derive(Debug, Clone)]
pub struct PingScheduler {
    interval: PingInterval,
    cur_time: i64,
    cur_seq: u32,
    seen: u32,
    expected: u32,
    timeouts: u32,
    twarn: i64,
}

impl PingScheduler {
    /// A scheduler for the given ping mode; nothing sent yet.
    pub fn new(interval: PingInterval) -> Self {
        PingScheduler {
            interval,
            cur_time: 0,
            cur_seq: 0,
            seen: 0,
            expected: 0,
            timeouts: 0,
            twarn: 0,
        }
    }

    /// First timer deadline for a run starting at `tstart`: `None` without pinging; 1 s after
    /// the start in as-fast-as-possible mode; one period after the start otherwise.
    pub fn first_deadline(&self, tstart: i64) -> Option<i64> {
        match self.interval {
            PingInterval::Never => None,
            PingInterval::AsFastAsPossible => Some(tstart + 1_000_000_000),
            PingInterval::Period(p) => Some(tstart + p as i64),
        }
    }

    /// A ddsperf peer appeared (`+1`) or disappeared (`-1`). Timeout warnings are suppressed
    /// for 3.333 s after any change.
    pub fn peers_changed(&mut self, delta: i32, now: i64) {
        if delta == 0 {
            return;
        }
        self.expected = self.expected.wrapping_add_signed(delta);
        self.twarn = now + 3_333_000_000;
    }

    /// Sequence number of the ping now waiting for its pongs.
    pub fn current_seq(&self) -> u32 {
        self.cur_seq
    }

    /// Pongs expected per ping.
    pub fn expected(&self) -> u32 {
        self.expected
    }

    /// Number of pings that were replaced before all pongs arrived.
    pub fn timeouts(&self) -> u32 {
        self.timeouts
    }

    /// A pong arrived. `is_ping` is its timestamp's low bit, `seq` its sequence number. Returns
    /// the sequence number of the follow-up ping to send *now* (as-fast-as-possible mode, when
    /// this pong completed the current ping); the caller sends the received sample with that
    /// `seq` and timestamp `now | 1`, then flushes.
    pub fn on_pong(&mut self, is_ping: bool, seq: u32, now: i64) -> Option<u32> {
        if !(is_ping && seq == self.cur_seq) {
            return None;
        }
        self.seen = self.seen.wrapping_add(1);
        if self.seen == self.expected && self.interval == PingInterval::AsFastAsPossible {
            self.seen = 0;
            self.cur_time = now;
            self.cur_seq = seq.wrapping_add(1);
            Some(self.cur_seq)
        } else {
            None
        }
    }

    /// The ping timer fired at `now`.
    pub fn on_timer(&mut self, now: i64) -> PingTimerAction {
        let period = match self.interval {
            PingInterval::Never => {
                return PingTimerAction {
                    next_deadline: None,
                    send_seq: None,
                    warn_timeouts: None,
                }
            }
            PingInterval::AsFastAsPossible => 1_000_000_000,
            PingInterval::Period(p) => p as i64,
        };
        if now < self.cur_time.saturating_add(period) {
            let next =
                (self.interval == PingInterval::AsFastAsPossible).then_some(self.cur_time + period);
            return PingTimerAction {
                next_deadline: next,
                send_seq: None,
                warn_timeouts: None,
            };
        }
        let mut warn = None;
        if self.seen < self.expected {
            self.timeouts += 1;
            if now > self.twarn {
                warn = Some(self.timeouts);
                self.twarn = now + 1_000_000_000;
            }
        }
        self.seen = 0;
        let next = if self.interval == PingInterval::AsFastAsPossible {
            self.cur_time = now;
            now + period
        } else {
            self.cur_time += period;
            if self.cur_time < now - period / 2 {
                self.cur_time = now;
            }
            self.cur_time + period
        };
        self.cur_seq = self.cur_seq.wrapping_add(1);
        PingTimerAction {
            next_deadline: Some(next),
            send_seq: Some(self.cur_seq),
            warn_timeouts: warn,
        }
    }
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
