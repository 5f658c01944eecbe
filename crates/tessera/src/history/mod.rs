//! The reader-side history cache of a DataReader (DDS 1.4 §2.2.2.5).
//!
//! [`History`] holds the samples a reader has received, per instance, with the instance and
//! sample state machines of DDS, and implements the read and take operations with their state
//! masks and `SampleInfo` computation. It is a plain data structure: no I/O, no threads, no
//! clock (every timestamp is an argument; the one exception is the monotonic clock an owner may
//! give it for autopurge), so the DataReader wraps it in its own lock.
//!
//! # Model
//!
//! * An **instance** is named by its 16-byte key hash (all zeros for a keyless topic) and gets an
//!   [`InstanceHandle`] that stays the same until the instance is purged. It has an
//!   [`InstanceState`], a [`ViewState`], the disposed and no-writers generation counts, the set
//!   of writers that registered it (by writing or disposing it), and a queue of samples in
//!   reception order.
//! * **Writing** ([`History::insert`]) a not-alive instance makes it alive again: the matching
//!   generation count goes up and its view state becomes NEW.
//! * **Dispose** ([`History::dispose`]) makes it NOT_ALIVE_DISPOSED. **Unregistering** the last
//!   writer ([`History::unregister`]) or **losing** it ([`History::writer_lost`]) makes an alive
//!   instance NOT_ALIVE_NO_WRITERS. A disposed instance stays disposed when its writers go.
//! * A state change to not-alive is announced by an **invalid sample** (`valid_data == false`,
//!   no data) unless the instance holds a not-read sample, which then carries the new state.
//!   There is at most one invalid sample per instance, always the newest; it is dropped when
//!   valid data arrives (the new data shows the change through its generation counts). Invalid
//!   samples do not count against the history depth or the resource limits.
//! * An instance that holds no sample, is not alive and has no registered writer is **purged**
//!   at once (DDS: a reader keeps an instance while writers may still write it, to compute its
//!   states). Its handle is then unknown; a later write of the same key makes a new instance
//!   (view state NEW, generation counts from zero). Disposed instances whose writers never
//!   unregister are bounded by autopurge (below) and by the reader's instance limit.
//! * **Autopurge** (the READER_DATA_LIFECYCLE QoS, [`Lifecycle`]): an instance that stays
//!   NOT_ALIVE_NO_WRITERS or NOT_ALIVE_DISPOSED for the configured delay is purged with all its
//!   samples, read or not. Delays count from the local times given with the state changes,
//!   and [`History::purge_expired`] (also run at the start of every insert, dispose and
//!   unregister) purges what is due at the `now` it is given; unless the owner gave the cache
//!   a monotonic clock to measure them on ([`History::set_purge_clock`]), since a wall clock
//!   that steps would purge early or late. Pending
//!   purges are kept in a queue ordered by deadline, one entry per instance, so a cache with
//!   nothing due pays one comparison.
//!
//! # Reading
//!
//! Read and take return the samples of each selected instance together and in order; instances
//! come in the order in which they last went from empty to non-empty (roughly arrival order),
//! except for the `next_instance` forms, which go by handle. Read marks the returned samples
//! READ; take removes them; either makes the instance NOT_NEW if it returned a sample of it.
//! The [`SampleInfo`] shows the states from before the call.
//!
//! # Cost
//!
//! Instances live in a slab indexed by a hash map (key hash to slot, with a one-entry cache
//! that makes keyless and single-instance topics skip the hash) and an ordered map (handle to
//! slot, for `next_instance`). Non-empty instances are threaded on an intrusive list so that
//! `take` never visits empty instances. Inserting into an existing instance and taking from it
//! are O(1) and allocate nothing once the instance's queue has grown to its working size and
//! the caller reuses its output vector ([`History::take_into`]).

mod instance;
mod lifespan;
mod ordered;
mod query;
mod read;
mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Bound;
use std::time::Duration;
use tessera_rtps::fasthash::FastHashMap;

use instance::{Instance, Slot, Stored, NONE};
use query::Query;
pub use types::{
    DestinationOrder, HistoryConfig, HistoryError, HistoryKind, InsertOutcome, InstanceHandle,
    InstanceState, InstanceStateMask, InstanceStatus, KeyHash, Lifecycle, RejectReason,
    ResourceLimits, Sample, SampleInfo, SampleState, SampleStateMask, Selection, StateMasks,
    UpdateOutcome, ViewState, ViewStateMask, WriterGuid, KEYLESS, UNLIMITED,
};

/// Whether an access copies samples out (read) or moves them out (take).
enum Mode<T> {
    Read(fn(&T) -> T),
    Take,
}

