//! ATOMIC writers (Consistency QoS): `write` proposes the serialized sample to the topic's
//! consensus group. ATOMIC readers get entries from their own member (the group's log is their
//! history), never over RTPS.
//!
//! **One proposal in flight per writer.** The group deduplicates on `(writer, sn)` and drops a
//! number that is not newer than the writer's last applied one, so a writer's samples must reach
//! the log in sequence-number order. Numbers are given out under the writer's commit-queue lock,
//! and only one proposal of the writer is in flight at a time:
//!
//! - a write that finds the writer idle proposes on its own thread and returns after the commit
//!   (no thread hand-off on the path that decides the round-trip latency);
//! - a write that finds a proposal in flight queues its sample; the writer's committer thread
//!   proposes everything queued as one log entry (a group commit: what arrived while the previous
//!   proposal was in flight) as soon as the writer is idle, so concurrent writers share commits;
//! - with batching on ([`crate::DataWriter::set_batching`], or a LATENCY_BUDGET) `write` returns
//!   once its sample is queued (pipelined): `flush` and `wait_for_acknowledgments` return once
//!   everything queued before them is committed, and a proposal that failed is reported by the
//!   writer's next `write` (which then queues nothing) or `wait_for_acknowledgments`
//!   (`Timeout`: nothing appended; `Indeterminate`: it may still commit). Deleting the writer
//!   waits (a little) for what is queued. Without batching `write` returns after the commit.
//!
//! EVENTUAL readers of the topic (no consensus address in their SEDP data) are not members:
//! after the commit the writer sends the sample to them through its RTPS history, as an
//! EVENTUAL writer would, so they receive committed samples only, each writer's in its commit
//! order (the proposal and the hand-over to the history happen while the writer is busy). A
//! write that ended indeterminate is not sent, even if it commits later: they may miss such a
//! sample, never get an uncommitted one. Samples of different writers are ordered per writer
//! only (as EVENTUAL promises); the total order is for members.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use tessera_atomic::{Bytes, Entry, EntryKind, ProposeError, MAX_BATCH_ENTRIES};
use tessera_rtps::qos::{is_wildcard, Consistency, WriterSideQos};
use tessera_rtps::types::Guid;

use super::{far_deadline, AtomicSample, WriterEndpoint};
use crate::atomic::{group_name, propose_error, Group, ATOMIC_WRITE_TIMEOUT};
use crate::error::{Error, Result};
use crate::participant::ParticipantShared;

/// Most payload bytes one group commit carries (it always carries at least one sample). Larger
/// batches gain little once a commit's fixed cost is shared by dozens of samples, and every
/// member's in-memory log keeps whole entries (`tessera_atomic::Timing::log_bytes`).
const BATCH_BYTES: usize = 1 << 20;
/// Most payload bytes queued behind the proposal in flight: a writer ahead of its group's
/// commits waits (up to `max_blocking_time`) rather than grow memory.
const QUEUE_BYTES: usize = 8 << 20;
/// Most samples queued behind the proposal in flight.
const QUEUE_SAMPLES: usize = 1 << 16;
/// How often an idle committer thread looks whether its writer is gone.
const COMMITTER_IDLE_CHECK: Duration = Duration::from_millis(200);

/// A serialized sample as an entry's payload, shared rather than copied.
struct Shared(Arc<Vec<u8>>);

