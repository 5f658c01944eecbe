//! `ConsensusGroup`: what Tessera needs from a consensus library, and nothing of its API.

use std::net::SocketAddr;
use std::time::Duration;

use crate::mailbox::Receiver;

use crate::entry::{Delivery, Entry, MemberId};

/// Where a member's consensus endpoint listens. Announced by the caller (SEDP carries it).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MemberAddr {
    /// TCP, the consensus thread's listener.
    Tcp(SocketAddr),
    /// A member of an in-process simulated network ([`crate::sim`]), by its id there.
    Sim(MemberId),
}

impl MemberAddr {
    pub(crate) fn encode(&self) -> String {
        match self {
            MemberAddr::Tcp(a) => format!("tcp:{a}"),
            MemberAddr::Sim(id) => format!("sim:{id}"),
        }
    }

    pub(crate) fn decode(s: &str) -> Option<MemberAddr> {
        if let Some(a) = s.strip_prefix("tcp:") {
            return a.parse().ok().map(MemberAddr::Tcp);
        }
        MemberId::parse(s.strip_prefix("sim:")?).map(MemberAddr::Sim)
    }
}

/// Why a proposal did not commit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    /// No answer in time: the entry may or may not commit. Retrying with the same
    /// `(writer, sn)` is safe: apply deduplicates.
    #[error("no commit within the timeout; the entry may still commit (indeterminate)")]
    Indeterminate,
    /// The group has no reachable leader (no majority): nothing was appended.
    #[error("no leader reachable: the group has no majority")]
    NoLeader,
    /// `(writer, sn)` is not newer than what this writer already committed; the entry was not
    /// delivered again.
    #[error("duplicate (writer, sn): already committed at index {0:?}")]
    Duplicate(Option<u64>),
    /// The group or its consensus thread was shut down.
    #[error("the consensus group is closed")]
    Closed,
}

/// Why a membership change failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MembershipError {
    /// No leader answered in time.
    #[error("membership change timed out")]
    Timeout,
    /// The consensus library refused the change.
    #[error("membership change refused: {0}")]
    Refused(String),
    /// The group or its consensus thread was shut down.
    #[error("the consensus group is closed")]
    Closed,
}

/// One membership change made by [`ConsensusGroup::reconcile`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// A live member that was not a voter was added (learner, caught up, then voter).
    Added(MemberId),
    /// A member that is gone (or silent) was taken out of the voters or learners.
    Removed(MemberId),
}

/// Voters a group keeps, dead ones included, unless a replacement came: removing a dead voter
/// from three leaves two, which tolerate no more crash than three with one dead, so it gains
/// nothing and costs the majority-of-three once the member is back.
pub const MIN_VOTERS: usize = 3;

/// A replicated, totally ordered log of [`Entry`]s shared by the members of one ATOMIC topic.
///
/// Blocking calls from any thread (they talk to the consensus thread over channels); no async
/// runtime leaks into the caller.
pub trait ConsensusGroup: Send + Sync {
    /// This member.
    fn id(&self) -> MemberId;

    /// Appends `entry` and returns its position ([`crate::entry::position`]) once a majority of
    /// voters holds it. On `Err(Indeterminate)` it may still commit; a retry with the same
    /// `(writer, sn)` is deduplicated.
    fn propose(&self, entry: Entry, timeout: Duration) -> Result<u64, ProposeError> {
        self.propose_batch(vec![entry], timeout)
    }

    /// Appends `entries` as one log entry (all commit or none; at most
    /// [`crate::entry::MAX_BATCH_ENTRIES`]) and returns the position of the last one delivered
    /// once a majority holds it. Each entry is deduplicated on its own `(writer, sn)`: a retried
    /// batch is delivered once, and `Err(Duplicate)` if none of it was new.
    fn propose_batch(&self, entries: Vec<Entry>, timeout: Duration) -> Result<u64, ProposeError>;

    /// Committed entries in log order, each once (a member that joins late gets the log from the
    /// start, or a [`Delivery::Skipped`] where it was purged).
    fn deliveries(&self) -> &Receiver<Delivery>;

    /// The members this one knows of, itself included: those the caller introduced and those
    /// learned from the others by gossip (so members whose endpoints never matched each other
    /// still learn of each other through one that matched both).
    fn known(&self) -> Vec<(MemberId, MemberAddr)>;

    /// Whether a gossip round heard from a member already in a formed group: then this member
    /// waits to be added and must not bootstrap a group of its own.
    fn group_formed_elsewhere(&self) -> bool;

    /// Adds members the caller discovered (Tessera: from SEDP).
    fn introduce(&self, members: &[(MemberId, MemberAddr)]);

    /// One gossip round: tells every known member what this one knows, and learns what they know.
    fn gossip(&self, timeout: Duration);

    /// Bootstraps the group with these voters (this member among them), for a member opened
    /// without initial voters. Every member that bootstraps must pass the same list; members
    /// found later join through [`ConsensusGroup::add_voter`].
    fn bootstrap(
        &self,
        members: Vec<(MemberId, MemberAddr)>,
        timeout: Duration,
    ) -> Result<(), MembershipError>;

    /// Adds `id` as a learner, waits until it caught up, then makes it a voter.
    fn add_voter(
        &self,
        id: MemberId,
        addr: MemberAddr,
        timeout: Duration,
    ) -> Result<(), MembershipError>;

    /// Removes `id` from the voters (and the learners).
    fn remove_member(&self, id: MemberId, timeout: Duration) -> Result<(), MembershipError>;

    /// One step towards "the voters are the live members", at the leader only (elsewhere it
    /// does nothing and returns `Ok(None)`), one change at a time:
    ///
    /// 1. a live member (it answered a gossip round lately, and is not in `gone`) that is not a
    ///    voter is added (learner, then voter once caught up);
    /// 2. else a learner that is gone or silent is removed;
    /// 3. else a voter in `gone` (the caller saw it leave or lose liveliness) is removed while
    ///    at least [`MIN_VOTERS`] voters stay; so is one that has not acknowledged the leader for
    ///    [`crate::Timing::dead_after`] while more voters stay than ever answered at once under
    ///    this leader: a killed process that came back under a new id (its successor makes
    ///    the surplus), not one that is only cut off or paused (it stays and catches up).
    ///
    /// Adding comes first, so a replaced member's old id goes only once its successor votes.
    fn reconcile(
        &self,
        gone: &std::collections::BTreeSet<MemberId>,
        timeout: Duration,
    ) -> Result<Option<Change>, MembershipError>;

    /// Whether `id` answered this member's gossip after `t`: it is running and reachable,
    /// whatever discovery last said of it.
    fn heard_after(&self, id: MemberId, t: std::time::Instant) -> bool;

    /// The current leader as this member knows it.
    fn leader(&self) -> Option<MemberId>;

    /// The voters as this member knows them.
    fn voters(&self) -> Vec<MemberId>;
}
