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

mod access;
mod input;
mod instance;
mod lifespan;
mod ordered;
mod purge;
mod query;
mod read;
mod types;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use tessera_rtps::fasthash::FastHashMap;

use instance::{Instance, Slot, NONE};
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
}

fn slot_mut<T>(slots: &mut [Option<Instance<T>>], slot: Slot) -> Option<&mut Instance<T>> {
    slots.get_mut(slot as usize).and_then(Option::as_mut)
}
