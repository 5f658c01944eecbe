//! # Tessera — DDS over RTPS, in Rust
//!
//! Tessera implements the OMG Data Distribution Service (DCPS) on the RTPS wire protocol, so its
//! participants discover and exchange data with Cyclone DDS, Fast DDS and any other RTPS
//! implementation.
//!
//! ```no_run
//! use tessera::{DomainParticipant, TopicType};
//! use std::time::Duration;
//! use tessera::qos::{DataReaderQos, DataWriterQos, Reliability, TopicQos};
//!
//! #[derive(TopicType, Debug, Clone, PartialEq)]
//! struct Reading {
//!     #[key]
//!     sensor: u32,
//!     celsius: f64,
//! }
//!
//! # fn main() -> tessera::Result<()> {
//! let participant = DomainParticipant::new(0)?;
//! let topic = participant.create_topic::<Reading>("Temperature", TopicQos::default())?;
//! let writer = participant
//!     .create_publisher(Default::default())?
//!     .create_datawriter(&topic, DataWriterQos::default())?;
//! let reader = participant
//!     .create_subscriber(Default::default())?
//!     .create_datareader(&topic, DataReaderQos::default().with_reliability(Reliability::reliable(Duration::from_secs(1))))?;
//! writer.write(&Reading { sensor: 7, celsius: 21.5 })?;
//! for sample in reader.take(16)? {
//!     println!("{:?} {:?}", sample.data, sample.info.instance_state);
//! }
//! # Ok(()) }
//! ```
//!
//! ## Layers
//! - [`tessera_rtps`] (re-exported as [`rtps`]): the sans-IO protocol core — wire codec,
//!   CDR, QoS matching, discovery data, reliability state machines.
//! - this crate: the runtime (sockets, threads, timers) and the DCPS API:
//!   [`DomainParticipant`] → [`Topic`], [`Publisher`] → [`DataWriter`],
//!   [`Subscriber`] → [`DataReader`], with listeners, [`WaitSet`]s and polling. Readers keep
//!   samples serialized and know their type only through a [`TypeSupport`]: `DataReader<T>`
//!   decodes at `read`/`take`, [`UntypedDataReader`] hands out the bytes.
//!
//! ## Threads
//! Per participant: one receive thread per socket, which decodes datagrams and delivers samples
//! into reader histories itself; one event thread for timers. `write` sends from the caller's
//! thread. See `ARCHITECTURE.md` in the repository for how a sample travels.

pub use crossbeam_channel;
pub use tessera_derive::{TopicEnum, TopicType};
pub use tessera_rtps as rtps;
pub use tessera_rtps::cdr::TopicType;

#[cfg_attr(not(feature = "atomic"), path = "atomic_off.rs")]
mod atomic;
mod bounds;
pub mod condition;
mod content_filter;
mod discovery_rt;
mod endpoint;
pub mod error;
pub mod history;
mod outbox;
mod participant;
mod publication;
mod qos_rt;
mod query;
mod reader;
mod runtime;
pub mod sample;
pub mod status;
mod subscription;
mod topic;
pub mod transport;

/// QoS policies (re-exported from the protocol core, where matching happens).
pub mod qos {
    pub use tessera_rtps::qos::*;
}

pub use bounds::ResourceBounds;
pub use condition::{Condition, ConditionKind, GuardCondition, WaitSet};
pub use content_filter::{ContentFilteredTopic, TopicDescription};
pub use discovery_rt::{DiscoveryMode, DiscoveryServer, ParticipantEvent, ParticipantInfo};
pub use error::{Error, Result};
pub use history::{
    InstanceHandle, InstanceState, Sample, SampleInfo, SampleState, StateMasks, ViewState,
};
pub use participant::{CountersSnapshot, DomainParticipant, ParticipantConfig, TransportTraffic};
pub use publication::{DataWriter, DataWriterListener, Publisher};
pub use query::QueryCondition;
pub use reader::{DataReader, PolicyDrops, UntypedDataReader};
pub use sample::{SerializedPayload, SerializedSample, TypeSupport, TypedSupport};
pub use status::StatusMask;
pub use subscription::{DataReaderListener, Subscriber};
pub use topic::Topic;
pub use transport::AllowMulticast;
