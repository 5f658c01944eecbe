//! Errors of the DCPS API.
//!
//! Every error says whose fault it is: the caller ([`Error::BadParameter`], [`Error::QosProfile`],
//! [`Error::InconsistentPolicy`], [`Error::ImmutablePolicy`], [`Error::NotEnabled`], [`Error::PreconditionNotMet`], [`Error::AlreadyDeleted`]),
//! this implementation's limits ([`Error::Unsupported`]),
//! a resource ([`Error::OutOfResources`], [`Error::Timeout`], [`Error::Io`], [`Error::Transport`]), or the state of the
//! data ([`Error::NoData`], [`Error::UnknownInstance`]). Peers' mistakes never surface here: malformed network input is
//! counted and dropped inside the runtime.

use std::io;

/// The result type of the DCPS API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Errors returned by DCPS operations.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument was out of range or malformed.
    #[error("bad parameter: {0}")]
    BadParameter(String),
    /// A QoS is inconsistent with itself (e.g. keep-last depth above max_samples_per_instance).
    #[error("inconsistent QoS: {0}")]
    InconsistentPolicy(String),
    /// `set_qos` tried to change a policy that cannot change once the entity is enabled (DDS
    /// `IMMUTABLE_POLICY`); the names of those policies.
    #[error("immutable policy: {0}")]
    ImmutablePolicy(String),
    /// The entity was created disabled (ENTITY_FACTORY `autoenable_created_entities` off) and
    /// not enabled yet (DDS `NOT_ENABLED`).
    #[error("entity not enabled")]
    NotEnabled,
    /// The operation is not allowed in the entity's current state (e.g. deleting a topic
    /// that still has readers, or writing an unregistered instance).
    #[error("precondition not met: {0}")]
    PreconditionNotMet(String),
    /// A resource limit was hit (history full after max_blocking_time, too many instances).
    #[error("out of resources: {0}")]
    OutOfResources(String),
    /// A blocking operation did not complete in time.
    #[error("timeout")]
    Timeout,
    /// An ATOMIC write got no answer in time after it may have reached the group: it may still
    /// be committed (and delivered everywhere) or not. A later write of the same writer is never
    /// delivered before it.
    #[error("indeterminate: the sample may or may not be committed")]
    Indeterminate,
    /// The entity was already deleted or its participant is gone.
    #[error("entity already deleted")]
    AlreadyDeleted,
    /// The instance handle is unknown to this entity.
    #[error("unknown instance")]
    UnknownInstance,
    /// The request is valid DDS but this implementation does not provide it (e.g. TRANSIENT
    /// or PERSISTENT durability, which need a durability service); refused rather than
    /// silently given a weaker behaviour.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// No data was available (non-blocking take/read on an empty reader).
    #[error("no data")]
    NoData,
    /// The transport could not be set up (no usable interface, no free port, bad config).
    #[error("transport: {0}")]
    Transport(#[from] crate::transport::TransportError),
    /// A QoS profile could not be loaded or found (XML QoS profiles, [`crate::qos_xml`]).
    #[error("QoS profile: {0}")]
    QosProfile(#[from] crate::qos_xml::QosXmlError),
    /// A socket or other operating-system operation failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}
