//! Discovery: SPDP/SEDP data, their parameter-list encoding, and a sans-IO discovery database.
//!
//! - [`SpdpParticipantData`], [`DiscoveredWriterData`], [`DiscoveredReaderData`] are the parsed
//!   forms of the built-in topics' samples, with `encode` (always PL_CDR_LE) and `decode`
//!   (PL_CDR_LE or PL_CDR_BE). Decoding follows what Cyclone DDS 0.10 expects of a peer:
//!   omitted QoS take the spec defaults *of the announcing side* (a writer that omits
//!   reliability is reliable, a reader best effort); required parameters missing, a
//!   non-locator parameter repeated, or an unknown parameter with the must-understand bit make
//!   the whole sample invalid; vendor-specific and other unknown parameters are skipped;
//!   locators of unknown kinds (Fast DDS shared memory) are dropped. Counts are bounded
//!   (64 locators per list, 256 partitions, 16 data representations) and every length is
//!   checked before anything is allocated, so a lying peer cannot make us allocate more than its
//!   payload's size.
//! - [`encode_dispose_inline_qos`], [`encode_dispose_key_payload`] and [`decode_dispose`] handle
//!   the dispose/unregister form of the built-in samples (key hash, status info, key payload).
//! - [`DiscoveryDb`] holds local endpoints, remote participants (with leases) and remote
//!   endpoints; it takes inputs with an explicit `now`, produces [`DiscoveryEvent`]s
//!   (participant discovered/lost, matched/unmatched, incompatible QoS) and tells the caller its
//!   next deadline. It never reads a clock.
//! - [`DiscoveryEngine`] is the seam between a discovery protocol and the runtime: local
//!   endpoints, received built-in submessages and timeouts in; datagrams ([`Transmit`]s) and
//!   [`EngineEvent`]s out. [`SimpleDiscovery`] is standard SPDP/SEDP over the database; a
//!   discovery-server client is another engine. [`LocalMatcher`] matches a participant's own
//!   endpoints with each other, whatever the engine.
//! - [`ParticipantBuiltinTopicData`], [`TopicBuiltinTopicData`], [`PublicationBuiltinTopicData`]
//!   and [`SubscriptionBuiltinTopicData`] are the samples of the DDS built-in topics, built from
//!   the above.
//!
//! [`Transmit`]: crate::writer::Transmit

mod builtin;
mod content_filter;
mod data;
mod db;
mod ds_client;
pub mod ds_common;
mod ds_server;
mod engine;
mod liveliness;
mod local;
mod plist;
mod simple;
mod topics;
mod typelookup;

pub use builtin::SEDP_COALESCE;
pub use content_filter::{ContentFilterProperty, MAX_FILTER_PARAMETERS};
pub use data::{
    decode_dispose, encode_dispose_inline_qos, encode_dispose_key_payload, BuiltinTopicKind,
    DiscoveredReaderData, DiscoveredWriterData, SpdpParticipantData, StatusInfo,
    DEFAULT_PARTICIPANT_LEASE,
};
pub use db::{
    evaluate_match, DiscoveryDb, DiscoveryEvent, DiscoveryStats, LostReason, MatchOutcome,
    NoMatchReason, RemoteEndpointInfo, MAX_REMOTE_ENDPOINTS, MAX_REMOTE_PARTICIPANTS,
};
pub use ds_client::{DiscoveryServerClient, DsClientConfig, DsClientCounters, RemoteServer};
pub use ds_server::{
    BackupError, DiscoveryServerEngine, DsServerConfig, DsServerCounters, DsServerEvent,
    MAX_CLIENTS, MAX_ENDPOINTS_PER_CLIENT, RELAY_COALESCE,
};
pub use engine::{DiscoveryEngine, EngineEvent, LocatorSelector, SelectAll};
pub use liveliness::{ParticipantMessages, PMD_AUTOMATIC, PMD_MANUAL};
pub use local::LocalMatcher;
pub use plist::{MAX_DATA_REPRESENTATIONS, MAX_LOCATORS, MAX_PARTITIONS};
pub use simple::{
    SimpleDiscovery, SimpleDiscoveryConfig, SimpleDiscoveryCounters, SPDP_LEASE, SPDP_PERIOD,
    STARTUP_ANNOUNCEMENTS,
};
pub use topics::{
    ParticipantBuiltinTopicData, PublicationBuiltinTopicData, SubscriptionBuiltinTopicData,
    TopicBuiltinTopicData,
};
pub use typelookup::{TypeLookupCounters, TypeLookupService};

