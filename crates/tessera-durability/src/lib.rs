//! Tessera's durability service: TRANSIENT and PERSISTENT durability.
//!
//! A [`DurabilityService`] joins a domain with a participant of its own and watches discovery
//! for writers whose DURABILITY is TRANSIENT or PERSISTENT (on every topic, or on the topics
//! its [`ServiceConfig::topics`] patterns name). For each such topic it
//!
//! - learns the type (TypeInformation and TypeLookup through
//!   [`DomainParticipant::discover_type`](tessera::DomainParticipant::discover_type)); a
//!   writer that announces no type information gets an opaque type, its samples keyed by the
//!   writer's PID_KEY_HASH;
//! - subscribes reliably, with a TRANSIENT reader whose samples go to a
//!   [`SampleSink`](tessera::SampleSink) rather than a history: each comes with its original
//!   writer's GUID and sequence number, and is kept per instance within the writers'
//!   DURABILITY_SERVICE history and resource limits ([`store::TopicStore`]);
//! - for PERSISTENT topics, writes what arrived in each received datagram to a redb file in
//!   one transaction before the reader acknowledges it ([`persist::PersistentStore`]), and
//!   reloads it at start: a kill -9 of everything loses no acknowledged sample within depth;
//! - replays what it keeps through a writer of the same durability, each sample sent with
//!   PID_ORIGINAL_WRITER_INFO (RTPS 2.5 §9.6.3.9): Tessera's TRANSIENT and PERSISTENT readers
//!   deliver it as the original writer's (`SampleInfo::publication_handle`) and drop it if
//!   they had it already (from the live writer, or from another service);
//! - removes an instance that is disposed and has no live writer once
//!   `service_cleanup_delay` passed.
//!
//! Several services may run on one domain: each also follows the others' replays (they are
//! TRANSIENT writers too), keeping per original writer only numbers above the highest it has.
//! By default that is best-effort redundancy: two services that saw different samples replay
//! their own sets, and readers take each original sample once. Replicated services
//! ([`ServiceConfig::replicated`], `--replicated`) are kept identical by consensus instead: they
//! share one ATOMIC log, propose what they receive to it and store what it delivers, in log
//! order ([`replicate`]); a sample is acknowledged to its writer once the log applied it.
//!
//! The `tessera-durability` binary (also run as `tessera durability`) runs one service.

mod held;
pub mod persist;
pub mod replicate;
pub mod service;
pub mod store;

pub use persist::{PersistError, PersistentStore};
pub use replicate::LogCounters;
pub use service::{DurabilityService, ServiceConfig, ServiceError};
pub use store::{StoredSample, TopicStats, TopicStore};