impl<T> Clone for Mode<T> {
    fn clone(&self) -> Mode<T> {
        *self
    }
}

impl<T> Copy for Mode<T> {}

/// The history cache of one DataReader; see the [module documentation](self).
#[derive(Clone)]
pub struct History<T> {
    config: HistoryConfig,
    slots: Vec<Option<Instance<T>>>,
    free: Vec<Slot>,
    by_key: FastHashMap<KeyHash, Slot>,
    by_handle: BTreeMap<InstanceHandle, Slot>,
    next_handle: u64,
    /// Slot of the instance last looked up by key (checked against its key before use).
    last_slot: Slot,
    /// Intrusive list of non-empty instances.
    head: Slot,
    tail: Slot,
    /// All samples, valid or not.
    total: usize,
    /// Samples with data (what `max_samples` limits).
    valid_total: usize,
    /// Samples not read yet.
    not_read_total: usize,
    /// Not-alive instances due for autopurge, by deadline (ns on the purge clock).
    purge_queue: BTreeSet<(i64, InstanceHandle)>,
    /// The clock autopurge delays are measured on; `None`: the timestamps the caller gives.
    purge_clock: Option<fn() -> i64>,
    /// Instances purged by autopurge so far.
    autopurged: u64,
    /// The earliest LIFESPAN expiry set since the last sweep (see [`History::drop_expired`]).
    next_expiry: Option<i64>,
    /// PRESENTATION ordered access (see [`ordered`]).
    order: ordered::Order,
}

impl<T> fmt::Debug for History<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("History")
            .field("config", &self.config)
            .field("instances", &self.by_key.len())
            .field("samples", &self.total)
            .field("not_read", &self.not_read_total)
            .finish_non_exhaustive()
    }
}

impl<T> Default for History<T> {
    fn default() -> History<T> {
        History::new(HistoryConfig::default())
    }
}

impl<T> History<T> {
    /// An empty cache.
    pub fn new(config: HistoryConfig) -> History<T> {
        History {
            config,
            slots: Vec::new(),
            free: Vec::new(),
            by_key: FastHashMap::default(),
            by_handle: BTreeMap::new(),
            next_handle: 1,
            last_slot: NONE,
            head: NONE,
            tail: NONE,
            total: 0,
            valid_total: 0,
            not_read_total: 0,
            purge_queue: BTreeSet::new(),
            purge_clock: None,
            autopurged: 0,
            next_expiry: None,
            order: ordered::Order::default(),
        }
    }

    /// The configuration the cache was made with.
    pub fn config(&self) -> &HistoryConfig {
        &self.config
    }

    /// Number of samples held, including invalid (state-change) samples.
    pub fn len(&self) -> usize {
        self.total
    }

    /// Whether the cache holds no sample (it may still hold instances).
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Number of samples with data held (what `max_samples` limits).
    pub fn valid_len(&self) -> usize {
        self.valid_total
    }

    /// Number of samples not read yet.
    pub fn not_read_len(&self) -> usize {
        self.not_read_total
    }

    /// Number of instances held.
    pub fn instance_count(&self) -> usize {
        self.by_key.len()
    }

    /// Number of instances purged by autopurge (READER_DATA_LIFECYCLE) so far.
    pub fn autopurged(&self) -> u64 {
        self.autopurged
    }

    /// Measures autopurge delays on `clock` (ns, monotonic) from now on, instead of on the
    /// timestamps given with the state changes: those are wall-clock times, and a wall clock
    /// stepped forward would purge early (backward: late). Set before anything is scheduled;
    /// [`History::purge_expired`] and [`History::next_purge`] are then on `clock` too.
    pub fn set_purge_clock(&mut self, clock: fn() -> i64) {
        self.purge_clock = Some(clock);
    }

    /// The purge clock's time: its own reading, else `given` (the caller's timestamp).
    fn purge_now(&self, given: i64) -> i64 {
        self.purge_clock.map_or(given, |c| c())
    }

    /// [`History::purge_expired`] at the caller's timestamp `given` or the purge clock's time;
    /// reads the clock only when a purge is pending (this runs on every insert).
    fn purge_due(&mut self, given: i64) -> usize {
        if self.purge_queue.is_empty() {
            return 0;
        }
        self.purge_expired(self.purge_now(given))
    }

    /// The earliest time (ns, the purge clock) at which a not-alive instance is due for
    /// autopurge, if any is scheduled.
    pub fn next_purge(&self) -> Option<i64> {
        self.purge_queue.first().map(|&(t, _)| t)
    }