use crate::qos::InconsistentQos;
use crate::wire::DecodeError;

/// Why a discovery payload was rejected. Every variant is the peer's fault; the `u16`s are
/// parameter ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DiscoveryDecodeError {
    /// The payload is shorter than its encapsulation header.
    #[error("payload truncated")]
    Truncated,
    /// The encapsulation is not PL_CDR_LE / PL_CDR_BE.
    #[error("unsupported encapsulation {0:#06x}")]
    UnsupportedEncapsulation(u16),
    /// The parameter list framing is broken.
    #[error("bad parameter list: {0}")]
    ParameterList(#[from] DecodeError),
    /// A required parameter is missing.
    #[error("missing required parameter {0:#06x}")]
    MissingParameter(u16),
    /// A parameter that may occur once occurs again.
    #[error("parameter {0:#06x} repeated")]
    DuplicateParameter(u16),
    /// A parameter's value is malformed or out of range.
    #[error("parameter {0:#06x} has an invalid value")]
    InvalidParameter(u16),
    /// A parameter holds more elements than Tessera accepts.
    #[error("parameter {0:#06x} has too many elements")]
    TooLarge(u16),
    /// An unknown parameter has the must-understand bit set.
    #[error("parameter {0:#06x} must be understood but is not")]
    MustUnderstand(u16),
    /// The announced QoS contradicts itself.
    #[error("inconsistent QoS: {0}")]
    InconsistentQos(InconsistentQos),
}

/// The BuiltinEndpointSet_t bit set announced in SPDP (PID_BUILTIN_ENDPOINT_SET).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct BuiltinEndpointSet(pub u32);

impl BuiltinEndpointSet {
    /// SPDP participant writer.
    pub const PARTICIPANT_ANNOUNCER: u32 = 1 << 0;
    /// SPDP participant reader.
    pub const PARTICIPANT_DETECTOR: u32 = 1 << 1;
    /// SEDP publications writer.
    pub const PUBLICATIONS_ANNOUNCER: u32 = 1 << 2;
    /// SEDP publications reader.
    pub const PUBLICATIONS_DETECTOR: u32 = 1 << 3;
    /// SEDP subscriptions writer.
    pub const SUBSCRIPTIONS_ANNOUNCER: u32 = 1 << 4;
    /// SEDP subscriptions reader.
    pub const SUBSCRIPTIONS_DETECTOR: u32 = 1 << 5;
    /// Participant message (writer liveliness) writer.
    pub const PARTICIPANT_MESSAGE_WRITER: u32 = 1 << 10;
    /// Participant message (writer liveliness) reader.
    pub const PARTICIPANT_MESSAGE_READER: u32 = 1 << 11;
    /// TypeLookup service request writer.
    pub const TYPE_LOOKUP_REQUEST_WRITER: u32 = 1 << 12;
    /// TypeLookup service request reader.
    pub const TYPE_LOOKUP_REQUEST_READER: u32 = 1 << 13;
    /// TypeLookup service reply writer.
    pub const TYPE_LOOKUP_REPLY_WRITER: u32 = 1 << 14;
    /// TypeLookup service reply reader.
    pub const TYPE_LOOKUP_REPLY_READER: u32 = 1 << 15;
    /// The TypeLookup endpoints a Tessera participant has: it answers requests (request
    /// reader, reply writer) and asks for peers' types (request writer, reply reader).
    pub const TYPE_LOOKUP_ALL: u32 = Self::TYPE_LOOKUP_REQUEST_WRITER
        | Self::TYPE_LOOKUP_REQUEST_READER
        | Self::TYPE_LOOKUP_REPLY_WRITER
        | Self::TYPE_LOOKUP_REPLY_READER;

    /// What every Tessera participant has: SPDP and the SEDP publications and subscriptions
    /// endpoints. [`SimpleDiscovery`] adds the participant message (writer liveliness)
    /// endpoints it implements ([`ParticipantMessages::ENDPOINTS`]); a discovery-server
    /// client does not announce them.
    pub const TESSERA_DEFAULT: BuiltinEndpointSet = BuiltinEndpointSet(
        Self::PARTICIPANT_ANNOUNCER
            | Self::PARTICIPANT_DETECTOR
            | Self::PUBLICATIONS_ANNOUNCER
            | Self::PUBLICATIONS_DETECTOR
            | Self::SUBSCRIPTIONS_ANNOUNCER
            | Self::SUBSCRIPTIONS_DETECTOR,
    );

    /// Whether every bit of `bits` is set.
    pub fn contains(self, bits: u32) -> bool {
        self.0 & bits == bits
    }
}