impl AsRef<[u8]> for Shared {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The consensus side of one ATOMIC writer.
pub(crate) struct AtomicWriter {
    group: Arc<Group>,
    /// The writer's GUID as its log entries carry it.
    group_writer: [u8; 16],
    timeout: Duration,
    /// The matched EVENTUAL readers (remote and local), served over RTPS after each commit.
    eventual: Mutex<BTreeSet<Guid>>,
    /// `eventual`'s length: one load per write.
    eventual_count: AtomicUsize,
    commits: Arc<CommitQueue>,
}

/// A writer's samples on their way to the log (see the module docs).
struct CommitQueue {
    state: Mutex<QueueState>,
    /// Signalled when the writer becomes idle, a sample is queued or leaves the queue, or an
    /// outcome is known.
    changed: Condvar,
}

struct QueueState {
    /// The next sequence number: a failed or indeterminate write uses one up, so a late commit
    /// of it can never be delivered after a newer sample (apply drops it).
    next_sn: i64,
    /// A proposal of this writer is in flight (or its commit is being handed to the history).
    busy: bool,
    queue: VecDeque<Queued>,
    queued_bytes: usize,
    /// The committer thread was started.
    committer: bool,
    /// Outcomes of queued synchronous writes, by sequence number, until their writer takes them.
    outcomes: HashMap<i64, std::result::Result<(), ProposeError>>,
    /// The first failed pipelined proposal not reported to the application yet.
    failed: Option<ProposeError>,
    /// The writer is gone: the committer fails what is queued and stops.
    stopped: bool,
}

struct Queued {
    entry: Entry,
    /// The writer's serialized sample (the entry shares it): what the history gets after the
    /// commit when EVENTUAL readers are matched.
    payload: Arc<Vec<u8>>,
    key_only: bool,
    /// A synchronous write waits for this sample's outcome in [`QueueState::outcomes`].
    waited_for: bool,
}

/// The writer's turn to propose, held from the proposal to the hand-over to the history: its
/// drop makes the writer idle and wakes the committer.
pub(crate) struct Busy<'a>(&'a CommitQueue);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.state.lock().busy = false;
        self.0.changed.notify_all();
    }
}

impl AtomicWriter {
    /// A reader matched: true when it is EVENTUAL (served over RTPS); an ATOMIC one (with a
    /// consensus address) gets the log from its own member and nothing over RTPS.
    pub(crate) fn reader_matched(&self, reader: Guid, consensus: bool) -> bool {
        if consensus {
            return false;
        }
        let mut e = self.eventual.lock();
        e.insert(reader);
        self.eventual_count.store(e.len(), Ordering::Relaxed);
        true
    }

    /// A reader unmatched.
    pub(crate) fn reader_unmatched(&self, reader: Guid) {
        let mut e = self.eventual.lock();
        e.remove(&reader);
        self.eventual_count.store(e.len(), Ordering::Relaxed);
    }

    /// Whether a committed sample must also go through the writer's RTPS history.
    pub(crate) fn has_eventual_readers(&self) -> bool {
        self.eventual_count.load(Ordering::Relaxed) > 0
    }