    /// Purges every not-alive instance whose autopurge delay has run out at `now` (ns, the
    /// purge clock: see [`History::set_purge_clock`]), with all its samples. Returns how many.
    pub fn purge_expired(&mut self, now: i64) -> usize {
        let mut n = 0;
        while let Some(&(at, handle)) = self.purge_queue.first() {
            if at > now {
                break;
            }
            self.purge_queue.pop_first();
            if let Some(&slot) = self.by_handle.get(&handle) {
                if let Some(i) = slot_mut(&mut self.slots, slot) {
                    i.purge_at = None;
                }
                self.remove_instance(slot);
                n += 1;
            }
        }
        self.autopurged += n as u64;
        n
    }

    /// The handle of the instance with this key hash, if the cache holds it.
    pub fn lookup_instance(&self, key: &KeyHash) -> Option<InstanceHandle> {
        self.find(key).and_then(|s| self.inst(s)).map(|i| i.handle)
    }

    /// The key hash of an instance.
    pub fn key_value(&self, handle: InstanceHandle) -> Option<KeyHash> {
        self.by_handle
            .get(&handle)
            .and_then(|&s| self.inst(s))
            .map(|i| i.key)
    }

    /// The newest sample data the cache keeps for an instance, with no state changed
    /// (`get_key_value`); `None` for an unknown instance or one without data kept.
    pub fn newest_data(&self, handle: InstanceHandle) -> Option<&T> {
        let i = self.by_handle.get(&handle).and_then(|&s| self.inst(s))?;
        i.samples.iter().rev().find_map(|s| s.data.as_ref())
    }

