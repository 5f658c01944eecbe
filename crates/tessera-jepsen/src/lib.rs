//! A fault harness in the manner of Jepsen for Tessera's ATOMIC consistency.
//!
//! Members are real processes (`tessera-jepsen-member`), one per network namespace host on a
//! private bridge; each runs an ATOMIC writer and an ATOMIC reader on one topic and appends
//! every event to a history file of its own. The controller (`tessera-jepsen run`) starts them,
//! plays a seeded schedule of faults ([`schedule`]): kill -9 then restart, SIGSTOP pauses,
//! majority/minority partitions, one-way cuts and loss bursts with nftables ([`nft`]), and
//! jumps of one member's wall clock, forward or back, with libfaketime ([`clock`]); never
//! more than a minority faulty at once; then heals everything, lets the group quiesce, stops
//! the members, merges their histories ([`history`]) and runs [`tessera_atomic::check::check`].
//!
//! A process restart is a new member: the consensus log is in memory, so the new incarnation
//! gets a new participant (GUID prefix, hence member id), a new writer id and a history file of
//! its own. The reader delivers committed samples in log order; DDS does not show the log
//! index, so a member's n-th delivery is recorded at position n. Every incarnation replays the
//! log from its start, so positions agree across members as long as no member installs a
//! snapshot (the group snapshots every 10,000 entries; a run stays far below that, and the
//! controller warns when it gets close).
pub mod clock;
pub mod history;
pub mod nft;
pub mod schedule;
