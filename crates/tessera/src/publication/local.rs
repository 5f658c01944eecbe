//! Delivery to readers of the writer's own participant: no network and no reliability protocol,
//! but the same promise as over the network. A reliable reader that refuses a sample for its
//! resource limits does not lose it: the writer keeps it (as a remote reader's refusal keeps it
//! unacknowledged) in a bounded queue per reader and hands it over again, in order, once the
//! reader made room ([`LocalHolder::redeliver`]). While a reader's queue is not empty, newer
//! samples for it join the queue. A KEEP_ALL writer whose queue for some reader is full waits
//! for room like a full history; a KEEP_LAST one keeps the newest `depth` samples per instance
//! and counts the others lost for that reader. Best-effort pairs drop what is refused.
//!
//! Locks: the queues are changed only under the writer's core lock (which orders the
//! writer's samples); a reader's history lock is taken under it, never the other way round.

use super::WriterEndpoint;
use crate::endpoint::{LocalHolder, LocalOutcome, LocalReader};
use crate::runtime::RuntimeContext;
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_rtps::reader::Delivered;
use tessera_rtps::types::{Guid, SequenceNumber, Timestamp};
use tessera_rtps::wire::PayloadKind;
use tessera_rtps::writer::GroupTag;

/// A matched reader of this participant.
#[derive(Clone)]
pub(crate) struct LocalPeer {
    pub guid: Guid,
    pub reader: Arc<dyn LocalReader>,
    /// Both sides are reliable: what the reader refuses is kept for it, not dropped.
    pub reliable: bool,
}

/// The writer's matched local readers (a snapshot, cloned under the core lock without
/// allocating).
pub(crate) type LocalPeers = Arc<[LocalPeer]>;

/// A sample as handed to local readers.
pub(super) struct LocalSample<'a> {
    pub seq: SequenceNumber,
    pub payload: &'a [u8],
    /// The writer's buffer holding `payload`, when it has one: local readers share it.
    pub shared: Option<&'a Arc<Vec<u8>>>,
    pub key_hash: Option<[u8; 16]>,
    pub status: u32,
    pub key_only: bool,
    pub timestamp: Option<Timestamp>,
    /// PID_COHERENT_SET (see [`tessera_rtps::writer::COHERENT_SET_END`] for the marker).
    pub coherent_set: Option<SequenceNumber>,
    /// GROUP access scope values (see [`tessera_rtps::writer::GroupTag`]).
    pub group: Option<GroupTag>,
}

/// A sample a reliable local reader refused, kept until it makes room.
struct HeldSample {
    seq: SequenceNumber,
    payload: Arc<Vec<u8>>,
    key_hash: Option<[u8; 16]>,
    status: u32,
    key_only: bool,
    timestamp: Option<Timestamp>,
    coherent_set: Option<SequenceNumber>,
    group: Option<GroupTag>,
}

impl HeldSample {
    fn of(s: &LocalSample<'_>) -> Self {
        HeldSample {
            seq: s.seq,
            // A retained sample (late joiner) has no shared buffer: copy it, once.
            payload: s
                .shared
                .cloned()
                .unwrap_or_else(|| Arc::new(tessera_rtps::copy::to_vec(s.payload))),
            key_hash: s.key_hash,
            status: s.status,
            key_only: s.key_only,
            timestamp: s.timestamp,
            coherent_set: s.coherent_set,
            group: s.group,
        }
    }

    fn as_local(&self) -> LocalSample<'_> {
        LocalSample {
            seq: self.seq,
            payload: &self.payload,
            shared: Some(&self.payload),
            key_hash: self.key_hash,
            status: self.status,
            key_only: self.key_only,
            timestamp: self.timestamp,
            coherent_set: self.coherent_set,
            group: self.group,
        }
    }
}

/// The queues of refused samples, one per reliable local reader that refused one.
#[derive(Default)]
pub(super) struct HeldQueues {
    queues: Vec<(Guid, VecDeque<HeldSample>)>,
}

/// What a writer's queue for a reader keeps.
#[derive(Debug, Clone, Copy)]
pub(super) enum HoldPolicy {
    /// Everything (KEEP_ALL): `write` waits before a queue grows past the bound.
    All,
    /// The newest `depth` samples per instance and `cap` samples in all (KEEP_LAST).
    Last { depth: usize, cap: usize },
}