    /// Proposes one sample (or dispose/unregister). Synchronous (the writer does not batch):
    /// returns after the commit; `Some(busy)` when the caller must now hand the sample to the
    /// history for EVENTUAL readers, holding `busy` until done. Pipelined (it batches): returns
    /// once queued (waiting up to `max_blocking_time` for room), or the failure of an earlier
    /// pipelined write.
    pub(crate) fn write(
        &self,
        ep: &WriterEndpoint,
        s: AtomicSample<'_>,
    ) -> Result<Option<Busy<'_>>> {
        let pipelined = ep.batching.load(Ordering::Relaxed);
        let q = &*self.commits;
        let mut st = q.state.lock();
        if pipelined {
            if let Some(e) = st.failed.take() {
                return Err(propose_error(e));
            }
            let deadline = far_deadline(Instant::now(), ep.max_blocking);
            while st.queued_bytes >= QUEUE_BYTES || st.queue.len() >= QUEUE_SAMPLES {
                if st.stopped {
                    return Err(Error::AlreadyDeleted);
                }
                if q.changed.wait_until(&mut st, deadline).timed_out() {
                    return Err(Error::Timeout);
                }
            }
        }
        let entry = self.entry(&mut st, &s);
        if !pipelined && !st.busy && st.queue.is_empty() {
            // Idle: propose here.
            st.busy = true;
            drop(st);
            let busy = Busy(q);
            let eventual = self.has_eventual_readers();
            self.group
                .propose_batch(vec![entry], self.timeout)
                .map_err(propose_error)?;
            return Ok(eventual.then_some(busy));
        }
        let sn = entry.sn;
        st.queued_bytes += entry.payload.len();
        st.queue.push_back(Queued {
            entry,
            payload: s.payload.clone(),
            key_only: s.key_only,
            waited_for: !pipelined,
        });
        if !st.committer {
            st.committer = true;
            if let Err(e) = self.start_committer(ep) {
                st.committer = false;
                st.queue.pop_back();
                return Err(Error::OutOfResources(format!("committer thread: {e}")));
            }
        }
        q.changed.notify_all();
        if pipelined {
            return Ok(None);
        }
        // The committer decides every queued sample within its proposal timeouts, or fails
        // them when the writer goes.
        loop {
            if let Some(outcome) = st.outcomes.remove(&sn) {
                return outcome.map(|()| None).map_err(propose_error);
            }
            if st.stopped {
                return Err(Error::AlreadyDeleted);
            }
            q.changed.wait_for(&mut st, COMMITTER_IDLE_CHECK);
        }
    }

    /// Waits until every sample queued before is decided (committed or failed), up to
    /// `timeout`; `Err` for the first pipelined failure not reported yet.
    pub(crate) fn drain(&self, timeout: Duration) -> Result<()> {
        if !self.drain_keeping_failure(timeout) {
            return Err(Error::Timeout);
        }
        let failed = self.commits.state.lock().failed.take();
        failed.map_or(Ok(()), |e| Err(propose_error(e)))
    }

    /// Waits until every sample queued before is decided, up to `timeout`; false if that did
    /// not happen in time. A failure stays to be reported.
    pub(crate) fn drain_keeping_failure(&self, timeout: Duration) -> bool {
        let q = &*self.commits;
        let deadline = far_deadline(Instant::now(), timeout);
        let mut st = q.state.lock();
        while (st.busy || !st.queue.is_empty()) && !st.stopped {
            if q.changed.wait_until(&mut st, deadline).timed_out() {
                return false;
            }
        }
        true
    }

    /// The longest a proposal waits for its commit.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    fn entry(&self, st: &mut QueueState, s: &AtomicSample<'_>) -> Entry {
        let sn = st.next_sn;
        st.next_sn += 1;
        Entry {
            writer: self.group_writer,
            sn,
            key_hash: s.key_hash.unwrap_or([0; 16]),
            timestamp_ns: s.source_ns,
            // Shared with the writer's serialized sample: no copy.
            payload: Bytes::from_owner(Shared(s.payload.clone())),
            kind: EntryKind::from_status_info(s.status),
        }
    }

    fn start_committer(&self, ep: &WriterEndpoint) -> std::io::Result<()> {
        let (q, group, writer, timeout) = (
            self.commits.clone(),
            self.group.clone(),
            ep.me.clone(),
            self.timeout,
        );
        std::thread::Builder::new()
            .name("atomic-commit".into())
            .spawn(move || committer(&q, &group, &writer, timeout))
            .map(drop)
    }
}

impl Drop for AtomicWriter {
    fn drop(&mut self) {
        self.commits.state.lock().stopped = true;
        self.commits.changed.notify_all();
    }
}

/// The committer thread of one writer: proposes what is queued, one group commit at a time.
fn committer(q: &CommitQueue, group: &Group, writer: &Weak<WriterEndpoint>, timeout: Duration) {
    loop {
        let mut st = q.state.lock();
        while !st.stopped && (st.busy || st.queue.is_empty()) {
            if q.changed
                .wait_for(&mut st, COMMITTER_IDLE_CHECK)
                .timed_out()
                && writer.strong_count() == 0
            {
                st.stopped = true;
            }
        }
        if st.stopped {
            for s in std::mem::take(&mut st.queue) {
                if s.waited_for {
                    st.outcomes.insert(s.entry.sn, Err(ProposeError::Closed));
                }
            }
            st.queued_bytes = 0;
            drop(st);
            q.changed.notify_all();
            return;
        }
        let mut batch = Vec::new();
        let mut bytes = 0;
        while let Some(next) = st.queue.front() {
            let len = next.entry.payload.len();
            if batch.len() == MAX_BATCH_ENTRIES || (!batch.is_empty() && bytes + len > BATCH_BYTES)
            {
                break;
            }
            bytes += len;
            batch.extend(st.queue.pop_front());
        }
        st.queued_bytes -= bytes;
        st.busy = true;
        drop(st);
        // Room in the queue for writers waiting for it.
        q.changed.notify_all();
        let outcome = commit(group, writer, batch, timeout);
        let mut st = q.state.lock();
        st.busy = false;
        for (sn, waited_for) in outcome.samples {
            if waited_for {
                st.outcomes.insert(sn, outcome.result.clone());
            }
        }
        if let Err(e) = outcome.result {
            if outcome.pipelined && st.failed.is_none() {
                st.failed = Some(e);
            }
        }
        drop(st);
        q.changed.notify_all();
    }
}

