//! ATOMIC consistency for Tessera: a consensus group per ATOMIC topic, and the checker that
//! proves a run kept its promises.
//!
//! # The promises (Consistency = ATOMIC)
//!
//! The participants with an ATOMIC endpoint on one (domain, partition, topic) form a group whose
//! voters replicate one log of [`Entry`]s (writer GUID and sequence number, key hash, timestamp,
//! payload, kind), proposed one at a time or as a [`Batch`] that commits whole. With `2f + 1`
//! voters, while at most `f` are down or cut off:
//!
//! - **one total order**: every member delivers committed entries in log order; an entry's
//!   position (log index, then place in its [`Batch`]) is the same at every member
//!   ([`Delivery::Entry`]);
//! - **all or none**: nothing is delivered before it is committed (held by a majority); an entry
//!   that never reached a majority is delivered nowhere; a committed one reaches every member
//!   that stays in the group, including one that comes back (it replays the log, or installs a
//!   snapshot and is told what it skipped, [`Delivery::Skipped`]);
//! - **write returns after commit**: [`ConsensusGroup::propose`] returns the index, or
//!   [`ProposeError::NoLeader`] (nothing appended) or [`ProposeError::Indeterminate`] (it may
//!   still commit);
//! - **exactly once**: applying the log skips an entry whose `(writer, sn)` is not newer than the
//!   writer's last applied one, so a retry after an indeterminate timeout is never delivered
//!   twice (the table is part of snapshots).
//!
//! **A group of two cannot survive a crash.** A majority of 2 is 2: with one member down, writes
//! block (safe, not live) until it returns. Learners do not vote, and openraft has no log-less
//! witness: add a third voter (another participant, or later a durability daemon). The runtime
//! warns when a group forms with fewer than three voters.
//!
//! Membership is by id; an in-memory member that restarts loses its log and vote, so it comes back
//! under a new id, as a learner that catches up and is then made a voter; the leader then removes
//! the old id ([`ConsensusGroup::reconcile`]: a voter the caller reports gone, or one silent for
//! [`Timing::dead_after`] beyond the most voters that answered at once, goes; never below
//! [`MIN_VOTERS`]). Without that, each
//! kill and restart left a dead voter behind, and two of them cost a group of three its majority
//! for good (the change that would remove them needs the majority they took).
//!
//! # Shape
//!
//! - [`ConsensusGroup`] is Tessera's trait: blocking calls and a channel of deliveries, no async
//!   runtime in sight. Its only implementation, [`OpenRaftGroup`], is on openraft (pinned
//!   `=0.10.0-alpha.37`; nothing else names openraft, so raft-rs could replace it).
//! - One [`ConsensusThread`] per participant runs a current-thread tokio runtime for all its
//!   groups and a TCP listener on an ephemeral port; the caller announces the address
//!   (SEDP's `PID_TESSERA_CONSISTENCY`). Members talk request/response: openraft's append, vote
//!   and snapshot, and forwarding of proposals and membership changes to the leader.
//! - The log is in memory (redb persistence is future work).
//! - [`sim::SimNet`] replaces TCP with in-process links under the test's control (partitions,
//!   one-way cuts, seeded loss, delay, crashes); every message still goes through the wire
//!   encoding.
//! - [`check`] reads a history of writes and deliveries and lists every broken promise.
pub mod check;
pub mod entry;
mod frame;
pub mod group;
pub mod mailbox;
mod raft;
pub mod sim;

/// The shared byte strings entries carry as payloads.
pub use ::bytes::Bytes;
pub use entry::{
    last_position, position, Batch, Delivery, Entry, EntryKind, MemberId, MAX_BATCH_ENTRIES,
};
pub use group::{Change, ConsensusGroup, MemberAddr, MembershipError, ProposeError, MIN_VOTERS};
pub use raft::{ConsensusThread, GroupSpec, OpenError, OpenRaftGroup, Timing};

/// Frames the consensus TCP servers of this process refused (oversized or undecodable), since
/// start: each closed its connection.
pub fn bad_frames() -> u64 {
    raft::net::BAD_FRAMES.load(std::sync::atomic::Ordering::Relaxed)
}

/// Decodes `bytes` as a consensus frame (a request, then a response) and says whether either
/// parsed: the fuzz target's way in. A frame is network input: it must never panic.
#[doc(hidden)]
pub fn decode_frame_for_fuzzing(bytes: &[u8]) -> bool {
    let frame = ::bytes::Bytes::copy_from_slice(bytes);
    let request = frame::decode::<raft::net::Envelope>(frame.clone()).is_ok();
    let response = frame::decode::<raft::net::Response>(frame).is_ok();
    request || response
}