impl HeldQueues {
    fn queue(&mut self, reader: Guid) -> Option<&mut VecDeque<HeldSample>> {
        self.queues
            .iter_mut()
            .find(|(g, _)| *g == reader)
            .map(|(_, q)| q)
    }

    /// Appends a sample for `reader`; returns how many samples of its queue it replaced.
    fn push(&mut self, reader: Guid, s: HeldSample, policy: HoldPolicy) -> u32 {
        let q = match self.queues.iter().position(|(g, _)| *g == reader) {
            Some(i) => &mut self.queues[i].1,
            None => {
                self.queues.push((reader, VecDeque::new()));
                &mut self.queues.last_mut().expect("just pushed").1
            }
        };
        let key = s.key_hash;
        q.push_back(s);
        let HoldPolicy::Last { depth, cap } = policy else {
            return 0;
        };
        let mut lost = 0;
        if q.iter().filter(|h| h.key_hash == key).count() > depth {
            if let Some(i) = q.iter().position(|h| h.key_hash == key) {
                q.remove(i);
                lost += 1;
            }
        }
        while q.len() > cap.max(1) {
            q.pop_front();
            lost += 1;
        }
        lost
    }

    /// Forgets `reader`'s queue (unmatched or deleted).
    fn remove(&mut self, reader: Guid) {
        self.queues.retain(|(g, _)| *g != reader);
    }

    /// The longest queue.
    pub(super) fn longest(&self) -> usize {
        self.queues.iter().map(|(_, q)| q.len()).max().unwrap_or(0)
    }

    fn prune(&mut self) {
        self.queues.retain(|(_, q)| !q.is_empty());
    }

    fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }
}

/// Raises the statuses of local readers after a delivery (no writer lock held: their listeners
/// may write).
pub(super) fn notify_local(ctx: &RuntimeContext, peers: &[LocalPeer], outcomes: &[LocalOutcome]) {
    for (p, o) in peers.iter().zip(outcomes) {
        if o.is_news() {
            p.reader.notify_local(ctx, *o);
        }
    }
}

/// The sample as a reader's delivery path takes it.
fn delivered<'a>(writer: Guid, s: &LocalSample<'a>) -> Delivered<'a> {
    Delivered {
        writer,
        seq: s.seq,
        kind: if s.key_only {
            PayloadKind::Key
        } else if s.payload.is_empty() && s.status == 0 {
            // The end-of-coherent-set marker (retained ones included).
            PayloadKind::None
        } else {
            PayloadKind::Data
        },
        payload: Cow::Borrowed(s.payload),
        status_info: s.status,
        key_hash: s.key_hash,
        source_timestamp: s.timestamp,
        original: None,
        coherent_set: s.coherent_set,
        group: s.group,
    }
}

impl WriterEndpoint {
    /// Hands one sample (just written, or retained for a late joiner) to local readers, or
    /// queues it for those that refused earlier ones. Runs under the core lock, so that they
    /// get the writer's samples in order; the caller raises their statuses with
    /// [`notify_local`] after releasing it.
    pub(super) fn deliver_local(
        &self,
        peers: &[LocalPeer],
        outcomes: &mut [LocalOutcome],
        sample: LocalSample<'_>,
    ) {
        let d = delivered(self.guid, &sample);
        // Locked only when some reader refused (now or before).
        let mut held = None;
        for (p, o) in peers.iter().zip(outcomes.iter_mut()) {
            if !p.reliable {
                o.merge(p.reader.deliver_local(&d, sample.shared, None));
                continue;
            }
            if self.holding.load(Ordering::Relaxed) {
                let h = held.get_or_insert_with(|| self.held.lock());
                if h.queue(p.guid).is_some() {
                    o.lost += h.push(p.guid, HeldSample::of(&sample), self.hold_policy(&sample));
                    continue;
                }
            }
            let out = p
                .reader
                .deliver_local(&d, sample.shared, Some(&self.holder));
            o.merge(out);
            if out.rejected > 0 {
                let h = held.get_or_insert_with(|| self.held.lock());
                h.push(p.guid, HeldSample::of(&sample), HoldPolicy::All);
                self.holding.store(true, Ordering::Relaxed);
            }
        }
    }

