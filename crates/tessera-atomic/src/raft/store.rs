//! In-memory Raft log and the state machine that turns committed entries into deliveries.
//!
//! The state machine's state is the deduplication table: per writer GUID, the highest sequence
//! number applied and its log index. It is what a snapshot carries, so a member that installs a
//! snapshot still refuses a retried write that committed before it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Debug;
use std::io;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::mailbox::Sender;
use futures_util::{Stream, TryStreamExt};
use openraft::alias::{LogIdOf, SnapshotMetaOf, SnapshotOf, StoredMembershipOf, VoteOf};
use openraft::entry::RaftEntry;
use openraft::storage::{EntryResponder, IOFlushed, RaftLogStorage, RaftStateMachine};
use openraft::{EntryPayload, LogState, OptionalSend, RaftLogReader, RaftSnapshotBuilder};
use serde::{Deserialize, Serialize};

use super::{Applied, Cfg};
use crate::entry::{last_position, position, Batch, Delivery};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere while holding the lock leaves plain data behind: keep going.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type LogEntry = <Cfg as openraft::RaftTypeConfig>::Entry;

#[derive(Default)]
struct LogInner {
    last_purged: Option<LogIdOf<Cfg>>,
    log: BTreeMap<u64, LogEntry>,
    /// Payload bytes of the entries in `log`.
    bytes: usize,
    committed: Option<LogIdOf<Cfg>>,
    vote: Option<VoteOf<Cfg>>,
}

/// The Raft log and vote, in memory: lost with the process, so a restarted member rejoins under a
/// new id.
#[derive(Clone)]
pub(crate) struct MemLog {
    inner: Arc<Mutex<LogInner>>,
    /// Payload bytes the log keeps before it asks for a snapshot and a purge
    /// ([`super::Timing::log_bytes`]).
    budget: usize,
    /// Woken when the log holds more than `budget` (see [`MemLog::purge_point`]).
    pub(crate) over_budget: Arc<tokio::sync::Notify>,
}

/// A leader's log may grow to this many budgets for followers that lag (see
/// [`MemLog::purge_point`]).
const HARD_LOG_FACTOR: usize = 4;

/// The bytes an entry counts for: its payloads and a fixed share for the rest.
fn entry_bytes(e: &LogEntry) -> usize {
    const OVERHEAD: usize = 64;
    match &e.payload {
        EntryPayload::Normal(b) => b.0.iter().map(|e| e.payload.len() + OVERHEAD).sum(),
        _ => OVERHEAD,
    }
}

impl MemLog {
    /// An empty log that keeps about `budget` payload bytes.
    pub(crate) fn new(budget: usize) -> Self {
        MemLog {
            inner: Default::default(),
            budget,
            over_budget: Default::default(),
        }
    }

    /// Payload bytes held now.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn bytes(&self) -> usize {
        lock(&self.inner).bytes
    }

    /// Over budget: the last index to purge so that the entries after it hold at most half of
    /// the budget. `None` within budget. `acked` (at a leader: the lowest index every follower
    /// acknowledged) is spared while the log holds at most [`HARD_LOG_FACTOR`] budgets: under a
    /// saturating 64 KiB writer 32 MiB is about 40 ms of data, and a follower a little behind
    /// would be sent a snapshot and skip samples; past that, one that stopped answering no
    /// longer holds memory.
    pub(crate) fn purge_point(&self, acked: Option<u64>) -> Option<u64> {
        let inner = lock(&self.inner);
        if inner.bytes <= self.budget {
            return None;
        }
        let mut kept = 0;
        let upto = inner.log.iter().rev().find_map(|(index, e)| {
            kept += entry_bytes(e);
            (kept > self.budget / 2).then_some(*index)
        })?;
        let upto = match acked {
            Some(acked) if inner.bytes <= self.budget * HARD_LOG_FACTOR => upto.min(acked),
            _ => upto,
        };
        (upto > 0).then_some(upto)
    }
}