    /// The handles of all instances held, in increasing order.
    pub fn instance_handles(&self) -> impl Iterator<Item = InstanceHandle> + '_ {
        self.by_handle.keys().copied()
    }

    /// The current state of an instance.
    pub fn instance_status(&self, handle: InstanceHandle) -> Option<InstanceStatus> {
        let i = self.by_handle.get(&handle).and_then(|&s| self.inst(s))?;
        Some(InstanceStatus {
            handle: i.handle,
            key_hash: i.key,
            instance_state: i.state,
            view_state: i.view,
            disposed_generation_count: i.disposed_gen,
            no_writers_generation_count: i.no_writers_gen,
            samples: i.samples.len(),
            not_read: i.not_read,
            writers: i.writers.len(),
        })
    }

    /// Whether any sample matches `masks` (the trigger of a read condition). O(1) when the view
    /// and instance masks are ANY; otherwise it visits the non-empty instances.
    pub fn has_matching(&self, masks: StateMasks) -> bool {
        let want_read = masks.sample.contains(SampleStateMask::READ);
        let want_unread = masks.sample.contains(SampleStateMask::NOT_READ);
        if masks.view == ViewStateMask::ANY && masks.instance == InstanceStateMask::ANY {
            return (want_read && self.total > self.not_read_total)
                || (want_unread && self.not_read_total > 0);
        }
        let mut cur = self.head;
        while let Some(i) = self.inst(cur) {
            if masks.selects_instance(i.view, i.state)
                && ((want_read && i.read_count() > 0) || (want_unread && i.not_read > 0))
            {
                return true;
            }
            cur = i.next;
        }
        false
    }

    /// Whether any sample has not been read yet.
    pub fn has_unread(&self) -> bool {
        self.not_read_total > 0
    }

    // ----------------------------------------------------------------------------------------
    // Input

    /// Stores a sample with data written by `writer` to the instance `key`.
    ///
    /// Creates the instance if needed, makes a not-alive instance alive again (new generation,
    /// view state NEW) and registers `writer` with it. In keep-last mode a full instance drops
    /// its oldest sample; in keep-all mode a sample beyond the resource limits is rejected and
    /// nothing changes.
    pub fn insert(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        data: T,
        source_ts: i64,
        reception_ts: i64,
    ) -> InsertOutcome {
        let mut replaced = None;
        self.insert_reclaiming(key, writer, data, source_ts, reception_ts, &mut replaced)
    }

    /// [`History::insert`] that hands the data of a sample it drops (keep-last replacement)
    /// to the caller through `replaced`, so that its buffers can be reused.
    pub fn insert_reclaiming(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        data: T,
        source_ts: i64,
        reception_ts: i64,
        replaced: &mut Option<T>,
    ) -> InsertOutcome {
        let by_source = self.config.destination_order == DestinationOrder::BySourceTimestamp;
        self.insert_ordered(
            key,
            writer,
            (data, source_ts, reception_ts),
            by_source,
            replaced,
        )
    }

    /// [`History::insert_reclaiming`] for a sample whose place in the order is already agreed
    /// (an ATOMIC writer's committed log entry at an ATOMIC reader): stored in the order given
    /// even under DESTINATION_ORDER BY_SOURCE_TIMESTAMP, so an older source timestamp does not
    /// make it [`InsertOutcome::Outdated`].
    pub fn insert_reclaiming_in_order(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        data: T,
        source_ts: i64,
        reception_ts: i64,
        replaced: &mut Option<T>,
    ) -> InsertOutcome {
        self.insert_ordered(
            key,
            writer,
            (data, source_ts, reception_ts),
            false,
            replaced,
        )
    }

    /// The insert; `by_source`: drop a sample older than the instance's newest.
    fn insert_ordered(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        (data, source_ts, reception_ts): (T, i64, i64),
        by_source: bool,
        replaced: &mut Option<T>,
    ) -> InsertOutcome {
        self.purge_due(reception_ts);
        let limits = self.config.limits;
        let slot = match self.find_cached(&key) {
            Some(s) => s,
            None => {
                if limits.max_samples.is_some_and(|m| self.valid_total >= m) {
                    return InsertOutcome::Rejected(RejectReason::SamplesLimit);
                }
                if self.config.history == HistoryKind::KeepAll
                    && limits.max_samples_per_instance == Some(0)
                {
                    return InsertOutcome::Rejected(RejectReason::SamplesPerInstanceLimit);
                }
                match self.create(key, InstanceState::Alive) {
                    Ok(s) => s,
                    Err(r) => return InsertOutcome::Rejected(r),
                }
            }
        };
        let (depth, keep_all) = match self.config.history {
            HistoryKind::KeepLast(d) => (d.max(1) as usize, false),
            HistoryKind::KeepAll => (usize::MAX, true),
        };
        let per_instance = limits.max_samples_per_instance.unwrap_or(usize::MAX);
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return InsertOutcome::Rejected(RejectReason::InstancesLimit);
        };
        if by_source && inst.last_source_ts.is_some_and(|t| source_ts < t) {
            return InsertOutcome::Outdated(inst.handle);
        }

        // Decide before changing anything.
        let replace = if keep_all {
            if inst.valid_len >= per_instance {
                return InsertOutcome::Rejected(RejectReason::SamplesPerInstanceLimit);
            }
            false
        } else {
            inst.valid_len >= depth.min(per_instance).max(1)
        };
        if !replace && limits.max_samples.is_some_and(|m| self.valid_total >= m) {
            return InsertOutcome::Rejected(RejectReason::SamplesLimit);
        }

        // A pending invalid sample is superseded by the new data.
        if inst.has_invalid {
            if let Some(s) = inst.samples.pop_back() {
                self.total -= 1;
                if !s.read {
                    inst.not_read -= 1;
                    self.not_read_total -= 1;
                }
            }
            inst.has_invalid = false;
        }
        if replace {
            if let Some(old) = inst.samples.pop_front() {
                inst.valid_len -= 1;
                self.valid_total -= 1;
                self.total -= 1;
                if !old.read {
                    inst.not_read -= 1;
                    self.not_read_total -= 1;
                }
                *replaced = old.data;
            }
        }
        match inst.state {
            InstanceState::Alive => {}
            InstanceState::NotAliveDisposed => {
                inst.disposed_gen = inst.disposed_gen.wrapping_add(1);
                inst.view = ViewState::New;
            }
            InstanceState::NotAliveNoWriters => {
                inst.no_writers_gen = inst.no_writers_gen.wrapping_add(1);
                inst.view = ViewState::New;
            }
        }
        inst.state = InstanceState::Alive;
        if let Some(at) = inst.purge_at.take() {
            self.purge_queue.remove(&(at, inst.handle));
        }
        inst.writers.insert(writer);
        inst.last_source_ts = Some(inst.last_source_ts.map_or(source_ts, |t| t.max(source_ts)));
        inst.samples.push_back(Stored {
            data: Some(data),
            source_ts,
            reception_ts,
            writer,
            disposed_gen: inst.disposed_gen,
            no_writers_gen: inst.no_writers_gen,
            read: false,
            taken: false,
            expires: i64::MAX,
            order: self.order.next(),
        });
        inst.valid_len += 1;
        inst.not_read += 1;
        let handle = inst.handle;
        self.total += 1;
        self.valid_total += 1;
        self.not_read_total += 1;
        self.link(slot);
        if replace {
            InsertOutcome::Replaced(handle)
        } else {
            InsertOutcome::Accepted(handle)
        }
    }

    /// `writer` disposed the instance `key` at source time `ts`; the cache learned of it at
    /// `reception_ts`.
    ///
    /// The instance becomes NOT_ALIVE_DISPOSED (created in that state if unknown, so the reader
    /// learns of it) and `writer` counts as registered with it.
    pub fn dispose(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> UpdateOutcome {
        let by_source = self.config.destination_order == DestinationOrder::BySourceTimestamp;
        self.dispose_ordered(key, writer, (ts, reception_ts), by_source)
    }

    /// [`History::dispose`] in the order given whatever the source timestamp, as
    /// [`History::insert_reclaiming_in_order`].
    pub fn dispose_in_order(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> UpdateOutcome {
        self.dispose_ordered(key, writer, (ts, reception_ts), false)
    }

    /// The dispose; `by_source`: ignore one older than the instance's newest update.
    fn dispose_ordered(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        (ts, reception_ts): (i64, i64),
        by_source: bool,
    ) -> UpdateOutcome {
        self.purge_due(reception_ts);
        let delay = self.config.lifecycle.autopurge_disposed_samples_delay;
        let slot = match self.find_cached(&key) {
            Some(s) => s,
            None => match self.create(key, InstanceState::NotAliveDisposed) {
                Ok(s) => {
                    if let Some(inst) = slot_mut(&mut self.slots, s) {
                        inst.writers.insert(writer);
                        inst.last_source_ts = Some(ts);
                    }
                    self.schedule_purge(s, reception_ts, delay);
                    let h = self.notify(s, writer, ts, reception_ts);
                    return UpdateOutcome::Changed(h);
                }
                Err(r) => return UpdateOutcome::Rejected(r),
            },
        };
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return UpdateOutcome::UnknownInstance;
        };
        if by_source && inst.last_source_ts.is_some_and(|t| ts < t) {
            return UpdateOutcome::Outdated(inst.handle);
        }
        inst.last_source_ts = Some(inst.last_source_ts.map_or(ts, |t| t.max(ts)));
        inst.writers.insert(writer);
        if inst.state == InstanceState::NotAliveDisposed {
            return UpdateOutcome::Unchanged(inst.handle);
        }
        inst.state = InstanceState::NotAliveDisposed;
        self.schedule_purge(slot, reception_ts, delay);
        UpdateOutcome::Changed(self.notify(slot, writer, ts, reception_ts))
    }

    /// `writer` unregistered the instance `key` at source time `ts`; the cache learned of it
    /// at `reception_ts`.
    ///
    /// When it was the last writer of an alive instance, the instance becomes
    /// NOT_ALIVE_NO_WRITERS. An instance left empty and not alive is purged.
    pub fn unregister(
        &mut self,
        key: KeyHash,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> UpdateOutcome {
        self.purge_due(reception_ts);
        match self.find_cached(&key) {
            Some(slot) => self.remove_writer(slot, &writer, ts, reception_ts),
            None => UpdateOutcome::UnknownInstance,
        }
    }

    /// `writer` is gone (lost its liveliness or no longer matches) at local time `now`: it is
    /// unregistered from every instance. Returns how many instances changed state (to
    /// NOT_ALIVE_NO_WRITERS). This visits every instance.
    pub fn writer_lost(&mut self, writer: WriterGuid, now: i64) -> usize {
        self.purge_due(now);
        let mut changed = 0;
        for slot in 0..self.slots.len() as Slot {
            let registered = self.inst(slot).is_some_and(|i| i.writers.contains(&writer));
            if registered && self.remove_writer(slot, &writer, now, now).is_changed() {
                changed += 1;
            }
        }
        changed
    }

    // ----------------------------------------------------------------------------------------
    // Access

    /// Takes up to `max` samples of any state, appending them to `out`: the fast path of the
    /// common "take everything" loop. Allocates nothing when `out` has room. Returns how many
    /// samples were appended.
    pub fn take_into(&mut self, out: &mut Vec<Sample<T>>, max: usize) -> usize {
        self.access_all(out, max, StateMasks::ANY, Mode::Take)
    }

    /// Takes up to `max` samples matching `masks` from the instances `selection` names,
    /// appending them to `out`; returns how many.
    pub fn take_selected_into(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
    ) -> Result<usize, HistoryError> {
        self.access(out, selection, max, masks, Mode::Take)
    }

    /// Takes up to `max` samples matching `masks` (DDS `take`).
    pub fn take(&mut self, max: usize, masks: StateMasks) -> Vec<Sample<T>> {
        let mut out = Vec::new();
        self.access_all(&mut out, max, masks, Mode::Take);
        out
    }

    /// Takes up to `max` samples of one instance (DDS `take_instance`).
    pub fn take_instance(
        &mut self,
        handle: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Result<Vec<Sample<T>>, HistoryError> {
        let mut out = Vec::new();
        self.access(
            &mut out,
            Selection::Instance(handle),
            max,
            masks,
            Mode::Take,
        )?;
        Ok(out)
    }

    /// Takes up to `max` samples of the next instance after `prev` in handle order that has
    /// matching samples (DDS `take_next_instance`; start with [`InstanceHandle::NIL`]).
    pub fn take_next_instance(
        &mut self,
        prev: InstanceHandle,
        max: usize,
        masks: StateMasks,
    ) -> Vec<Sample<T>> {
        let mut out = Vec::new();
        self.access_next(&mut out, prev, max, masks, Mode::Take, &mut None);
        out
    }

    fn access(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
    ) -> Result<usize, HistoryError> {
        self.access_query(out, selection, max, masks, mode, &mut None)
    }

    /// [`History::access`] keeping only the samples with data that pass `query` (a query
    /// condition's expression) when there is one.
    fn access_query(
        &mut self,
        out: &mut Vec<Sample<T>>,
        selection: Selection,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> Result<usize, HistoryError> {
        match selection {
            Selection::All => Ok(self.access_all_query(out, max, masks, mode, query)),
            Selection::Instance(h) => match self.by_handle.get(&h) {
                Some(&slot) => Ok(self.access_instance(slot, out, max, masks, mode, query)),
                None => Err(HistoryError::UnknownInstance(h)),
            },
            Selection::NextInstance(prev) => {
                Ok(self.access_next(out, prev, max, masks, mode, query))
            }
        }
    }

    fn access_all(
        &mut self,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
    ) -> usize {
        self.access_all_query(out, max, masks, mode, &mut None)
    }

    fn access_all_query(
        &mut self,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        if self.order.on {
            return self.access_ordered(out, max, masks, mode, query);
        }
        self.access_by_instance(out, max, masks, mode, query)
    }

    /// Every instance in turn, up to `max` samples.
    fn access_by_instance(
        &mut self,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        let mut n = 0;
        let mut cur = self.head;
        while cur != NONE && n < max {
            let next = self.inst(cur).map_or(NONE, |i| i.next);
            n += self.access_instance(cur, out, max - n, masks, mode, query);
            cur = next;
        }
        n
    }

    fn access_next(
        &mut self,
        out: &mut Vec<Sample<T>>,
        prev: InstanceHandle,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        if max == 0 {
            return 0;
        }
        let mut from = prev;
        loop {
            let found = self
                .by_handle
                .range((Bound::Excluded(from), Bound::Unbounded))
                .map(|(&h, &s)| (h, s))
                .find(|&(_, s)| {
                    self.inst(s).is_some_and(|i| {
                        i.selectable(masks.sample) > 0 && masks.selects_instance(i.view, i.state)
                    })
                });
            let Some((handle, slot)) = found else {
                return 0;
            };
            // With a query the instance may hold no passing sample: then the next one.
            let n = self.access_instance(slot, out, max, masks, mode, query);
            if n > 0 || query.is_none() {
                return n;
            }
            from = handle;
        }
    }

    /// Reads or takes up to `max` matching samples of one instance; the heart of every access.
    fn access_instance(
        &mut self,
        slot: Slot,
        out: &mut Vec<Sample<T>>,
        max: usize,
        masks: StateMasks,
        mode: Mode<T>,
        query: &mut Query<'_, T>,
    ) -> usize {
        // Ordered access with a limit: only samples up to the cut-off (see `ordered`).
        let ceiling = self.order.ceiling;
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return 0;
        };
        if !masks.selects_instance(inst.view, inst.state) {
            return 0;
        }
        let want_read = masks.sample.contains(SampleStateMask::READ);
        let want_unread = masks.sample.contains(SampleStateMask::NOT_READ);
        // A query is evaluated once per sample (it may decode it); invalid samples never pass.
        let passed: Option<Vec<bool>> = query.as_mut().map(|q| {
            inst.samples
                .iter()
                .map(|s| s.data.as_ref().is_some_and(&mut *q))
                .collect()
        });
        let selected = |idx: usize, s: &Stored<T>| {
            (if s.read { want_read } else { want_unread })
                && passed.as_ref().is_none_or(|p| p[idx])
                && s.order <= ceiling
        };
        let n = match &passed {
            None if ceiling == u64::MAX => inst.selectable(masks.sample),
            None => inst
                .samples
                .iter()
                .enumerate()
                .filter(|(i, s)| selected(*i, s))
                .count(),
            Some(_) => inst
                .samples
                .iter()
                .enumerate()
                .filter(|(i, s)| selected(*i, s))
                .count(),
        }
        .min(max);
        if n == 0 {
            return 0;
        }
        // The most recent sample of the instance in the returned collection is the n-th selected.
        let mrsic_gen = if want_read && want_unread && passed.is_none() && ceiling == u64::MAX {
            inst.samples.get(n - 1).map_or(0, |s| s.generation())
        } else {
            inst.samples
                .iter()
                .enumerate()
                .filter(|(i, s)| selected(*i, s))
                .nth(n - 1)
                .map_or(0, |(_, s)| s.generation())
        };
        let inst_gen = inst.generation();
        let (view, state, handle) = (inst.view, inst.state, inst.handle);
        let take = matches!(mode, Mode::Take);

        let mut emitted = 0usize;
        let mut valid_taken = 0usize;
        let mut newly_read = 0usize;
        let mut last_index = 0usize;
        for (idx, s) in inst.samples.iter_mut().enumerate() {
            if emitted == n {
                break;
            }
            if !selected(idx, s) {
                continue;
            }
            let valid = s.data.is_some();
            let generation = s.generation();
            let info = SampleInfo {
                sample_state: if s.read {
                    SampleState::Read
                } else {
                    SampleState::NotRead
                },
                view_state: view,
                instance_state: state,
                source_timestamp: s.source_ts,
                reception_timestamp: s.reception_ts,
                instance_handle: handle,
                publication_handle: s.writer,
                disposed_generation_count: s.disposed_gen,
                no_writers_generation_count: s.no_writers_gen,
                sample_rank: (n - 1 - emitted) as u32,
                generation_rank: mrsic_gen.wrapping_sub(generation),
                absolute_generation_rank: inst_gen.wrapping_sub(generation),
                valid_data: valid,
            };
            let data = match mode {
                Mode::Read(copy) => s.data.as_ref().map(copy),
                Mode::Take => s.data.take(),
            };
            out.push(Sample { data, info });
            if self.order.on {
                self.order.emitted.push(s.order);
            }
            if !s.read {
                s.read = true;
                newly_read += 1;
            }
            if take {
                s.taken = true;
                if valid {
                    valid_taken += 1;
                }
            }
            emitted += 1;
            last_index = idx;
        }
        inst.not_read -= newly_read;
        self.not_read_total -= newly_read;
        inst.view = ViewState::NotNew;
        if take {
            if last_index + 1 == n {
                // The taken samples are a prefix (always so with an ANY sample mask).
                inst.samples.drain(..n);
            } else {
                inst.samples.retain(|s| !s.taken);
            }
            if n - valid_taken > 0 {
                inst.has_invalid = false;
            }
            inst.valid_len -= valid_taken;
            self.valid_total -= valid_taken;
            self.total -= n;
            self.unlink_if_empty(slot);
            self.purge_if_dead(slot);
        }
        emitted
    }

    // ----------------------------------------------------------------------------------------
    // Internals

    fn inst(&self, slot: Slot) -> Option<&Instance<T>> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    fn find(&self, key: &KeyHash) -> Option<Slot> {
        if self.inst(self.last_slot).is_some_and(|i| i.key == *key) {
            return Some(self.last_slot);
        }
        self.by_key.get(key).copied()
    }

    fn find_cached(&mut self, key: &KeyHash) -> Option<Slot> {
        let s = self.find(key)?;
        self.last_slot = s;
        Some(s)
    }

    /// Creates an instance (no samples, no writers) if `max_instances` allows.
    fn create(&mut self, key: KeyHash, state: InstanceState) -> Result<Slot, RejectReason> {
        if self
            .config
            .limits
            .max_instances
            .is_some_and(|m| self.by_key.len() >= m)
        {
            return Err(RejectReason::InstancesLimit);
        }
        let handle = InstanceHandle::from_raw(self.next_handle);
        self.next_handle += 1;
        let inst = Instance::new(key, handle, state);
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(inst);
                s
            }
            None => {
                self.slots.push(Some(inst));
                (self.slots.len() - 1) as Slot
            }
        };
        self.by_key.insert(key, slot);
        self.by_handle.insert(handle, slot);
        self.last_slot = slot;
        Ok(slot)
    }

    /// Announces a change to a not-alive state: adds an invalid sample unless a not-read sample
    /// already carries the news. Returns the instance handle.
    fn notify(
        &mut self,
        slot: Slot,
        writer: WriterGuid,
        ts: i64,
        reception_ts: i64,
    ) -> InstanceHandle {
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return InstanceHandle::NIL;
        };
        let handle = inst.handle;
        if inst.not_read > 0 {
            return handle;
        }
        if inst.has_invalid && inst.samples.pop_back().is_some() {
            // A read invalid sample is replaced by the new one.
            self.total -= 1;
        }
        inst.samples.push_back(Stored {
            data: None,
            source_ts: ts,
            reception_ts,
            writer,
            disposed_gen: inst.disposed_gen,
            no_writers_gen: inst.no_writers_gen,
            read: false,
            taken: false,
            expires: i64::MAX,
            order: self.order.next(),
        });
        inst.has_invalid = true;
        inst.not_read += 1;
        self.not_read_total += 1;
        self.total += 1;
        self.link(slot);
        handle
    }

    fn remove_writer(
        &mut self,
        slot: Slot,
        writer: &WriterGuid,
        ts: i64,
        now: i64,
    ) -> UpdateOutcome {
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return UpdateOutcome::UnknownInstance;
        };
        let handle = inst.handle;
        if !inst.writers.remove(writer) {
            return UpdateOutcome::Unchanged(handle);
        }
        if inst.writers.is_empty() && inst.state == InstanceState::Alive {
            inst.state = InstanceState::NotAliveNoWriters;
            let delay = self.config.lifecycle.autopurge_nowriter_samples_delay;
            self.schedule_purge(slot, now, delay);
            self.notify(slot, *writer, ts, now);
            return UpdateOutcome::Changed(handle);
        }
        self.purge_if_dead(slot);
        UpdateOutcome::Unchanged(handle)
    }

    /// Puts a non-empty instance on the list of non-empty instances (at the tail).
    fn link(&mut self, slot: Slot) {
        let tail = self.tail;
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return;
        };
        if inst.linked || inst.samples.is_empty() {
            return;
        }
        inst.linked = true;
        inst.prev = tail;
        inst.next = NONE;
        match slot_mut(&mut self.slots, tail) {
            Some(t) => t.next = slot,
            None => self.head = slot,
        }
        self.tail = slot;
    }

    fn unlink_if_empty(&mut self, slot: Slot) {
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return;
        };
        if !inst.linked || !inst.samples.is_empty() {
            return;
        }
        inst.linked = false;
        let (prev, next) = (inst.prev, inst.next);
        inst.prev = NONE;
        inst.next = NONE;
        match slot_mut(&mut self.slots, prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match slot_mut(&mut self.slots, next) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
    }

    /// Removes an instance that holds no sample, is not alive and has no registered writer.
    fn purge_if_dead(&mut self, slot: Slot) {
        let dead = self.inst(slot).is_some_and(|i| {
            i.samples.is_empty() && !i.state.is_alive() && i.writers.is_empty() && !i.linked
        });
        if dead {
            self.free_slot(slot);
        }
    }

    /// (Re)schedules the autopurge of a not-alive instance `delay` after `now` (the caller's
    /// timestamp; the purge clock's time when the cache has one); `None`
    /// (infinite) cancels any pending one.
    fn schedule_purge(&mut self, slot: Slot, now: i64, delay: Option<Duration>) {
        // No clock read for an infinite delay (the DDS default).
        let now = if delay.is_some() {
            self.purge_now(now)
        } else {
            now
        };
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return;
        };
        if let Some(at) = inst.purge_at.take() {
            self.purge_queue.remove(&(at, inst.handle));
        }
        if let Some(d) = delay {
            let at = now.saturating_add(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
            inst.purge_at = Some(at);
            self.purge_queue.insert((at, inst.handle));
        }
    }

    /// Drops an instance with all its samples, read or not.
    fn remove_instance(&mut self, slot: Slot) {
        let Some(inst) = slot_mut(&mut self.slots, slot) else {
            return;
        };
        self.total -= inst.samples.len();
        self.valid_total -= inst.valid_len;
        self.not_read_total -= inst.not_read;
        inst.samples.clear();
        inst.valid_len = 0;
        inst.not_read = 0;
        inst.has_invalid = false;
        self.unlink_if_empty(slot);
        self.free_slot(slot);
    }

    /// Frees an instance's slot (its samples must already be gone from the totals).
    fn free_slot(&mut self, slot: Slot) {
        if let Some(inst) = self.slots.get_mut(slot as usize).and_then(Option::take) {
            self.by_key.remove(&inst.key);
            self.by_handle.remove(&inst.handle);
            if let Some(at) = inst.purge_at {
                self.purge_queue.remove(&(at, inst.handle));
            }
            self.free.push(slot);
        }
    }
}

fn slot_mut<T>(slots: &mut [Option<Instance<T>>], slot: Slot) -> Option<&mut Instance<T>> {
    slots.get_mut(slot as usize).and_then(Option::as_mut)
}