    /// What the queue for a local reader keeps, for samples like `s`.
    fn hold_policy(&self, s: &LocalSample<'_>) -> HoldPolicy {
        match self.qos.history {
            crate::qos::History::KeepAll => HoldPolicy::All,
            crate::qos::History::KeepLast(depth) => HoldPolicy::Last {
                depth: depth.max(1) as usize,
                cap: self.hold_bound(s.payload.len()),
            },
        }
    }

    /// How many samples a queue for a local reader holds at most: the writer's RESOURCE_LIMITS
    /// `max_samples`, else the flow-control window for samples of `size` bytes.
    pub(super) fn hold_bound(&self, size: usize) -> usize {
        match self.qos.resource_limits.max_samples {
            Some(n) => (n as usize).max(1),
            None => super::flow_window(size),
        }
    }

    /// Whether a KEEP_ALL writer must wait before writing a sample of `size` bytes: its queue
    /// for some local reader is full. One atomic load while nothing is queued.
    pub(super) fn local_hold_full(&self, size: usize) -> bool {
        self.holding.load(Ordering::Relaxed) && self.held.lock().longest() >= self.hold_bound(size)
    }

    /// A reader of this participant matched: it joins the direct-delivery list (not the core:
    /// no heartbeats, no acknowledgments), and a durable one gets the retained history of a
    /// TRANSIENT_LOCAL writer at once.
    pub(super) fn matched_local(
        &self,
        ctx: &RuntimeContext,
        reader: Arc<dyn LocalReader>,
        reliable: bool,
        durable: bool,
    ) {
        let guid = reader.guid();
        let peer = LocalPeer {
            guid,
            reader,
            reliable: reliable && self.reliable,
        };
        let peers: LocalPeers = {
            let mut l = self.local_readers.write();
            if l.iter().any(|p| p.guid == guid) {
                return;
            }
            *l = l
                .iter()
                .cloned()
                .chain(std::iter::once(peer.clone()))
                .collect();
            self.local_count.store(l.len(), Ordering::Release);
            Arc::from([peer])
        };
        let mut outcomes = [LocalOutcome::default()];
        {
            let core = self.lock_core();
            if core.config().transient_local && durable {
                core.for_each_retained(|seq, payload, key_hash, status, key_only, timestamp| {
                    self.deliver_local(
                        &peers,
                        &mut outcomes,
                        LocalSample {
                            seq,
                            payload,
                            shared: None,
                            key_hash,
                            status,
                            key_only,
                            timestamp,
                            coherent_set: None,
                            group: None,
                        },
                    );
                });
            }
        }
        notify_local(ctx, &peers, &outcomes);
    }

    /// A local reader went away: it leaves the list and its queue is dropped. Returns the old
    /// list, to be dropped by the caller with no lock held (the last reference to a deleted
    /// reader may go with it).
    pub(super) fn unmatched_local(&self, reader: Guid) -> LocalPeers {
        let old = {
            let mut l = self.local_readers.write();
            let rest: LocalPeers = l.iter().filter(|p| p.guid != reader).cloned().collect();
            self.local_count.store(rest.len(), Ordering::Release);
            std::mem::replace(&mut *l, rest)
        };
        let _core = self.lock_core();
        let mut held = self.held.lock();
        held.remove(reader);
        self.holding.store(!held.is_empty(), Ordering::Relaxed);
        old
    }
}

impl LocalHolder for WriterEndpoint {
    fn redeliver(&self, ctx: &RuntimeContext, reader: Guid) {
        let mut outcome = LocalOutcome::default();
        let peer = {
            let _core = self.lock_core();
            let Some(peer) = self
                .local_readers
                .read()
                .iter()
                .find(|p| p.guid == reader)
                .cloned()
            else {
                return;
            };
            let mut held = self.held.lock();
            if let Some(q) = held.queue(reader) {
                while let Some(s) = q.front() {
                    let ls = s.as_local();
                    let out = peer.reader.deliver_local(
                        &delivered(self.guid, &ls),
                        ls.shared,
                        Some(&self.holder),
                    );
                    if out.rejected > 0 {
                        // Refused again (counted once, at the first refusal): the reader
                        // recorded us and calls back when it has room.
                        break;
                    }
                    outcome.available |= out.available;
                    q.pop_front();
                }
            }
            held.prune();
            self.holding.store(!held.is_empty(), Ordering::Relaxed);
            peer
        };
        // Room in the queue: a writer waiting for it may go on.
        self.wake_waiters();
        if outcome.is_news() {
            peer.reader.notify_local(ctx, outcome);
        }
    }
}