impl RaftLogReader<Cfg> for MemLog {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<LogEntry>, io::Error> {
        Ok(lock(&self.inner)
            .log
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }

    async fn read_vote(&mut self) -> Result<Option<VoteOf<Cfg>>, io::Error> {
        Ok(lock(&self.inner).vote)
    }
}

impl RaftLogStorage<Cfg> for MemLog {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<Cfg>, io::Error> {
        let inner = lock(&self.inner);
        let last = inner
            .log
            .values()
            .next_back()
            .map(|e| e.log_id())
            .or(inner.last_purged);
        Ok(LogState {
            last_purged_log_id: inner.last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &VoteOf<Cfg>) -> Result<(), io::Error> {
        lock(&self.inner).vote = Some(*vote);
        Ok(())
    }

    async fn save_committed(&mut self, committed: Option<LogIdOf<Cfg>>) -> Result<(), io::Error> {
        lock(&self.inner).committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogIdOf<Cfg>>, io::Error> {
        Ok(lock(&self.inner).committed)
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<Cfg>) -> Result<(), io::Error>
    where
        I: IntoIterator<Item = LogEntry> + OptionalSend,
    {
        {
            let mut inner = lock(&self.inner);
            for e in entries {
                inner.bytes += entry_bytes(&e);
                if let Some(old) = inner.log.insert(e.index(), e) {
                    inner.bytes -= entry_bytes(&old);
                }
            }
            if inner.bytes > self.budget {
                self.over_budget.notify_one();
            }
        }
        callback.io_completed(Ok(()));
        Ok(())
    }

    async fn truncate_after(&mut self, last: Option<LogIdOf<Cfg>>) -> Result<(), io::Error> {
        let from = last.map_or(0, |l| l.index() + 1);
        let mut inner = lock(&self.inner);
        let gone = inner.log.split_off(&from);
        inner.bytes -= gone.values().map(entry_bytes).sum::<usize>();
        Ok(())
    }

    async fn purge(&mut self, upto: LogIdOf<Cfg>) -> Result<(), io::Error> {
        let mut inner = lock(&self.inner);
        let keep = inner.log.split_off(&(upto.index() + 1));
        let gone = std::mem::replace(&mut inner.log, keep);
        inner.bytes -= gone.values().map(entry_bytes).sum::<usize>();
        inner.last_purged = Some(upto);
        Ok(())
    }
}

/// Per writer GUID: the highest sequence number applied and the position it was applied at.
#[derive(Clone, Default, Serialize, Deserialize)]
pub(crate) struct DedupTable(Vec<([u8; 16], i64, u64)>);

struct SmInner {
    last_applied: Option<LogIdOf<Cfg>>,
    membership: StoredMembershipOf<Cfg>,
    dedup: HashMap<[u8; 16], (i64, u64)>,
    snapshot: Option<(SnapshotMetaOf<Cfg>, Vec<u8>)>,
    deliveries: Sender<Delivery>,
}

/// The state machine: deduplicates on (writer, sn) and sends new entries to the member's
/// delivery channel, in log order.
#[derive(Clone)]
pub(crate) struct StateMachine(Arc<Mutex<SmInner>>);

impl StateMachine {
    pub(crate) fn new(deliveries: Sender<Delivery>) -> Self {
        StateMachine(Arc::new(Mutex::new(SmInner {
            last_applied: None,
            membership: Default::default(),
            dedup: HashMap::new(),
            snapshot: None,
            deliveries,
        })))
    }
}

fn encode_dedup(d: &HashMap<[u8; 16], (i64, u64)>) -> Result<Vec<u8>, io::Error> {
    let mut t: Vec<_> = d.iter().map(|(g, (sn, ix))| (*g, *sn, *ix)).collect();
    t.sort_unstable();
    serde_json::to_vec(&DedupTable(t)).map_err(io::Error::other)
}

impl RaftSnapshotBuilder<Cfg> for StateMachine {
    type SnapshotData = Vec<u8>;

    async fn build_snapshot(&mut self) -> Result<SnapshotOf<Cfg, Vec<u8>>, io::Error> {
        let mut inner = lock(&self.0);
        let data = encode_dedup(&inner.dedup)?;
        let meta = SnapshotMetaOf::<Cfg> {
            last_log_id: inner.last_applied,
            last_membership: inner.membership.clone(),
        };
        inner.snapshot = Some((meta.clone(), data.clone()));
        Ok(SnapshotOf::<Cfg, Vec<u8>> {
            meta,
            snapshot: data,
        })
    }
}

/// Applies one log entry's batch: each entry whose `(writer, sn)` is new is delivered at its
/// position. The proposer learns the last delivered position; a batch with nothing new (a retry
/// of one that committed) is a duplicate, told where its last entry went if it was its writer's
/// last.
fn apply_batch(inner: &mut SmInner, index: u64, batch: Batch) -> Applied {
    let mut last = None;
    let mut duplicate = None;
    for (place, e) in batch.0.into_iter().enumerate() {
        match inner.dedup.get(&e.writer) {
            Some(&(sn, at)) if e.sn <= sn => duplicate = Some((e.sn == sn).then_some(at)),
            _ => {
                let at = position(index, place);
                inner.dedup.insert(e.writer, (e.sn, at));
                // A member whose owner went away has nobody reading: ignore.
                inner.deliveries.send(Delivery::Entry {
                    index: at,
                    entry: e,
                });
                last = Some(at);
            }
        }
    }
    match (last, duplicate) {
        (Some(at), _) => Applied::Index(at),
        (None, Some(d)) => Applied::Duplicate(d),
        (None, None) => Applied::Nothing,
    }
}

impl RaftStateMachine<Cfg> for StateMachine {
    type SnapshotData = Vec<u8>;
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<(Option<LogIdOf<Cfg>>, StoredMembershipOf<Cfg>), io::Error> {
        let inner = lock(&self.0);
        Ok((inner.last_applied, inner.membership.clone()))
    }

    async fn apply<S>(&mut self, mut entries: S) -> Result<(), io::Error>
    where
        S: Stream<Item = Result<EntryResponder<Cfg>, io::Error>> + Unpin + OptionalSend,
    {
        while let Some((entry, responder)) = entries.try_next().await? {
            let mut inner = lock(&self.0);
            let index = entry.log_id.index();
            inner.last_applied = Some(entry.log_id);
            let applied = match entry.payload {
                EntryPayload::Blank => Applied::Nothing,
                EntryPayload::Membership(m) => {
                    inner.membership = StoredMembershipOf::<Cfg>::new(Some(entry.log_id), m);
                    Applied::Nothing
                }
                EntryPayload::Normal(batch) => apply_batch(&mut inner, index, batch),
            };
            drop(inner);
            if let Some(r) = responder {
                r.send(applied);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMetaOf<Cfg>,
        data: Vec<u8>,
    ) -> Result<(), io::Error> {
        let table: DedupTable = serde_json::from_slice(&data)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let mut inner = lock(&self.0);
        inner.dedup = table
            .0
            .into_iter()
            .map(|(g, sn, ix)| (g, (sn, ix)))
            .collect();
        inner.last_applied = meta.last_log_id;
        inner.membership = meta.last_membership.clone();
        if let Some(l) = meta.last_log_id {
            inner.deliveries.send(Delivery::Skipped {
                index: last_position(l.index()),
            });
        }
        inner.snapshot = Some((meta.clone(), data));
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<SnapshotOf<Cfg, Vec<u8>>>, io::Error> {
        Ok(lock(&self.0)
            .snapshot
            .clone()
            .map(|(meta, snapshot)| SnapshotOf::<Cfg, Vec<u8>> { meta, snapshot }))
    }
}

#[cfg(test)]
mod tests {
    use openraft::impls::leader_id_adv::LeaderId;
    use openraft::LogId;

    use super::*;
    use crate::entry::{Entry, EntryKind, MemberId};

    fn entry(index: u64, writer: u8, sn: i64) -> LogEntry {
        batch(index, &[(writer, sn)])
    }

    /// A log entry holding a batch of `(writer, sn)` samples.
    fn batch(index: u64, samples: &[(u8, i64)]) -> LogEntry {
        let leader = LeaderId {
            term: 1,
            node_id: MemberId([0; 12]),
        };
        let entries = samples
            .iter()
            .map(|&(writer, sn)| Entry {
                writer: [writer; 16],
                sn,
                key_hash: [0; 16],
                timestamp_ns: 0,
                payload: vec![writer, sn as u8].into(),
                kind: EntryKind::Write,
            })
            .collect();
        LogEntry::new_normal(LogId::new(leader, index), Batch(entries))
    }

    async fn apply(sm: &mut StateMachine, entries: Vec<LogEntry>) {
        let s = futures_util::stream::iter(entries.into_iter().map(|e| Ok((e, None))));
        sm.apply(s).await.unwrap();
    }

    fn delivered(rx: &crate::mailbox::Receiver<Delivery>) -> Vec<(u64, i64)> {
        rx.try_iter()
            .map(|d| match d {
                Delivery::Entry { index, entry } => (index, entry.sn),
                Delivery::Skipped { index } => (index, -1),
            })
            .collect()
    }

    /// A retried (writer, sn) is applied once, also at a member that only has a snapshot of the
    /// state before it.
    #[test]
    fn deduplication_survives_a_snapshot() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let (tx, rx) = crate::mailbox::channel();
            let mut a = StateMachine::new(tx);
            apply(
                &mut a,
                vec![
                    entry(1, 7, 1),
                    entry(2, 7, 2),
                    entry(3, 7, 2),
                    entry(4, 7, 1),
                ],
            )
            .await;
            assert_eq!(
                delivered(&rx),
                vec![(position(1, 0), 1), (position(2, 0), 2)]
            );
            let snap = a.build_snapshot().await.unwrap();

            let (tx, rx) = crate::mailbox::channel();
            let mut b = StateMachine::new(tx);
            b.install_snapshot(&snap.meta, snap.snapshot).await.unwrap();
            apply(&mut b, vec![entry(5, 7, 2), entry(6, 8, 1), entry(7, 7, 3)]).await;
            assert_eq!(
                delivered(&rx),
                vec![
                    (last_position(4), -1),
                    (position(6, 0), 1),
                    (position(7, 0), 3)
                ]
            );
        });
    }

    /// A batch is applied entry by entry: each new one at its place, the ones already applied
    /// skipped; a retried batch is a duplicate as a whole.
    #[test]
    fn batches_deliver_each_new_entry_at_its_place() {
        let (tx, rx) = crate::mailbox::channel();
        let sm = StateMachine::new(tx);
        let applied: Vec<Applied> = [
            (1, &[(7, 1), (7, 2), (8, 1)][..]),
            (2, &[(7, 2), (7, 3)]),
            (3, &[(7, 1), (7, 3)]),
        ]
        .into_iter()
        .map(|(index, samples)| {
            let EntryPayload::Normal(b) = batch(index, samples).payload else {
                unreachable!("a normal entry")
            };
            apply_batch(&mut lock(&sm.0), index, b)
        })
        .collect();
        assert_eq!(
            delivered(&rx),
            vec![
                (position(1, 0), 1),
                (position(1, 1), 2),
                (position(1, 2), 1),
                (position(2, 1), 3)
            ]
        );
        assert_eq!(
            applied,
            vec![
                Applied::Index(position(1, 2)),
                Applied::Index(position(2, 1)),
                Applied::Duplicate(Some(position(2, 1)))
            ]
        );
    }
}