/// What one group commit decided.
struct Committed {
    result: std::result::Result<(), ProposeError>,
    /// Each sample's number and whether a synchronous write waits for it.
    samples: Vec<(i64, bool)>,
    /// Some sample was written pipelined (its failure is reported later).
    pipelined: bool,
}

/// Proposes `batch` as one log entry, then hands it to the history for EVENTUAL readers.
fn commit(
    group: &Group,
    writer: &Weak<WriterEndpoint>,
    batch: Vec<Queued>,
    timeout: Duration,
) -> Committed {
    let samples: Vec<(i64, bool)> = batch.iter().map(|s| (s.entry.sn, s.waited_for)).collect();
    let pipelined = samples.iter().any(|&(_, waited_for)| !waited_for);
    let ep = writer.upgrade();
    let eventual = ep
        .as_ref()
        .and_then(|ep| ep.atomic.get())
        .is_some_and(AtomicWriter::has_eventual_readers);
    // What the history needs after the commit (the entries move into the proposal).
    let for_history: Vec<_> = if eventual {
        batch
            .iter()
            .map(|s| {
                let e = &s.entry;
                let key_hash = (e.key_hash != [0; 16]).then_some(e.key_hash);
                let meta = (key_hash, e.kind.status_info(), s.key_only, e.timestamp_ns);
                (s.payload.clone(), meta)
            })
            .collect()
    } else {
        Vec::new()
    };
    let entries = batch.into_iter().map(|s| s.entry).collect();
    let result = group.propose_batch(entries, timeout).map(drop);
    if let (Ok(()), Some(ep)) = (&result, ep) {
        for (payload, meta) in for_history {
            if let Err(e) = ep.to_history_with(payload, meta, None, None) {
                tracing::warn!(writer = %ep.guid, "a committed ATOMIC sample did not reach the EVENTUAL readers' history: {e}");
            }
        }
    }
    Committed {
        result,
        samples,
        pipelined,
    }
}

/// For an ATOMIC writer: joins its group, puts the consensus address into what SEDP announces,
/// and returns the writer's consensus side. `None` for an EVENTUAL writer.
pub(crate) fn setup(
    p: &ParticipantShared,
    guid: Guid,
    topic: &str,
    side: &mut WriterSideQos,
) -> Result<Option<AtomicWriter>> {
    if side.consistency != Consistency::Atomic {
        return Ok(None);
    }
    if side.partition.0.iter().any(|n| is_wildcard(n)) {
        return Err(Error::Unsupported(
            "ATOMIC consistency with wildcard partitions".into(),
        ));
    }
    let name = group_name(p.domain_id, &side.partition.0, topic);
    let (group, endpoint) = p.atomic.join(&p.ctx, guid, name)?;
    side.consensus_endpoint = Some(endpoint);
    Ok(Some(AtomicWriter {
        group,
        group_writer: guid.to_bytes(),
        timeout: side.reliability.max_blocking_time.max(ATOMIC_WRITE_TIMEOUT),
        eventual: Mutex::new(BTreeSet::new()),
        eventual_count: AtomicUsize::new(0),
        commits: Arc::new(CommitQueue {
            state: Mutex::new(QueueState {
                next_sn: 1,
                busy: false,
                queue: VecDeque::new(),
                queued_bytes: 0,
                committer: false,
                outcomes: HashMap::new(),
                failed: None,
                stopped: false,
            }),
            changed: Condvar::new(),
        }),
    }))
}
