//! placeholder
pub mod check;
pub mod entry;
pub mod group;
mod raft;
pub mod sim;

pub use entry::{Delivery, Entry, EntryKind, MemberId};
pub use group::{ConsensusGroup, MemberAddr, MembershipError, ProposeError};
pub use raft::{ConsensusThread, GroupSpec, OpenError, OpenRaftGroup, Timing};
