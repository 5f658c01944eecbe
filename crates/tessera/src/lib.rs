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
//! ## Dynamic types
//! A type known only at run time — announced by a remote endpoint, or described by hand — is a
//! [`DynamicType`]; its samples are [`DynamicValue`]s (text and JSON forms included).
//! [`DomainParticipant::discover_type`] waits for a remote writer or reader of a topic and
//! fetches its TypeObjects over TypeLookup; [`DomainParticipant::create_dynamic_topic`] makes a
//! [`DynamicTopic`], on which [`Subscriber::create_dynamic_datareader`] and
//! [`Publisher::create_dynamic_datawriter`] create a [`DynamicDataReader`] and a
//! [`DynamicDataWriter`]. Services that forward bytes use the untyped pieces beneath:
//! [`UntypedTopic`] (from [`Topic::untyped`] or [`DynamicTopic::untyped`]),
//! [`UntypedDataWriter::write_serialized`] and [`UntypedDataReader::take_serialized`]. See
//! [`dynamic`].
//! ## QoS profiles in XML
//! QoS can come from OMG DDS-XML profile files, as RTI Connext and Cyclone DDS users keep
//! them (Fast DDS 2.x `<profiles>` files load too): a [`QosProvider`] loads them
//! ([`QosProvider::from_file`], or the `;`-separated files of `TESSERA_QOS_PROFILES` with
//! [`QosProvider::from_env`]) and gives each entity's QoS by profile name,
//! `provider.datawriter_qos("MyLibrary::MyProfile")`. The entities have RTI's helpers:
//! [`DomainParticipant::with_profile`], `create_topic_with_profile`,
//! `create_publisher_with_profile`, [`Publisher::create_datawriter_with_profile`] and their
//! subscriber twins take the QoS from [`ParticipantConfig::qos_profiles`], or from
//! `TESSERA_QOS_PROFILES` when that is `None`. See [`qos_xml`] for what is read and what is
//! ignored with a warning.
//!
//! ## Threads
//! Per participant: one receive thread per socket, which decodes datagrams and delivers samples
//! into reader histories itself; one event thread for timers. `write` sends from the caller's
//! thread. See `ARCHITECTURE.md` in the repository for how a sample travels.

pub use crossbeam_channel;
pub use tessera_derive::{TopicBitmask, TopicEnum, TopicType};
pub use tessera_rtps as rtps;
pub use tessera_rtps::cdr::{Plain, TopicType};

#[cfg_attr(not(feature = "atomic"), path = "atomic_off.rs")]
mod atomic;
mod bounds;
pub mod builtin;
pub mod condition;
mod content_filter;
mod discovery_rt;
pub mod dynamic;
mod endpoint;
pub mod error;
pub mod history;
pub mod loan;
pub mod node;
mod outbox;
mod participant;
pub mod presentation;
mod publication;
mod qos_rt;
pub mod qos_xml;
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
pub use builtin::BuiltinSubscriber;
pub use condition::{Condition, ConditionKind, GuardCondition, WaitSet};
pub use content_filter::{ContentFilteredTopic, TopicDescription};
pub use discovery_rt::{DiscoveryMode, DiscoveryServer, ParticipantEvent, ParticipantInfo};
pub use dynamic::{DynamicDataReader, DynamicDataWriter, DynamicTopic, DynamicTypeSupport};
pub use error::{Error, Result};
pub use history::{
    InstanceHandle, InstanceState, Sample, SampleInfo, SampleState, StateMasks, ViewState,
};
pub use loan::Loaned;
pub use participant::{
    CountersSnapshot, DomainParticipant, ParticipantConfig, SendBundle, TransportTraffic,
};
pub use publication::{DataWriter, DataWriterListener, Loan, Publisher, UntypedDataWriter};
pub use qos_xml::{QosProvider, QosXmlError};
pub use query::QueryCondition;
pub use reader::{DataReader, PolicyDrops, SampleBuffer, UntypedDataReader};
pub use sample::{SerializedPayload, SerializedSample, TypeSupport, TypedSupport};
pub use status::StatusMask;
pub use subscription::{
    DataReaderListener, ReaderRun, ReceivedSample, SampleSink, SinkVerdict, Subscriber,
};
pub use tessera_rtps::xtypes::{DynamicType, DynamicValue};
pub use topic::{Topic, UntypedTopic};
pub use transport::AllowMulticast;
