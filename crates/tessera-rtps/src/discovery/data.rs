//! SPDP and SEDP data and their parameter-list encoding.

use std::sync::Arc;
use std::time::Duration;

use super::plist::{self, put_locator, put_string, put_u32, QosParams, Value, MAX_LOCATORS};
use super::{BuiltinEndpointSet, DiscoveryDecodeError as E};
use crate::cdr::{CdrWriter, Encoding};
use crate::qos::{ReaderSideQos, WriterSideQos};
use crate::types::{
    EntityId, Guid, GuidPrefix, Locator, ProtocolVersion, VendorId, PROTOCOL_VERSION,
    VENDOR_TESSERA,
};
use crate::wire::{encapsulation, pid, ParameterList, ParameterListBuilder};
use crate::xtypes::TypeInformation;

/// The participant lease duration assumed when SPDP data omits it (RTPS: 100 s).
pub const DEFAULT_PARTICIPANT_LEASE: Duration = Duration::from_secs(100);

/// A participant as announced by SPDP (the `SPDPdiscoveredParticipantData`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpdpParticipantData {
    /// The participant's GUID prefix (its GUID is this prefix + `EntityId::PARTICIPANT`).
    pub guid_prefix: GuidPrefix,
    /// RTPS version it speaks (2.1 when omitted).
    pub protocol_version: ProtocolVersion,
    /// Its vendor (00.00 when omitted).
    pub vendor_id: VendorId,
    /// Domain id, if announced (receivers assume their own when omitted).
    pub domain_id: Option<u32>,
    /// Domain tag ("" when omitted); participants with different tags never match.
    pub domain_tag: String,
    /// Where user traffic may be unicast.
    pub default_unicast_locators: Vec<Locator>,
    /// Multicast groups it receives user traffic on.
    pub default_multicast_locators: Vec<Locator>,
    /// Where discovery traffic may be unicast.
    pub metatraffic_unicast_locators: Vec<Locator>,
    /// Multicast groups it receives discovery traffic on.
    pub metatraffic_multicast_locators: Vec<Locator>,
    /// How long it counts as alive without traffic ([`DEFAULT_PARTICIPANT_LEASE`] if omitted).
    pub lease_duration: Duration,
    /// Built-in endpoints it has.
    pub builtin_endpoints: BuiltinEndpointSet,
    /// Participant USER_DATA (ddsperf puts `DDSPerf:<R>:<pid>:<host>` here).
    pub user_data: Vec<u8>,
    /// Participant name (PID_ENTITY_NAME), if any.
    pub entity_name: Option<String>,
}

impl SpdpParticipantData {
    /// Announcement data for a Tessera participant with the given prefix: our protocol version
    /// and vendor, the default lease and the SPDP/SEDP built-in endpoints;
    /// no locators.
    pub fn new(guid_prefix: GuidPrefix) -> Self {
        SpdpParticipantData {
            guid_prefix,
            protocol_version: PROTOCOL_VERSION,
            vendor_id: VENDOR_TESSERA,
            domain_id: None,
            domain_tag: String::new(),
            default_unicast_locators: Vec::new(),
            default_multicast_locators: Vec::new(),
            metatraffic_unicast_locators: Vec::new(),
            metatraffic_multicast_locators: Vec::new(),
            lease_duration: DEFAULT_PARTICIPANT_LEASE,
            builtin_endpoints: BuiltinEndpointSet::TESSERA_DEFAULT,
            user_data: Vec::new(),
            entity_name: None,
        }
    }

    /// The participant's GUID.
    pub fn guid(&self) -> Guid {
        Guid::new(self.guid_prefix, EntityId::PARTICIPANT)
    }

    /// Appends the serialized payload (PL_CDR_LE encapsulation and parameter list) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&encapsulation_header());
        let mut b = ParameterListBuilder::new(out);
        let pv = self.protocol_version;
        b.param(pid::PROTOCOL_VERSION, &[pv.major, pv.minor]);
        b.param(pid::VENDOR_ID, &self.vendor_id.0);
        b.param(pid::PARTICIPANT_GUID, &self.guid().to_bytes());
        b.param_with(pid::BUILTIN_ENDPOINT_SET, |o| {
            put_u32(o, self.builtin_endpoints.0)
        });
        if let Some(d) = self.domain_id {
            b.param_with(pid::DOMAIN_ID, |o| put_u32(o, d));
        }
        if !self.domain_tag.is_empty() {
            b.param_with(pid::DOMAIN_TAG, |o| put_string(o, &self.domain_tag));
        }
        b.param_with(pid::PARTICIPANT_LEASE_DURATION, |o| {
            plist::put_duration(o, self.lease_duration)
        });
        for (p, list) in [
            (pid::DEFAULT_UNICAST_LOCATOR, &self.default_unicast_locators),
            (
                pid::DEFAULT_MULTICAST_LOCATOR,
                &self.default_multicast_locators,
            ),
            (
                pid::METATRAFFIC_UNICAST_LOCATOR,
                &self.metatraffic_unicast_locators,
            ),
            (
                pid::METATRAFFIC_MULTICAST_LOCATOR,
                &self.metatraffic_multicast_locators,
            ),
        ] {
            for l in list {
                b.param_with(p, |o| put_locator(o, l));
            }
        }
        if !self.user_data.is_empty() {
            b.param_with(pid::USER_DATA, |o| plist::put_octets(o, &self.user_data));
        }
        if let Some(n) = &self.entity_name {
            b.param_with(pid::ENTITY_NAME, |o| put_string(o, n));
        }
        b.finish();
    }

    /// The serialized payload as a new vector.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(256);
        self.encode(&mut v);
        v
    }

    /// Decodes a serialized SPDP payload (PL_CDR_LE or PL_CDR_BE).
    pub fn decode(payload: &[u8]) -> Result<Self, E> {
        let pl = open_payload(payload)?;
        let le = pl.little_endian();
        let mut seen = Seen::default();
        let mut guid: Option<Guid> = None;
        let mut builtin: Option<u32> = None;
        let mut d = SpdpParticipantData::new(GuidPrefix::UNKNOWN);
        d.protocol_version = ProtocolVersion { major: 2, minor: 1 };
        d.vendor_id = VendorId([0, 0]);
        d.builtin_endpoints = BuiltinEndpointSet(0);
        for (p, value) in pl.iter() {
            let mut v = Value::new(value, le, p);
            let repeatable = match p {
                pid::PARTICIPANT_GUID => {
                    guid = Some(v.guid()?);
                    false
                }
                pid::BUILTIN_ENDPOINT_SET => {
                    builtin = Some(v.u32()?);
                    false
                }
                pid::PROTOCOL_VERSION => {
                    d.protocol_version = ProtocolVersion {
                        major: v.u8()?,
                        minor: v.u8()?,
                    };
                    false
                }
                pid::VENDOR_ID => {
                    d.vendor_id = VendorId([v.u8()?, v.u8()?]);
                    false
                }
                pid::DOMAIN_ID => {
                    d.domain_id = Some(v.u32()?);
                    false
                }
                pid::DOMAIN_TAG => {
                    d.domain_tag = v.string()?;
                    false
                }
                pid::PARTICIPANT_LEASE_DURATION => {
                    d.lease_duration = v.duration()?;
                    false
                }
                pid::USER_DATA => {
                    d.user_data = v.octets()?;
                    false
                }
                pid::ENTITY_NAME => {
                    d.entity_name = Some(v.string()?);
                    false
                }
                pid::DEFAULT_UNICAST_LOCATOR => {
                    push_locator(&mut d.default_unicast_locators, &mut v)?;
                    true
                }
                pid::DEFAULT_MULTICAST_LOCATOR => {
                    push_locator(&mut d.default_multicast_locators, &mut v)?;
                    true
                }
                pid::METATRAFFIC_UNICAST_LOCATOR => {
                    push_locator(&mut d.metatraffic_unicast_locators, &mut v)?;
                    true
                }
                pid::METATRAFFIC_MULTICAST_LOCATOR => {
                    push_locator(&mut d.metatraffic_multicast_locators, &mut v)?;
                    true
                }
                _ => {
                    skip_unknown(p)?;
                    continue;
                }
            };
            if !repeatable {
                seen.insert(p)?;
            }
        }
        let guid = guid.ok_or(E::MissingParameter(pid::PARTICIPANT_GUID))?;
        if guid.entity_id != EntityId::PARTICIPANT {
            return Err(E::InvalidParameter(pid::PARTICIPANT_GUID));
        }
        d.guid_prefix = guid.prefix;
        d.builtin_endpoints =
            BuiltinEndpointSet(builtin.ok_or(E::MissingParameter(pid::BUILTIN_ENDPOINT_SET))?);
        Ok(d)
    }
}

/// A writer as announced by SEDP (the `DiscoveredWriterData`); also used to describe local
/// writers to the [`DiscoveryDb`](super::DiscoveryDb).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredWriterData {
    /// The writer's GUID (PID_ENDPOINT_GUID).
    pub guid: Guid,
    /// Its participant's GUID (derived from `guid` when omitted).
    pub participant_guid: Guid,
    /// Topic name.
    pub topic_name: String,
    /// Registered type name.
    pub type_name: String,
    /// Offered QoS (spec writer defaults for omitted policies).
    pub qos: WriterSideQos,
    /// Writer-specific unicast locators (empty: use the participant's defaults).
    pub unicast_locators: Vec<Locator>,
    /// Writer-specific multicast locators.
    pub multicast_locators: Vec<Locator>,
    /// Entity name, if any.
    pub entity_name: Option<String>,
    /// The type's XTypes TypeInformation (PID_TYPE_INFORMATION), if announced.
    pub type_information: Option<Arc<TypeInformation>>,
    /// The peer announced a TypeInformation that did not decode: it is ignored (matching
    /// falls back to the type name) and the engine counts it.
    pub type_information_rejected: bool,
}

impl DiscoveredWriterData {
    /// A writer description with default QoS and no locators.
    pub fn new(guid: Guid, topic_name: impl Into<String>, type_name: impl Into<String>) -> Self {
        DiscoveredWriterData {
            guid,
            participant_guid: Guid::new(guid.prefix, EntityId::PARTICIPANT),
            topic_name: topic_name.into(),
            type_name: type_name.into(),
            qos: WriterSideQos::default(),
            unicast_locators: Vec::new(),
            multicast_locators: Vec::new(),
            entity_name: None,
            type_information: None,
            type_information_rejected: false,
        }
    }

    /// Replaces the QoS (builder style).
    #[must_use]
    pub fn with_qos(mut self, qos: WriterSideQos) -> Self {
        self.qos = qos;
        self
    }

    /// Appends the serialized payload (PL_CDR_LE encapsulation and parameter list) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&encapsulation_header());
        let mut b = ParameterListBuilder::new(out);
        emit_endpoint_head(
            &mut b,
            self.guid,
            self.participant_guid,
            &self.topic_name,
            &self.type_name,
        );
        plist::emit_writer_qos(&mut b, &self.qos);
        emit_endpoint_tail(
            &mut b,
            &self.unicast_locators,
            &self.multicast_locators,
            &self.entity_name,
            self.type_information.as_deref(),
        );
        b.finish();
    }

    /// The serialized payload as a new vector.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(256);
        self.encode(&mut v);
        v
    }

    /// Decodes a serialized SEDP publication (PL_CDR_LE or PL_CDR_BE). Omitted QoS take the
    /// spec defaults for a *writer* (e.g. reliable, 100 ms max blocking time).
    pub fn decode(payload: &[u8]) -> Result<Self, E> {
        let (common, qos, _) = decode_endpoint(payload)?;
        if !common.guid.entity_id.is_writer() {
            return Err(E::InvalidParameter(pid::ENDPOINT_GUID));
        }
        let qos = qos.into_writer();
        qos.check_consistency().map_err(E::InconsistentQos)?;
        Ok(DiscoveredWriterData {
            guid: common.guid,
            participant_guid: common.participant_guid,
            topic_name: common.topic_name,
            type_name: common.type_name,
            qos,
            unicast_locators: common.unicast_locators,
            multicast_locators: common.multicast_locators,
            entity_name: common.entity_name,
            type_information: common.type_information,
            type_information_rejected: common.type_information_rejected,
        })
    }
}

/// A reader as announced by SEDP (the `DiscoveredReaderData`); also used to describe local
/// readers to the [`DiscoveryDb`](super::DiscoveryDb).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscoveredReaderData {
    /// The reader's GUID (PID_ENDPOINT_GUID).
    pub guid: Guid,
    /// Its participant's GUID (derived from `guid` when omitted).
    pub participant_guid: Guid,
    /// Topic name.
    pub topic_name: String,
    /// Registered type name.
    pub type_name: String,
    /// Requested QoS (spec reader defaults for omitted policies).
    pub qos: ReaderSideQos,
    /// Reader-specific unicast locators (empty: use the participant's defaults).
    pub unicast_locators: Vec<Locator>,
    /// Reader-specific multicast locators.
    pub multicast_locators: Vec<Locator>,
    /// Whether the reader wants inline QoS with every sample (Cyclone refuses such readers).
    pub expects_inline_qos: bool,
    /// Entity name, if any.
    pub entity_name: Option<String>,
    /// The type's XTypes TypeInformation (PID_TYPE_INFORMATION), if announced.
    pub type_information: Option<Arc<TypeInformation>>,
    /// The peer announced a TypeInformation that did not decode: it is ignored (matching
    /// falls back to the type name) and the engine counts it.
    pub type_information_rejected: bool,
    /// The reader's content filter (PID_CONTENT_FILTER_PROPERTY), if it reads a
    /// content-filtered topic; a value that does not decode is ignored (the writer then sends
    /// everything and the reader filters).
    pub content_filter: Option<super::ContentFilterProperty>,
    /// A Tessera reader that resolves zero-copy loan references announces its type's plain
    /// layout hash here (PID_TESSERA_LOAN_LAYOUT); 0 for every other reader, which a loaning
    /// writer sends serialized samples.
    pub loan_layout: u64,
    /// A Tessera reader that copies serialized samples out of a writer's shared-memory chunks
    /// (bit 0 of the flags after the layout hash in PID_TESSERA_LOAN_LAYOUT): a writer may send
    /// it a reference instead of a large sample.
    pub cdr_chunks: bool,
}

impl DiscoveredReaderData {
    /// A reader description with default QoS and no locators.
    pub fn new(guid: Guid, topic_name: impl Into<String>, type_name: impl Into<String>) -> Self {
        DiscoveredReaderData {
            guid,
            participant_guid: Guid::new(guid.prefix, EntityId::PARTICIPANT),
            topic_name: topic_name.into(),
            type_name: type_name.into(),
            qos: ReaderSideQos::default(),
            unicast_locators: Vec::new(),
            multicast_locators: Vec::new(),
            expects_inline_qos: false,
            entity_name: None,
            type_information: None,
            type_information_rejected: false,
            content_filter: None,
            loan_layout: 0,
            cdr_chunks: false,
        }
    }

    /// Replaces the QoS (builder style).
    #[must_use]
    pub fn with_qos(mut self, qos: ReaderSideQos) -> Self {
        self.qos = qos;
        self
    }

    /// Appends the serialized payload (PL_CDR_LE encapsulation and parameter list) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&encapsulation_header());
        let mut b = ParameterListBuilder::new(out);
        emit_endpoint_head(
            &mut b,
            self.guid,
            self.participant_guid,
            &self.topic_name,
            &self.type_name,
        );
        plist::emit_reader_qos(&mut b, &self.qos);
        if self.expects_inline_qos {
            b.param(pid::EXPECTS_INLINE_QOS, &[1]);
        }
        if let Some(cf) = &self.content_filter {
            b.param_with(pid::CONTENT_FILTER_PROPERTY, |o| cf.encode(o));
        }
        if self.loan_layout != 0 || self.cdr_chunks {
            b.param_with(pid::TESSERA_LOAN_LAYOUT, |o| {
                o.extend_from_slice(&LOAN_LAYOUT_MAGIC);
                put_u32(o, self.loan_layout as u32);
                put_u32(o, (self.loan_layout >> 32) as u32);
                put_u32(o, u32::from(self.cdr_chunks) * LOAN_FLAG_CDR_CHUNKS);
            });
        }
        emit_endpoint_tail(
            &mut b,
            &self.unicast_locators,
            &self.multicast_locators,
            &self.entity_name,
            self.type_information.as_deref(),
        );
        b.finish();
    }

    /// The serialized payload as a new vector.
    pub fn to_payload(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(256);
        self.encode(&mut v);
        v
    }

    /// Decodes a serialized SEDP subscription (PL_CDR_LE or PL_CDR_BE). Omitted QoS take the
    /// spec defaults for a *reader* (e.g. best effort).
    pub fn decode(payload: &[u8]) -> Result<Self, E> {
        let (common, qos, expects_inline_qos) = decode_endpoint(payload)?;
        if !common.guid.entity_id.is_reader() {
            return Err(E::InvalidParameter(pid::ENDPOINT_GUID));
        }
        let qos = qos.into_reader();
        qos.check_consistency().map_err(E::InconsistentQos)?;
        Ok(DiscoveredReaderData {
            guid: common.guid,
            participant_guid: common.participant_guid,
            topic_name: common.topic_name,
            type_name: common.type_name,
            qos,
            unicast_locators: common.unicast_locators,
            multicast_locators: common.multicast_locators,
            expects_inline_qos,
            entity_name: common.entity_name,
            type_information: common.type_information,
            type_information_rejected: common.type_information_rejected,
            content_filter: common.content_filter,
            loan_layout: common.loan_layout,
            cdr_chunks: common.cdr_chunks,
        })
    }
}

// ------------------------------------------------------------------ disposes

/// The `StatusInfo_t` flags carried in PID_STATUS_INFO (inline QoS of a DATA).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct StatusInfo(pub u32);

impl StatusInfo {
    /// The instance was disposed.
    pub const DISPOSED: u32 = 0x1;
    /// The instance was unregistered.
    pub const UNREGISTERED: u32 = 0x2;
    /// The sample was filtered out.
    pub const FILTERED: u32 = 0x4;
    /// Disposed and unregistered: how a deleted entity is announced.
    pub const DISPOSED_UNREGISTERED: StatusInfo = StatusInfo(0x3);

    /// Whether the disposed flag is set.
    pub fn is_disposed(self) -> bool {
        self.0 & Self::DISPOSED != 0
    }

    /// Whether the unregistered flag is set.
    pub fn is_unregistered(self) -> bool {
        self.0 & Self::UNREGISTERED != 0
    }

    /// Whether the sample ends the instance's life (disposed or unregistered).
    pub fn ends_instance(self) -> bool {
        self.0 & (Self::DISPOSED | Self::UNREGISTERED) != 0
    }

    /// Reads PID_STATUS_INFO from an inline QoS list; `StatusInfo(0)` if absent. The value is
    /// four octets with the flags in the last, independent of the list's endianness.
    pub fn from_inline_qos(inline_qos: &ParameterList<'_>) -> Result<StatusInfo, E> {
        match inline_qos.get(pid::STATUS_INFO) {
            None => Ok(StatusInfo(0)),
            Some(v) => {
                let b: [u8; 4] = v
                    .get(..4)
                    .and_then(|s| s.try_into().ok())
                    .ok_or(E::InvalidParameter(pid::STATUS_INFO))?;
                Ok(StatusInfo(u32::from_be_bytes(b)))
            }
        }
    }
}

/// Which built-in topic a dispose belongs to: it decides which parameter carries the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinTopicKind {
    /// SPDP: the key is PID_PARTICIPANT_GUID.
    Participant,
    /// SEDP publications/subscriptions: the key is PID_ENDPOINT_GUID.
    Endpoint,
}

impl BuiltinTopicKind {
    fn key_pid(self) -> u16 {
        match self {
            BuiltinTopicKind::Participant => pid::PARTICIPANT_GUID,
            BuiltinTopicKind::Endpoint => pid::ENDPOINT_GUID,
        }
    }
}

/// Appends the inline QoS of a built-in dispose/unregister DATA: PID_KEY_HASH (the GUID's 16
/// bytes), PID_STATUS_INFO and the sentinel. Send it with the Q flag set.
pub fn encode_dispose_inline_qos(key: Guid, status: StatusInfo, out: &mut Vec<u8>) {
    let mut b = ParameterListBuilder::new(out);
    b.param(pid::KEY_HASH, &key.to_bytes());
    b.param(pid::STATUS_INFO, &status.0.to_be_bytes());
    b.finish();
}

/// Appends the serialized key of a built-in dispose DATA (K flag): PL_CDR_LE encapsulation and a
/// parameter list holding only the key GUID.
pub fn encode_dispose_key_payload(kind: BuiltinTopicKind, key: Guid, out: &mut Vec<u8>) {
    out.extend_from_slice(&encapsulation_header());
    let mut b = ParameterListBuilder::new(out);
    b.param(kind.key_pid(), &key.to_bytes());
    b.finish();
}

/// Extracts the GUID and status of a received built-in DATA that may be a dispose or
/// unregister: the status comes from the inline QoS, the key from the payload's key parameter
/// (a key-only or a full payload) or else from PID_KEY_HASH. The caller treats it as a dispose
/// when `status.ends_instance()`.
pub fn decode_dispose(
    kind: BuiltinTopicKind,
    inline_qos: Option<&ParameterList<'_>>,
    payload: &[u8],
) -> Result<(Guid, StatusInfo), E> {
    let status = match inline_qos {
        Some(q) => StatusInfo::from_inline_qos(q)?,
        None => StatusInfo(0),
    };
    if !payload.is_empty() {
        let pl = open_payload(payload)?;
        let mut key = None;
        for (p, value) in pl.iter() {
            if p == kind.key_pid() {
                if key.is_some() {
                    return Err(E::DuplicateParameter(p));
                }
                key = Some(Value::new(value, pl.little_endian(), p).guid()?);
            }
        }
        if let Some(k) = key {
            return Ok((k, status));
        }
    }
    let kh = inline_qos
        .and_then(|q| q.get(pid::KEY_HASH))
        .ok_or(E::MissingParameter(kind.key_pid()))?;
    let b: [u8; 16] = kh
        .get(..16)
        .and_then(|s| s.try_into().ok())
        .ok_or(E::InvalidParameter(pid::KEY_HASH))?;
    Ok((Guid::from_bytes(b), status))
}

// ------------------------------------------------------------------ shared machinery

fn encapsulation_header() -> [u8; 4] {
    let [a, b] = encapsulation::PL_CDR_LE.to_be_bytes();
    [a, b, 0, 0]
}

/// Checks the encapsulation header and parses the parameter list behind it.
fn open_payload(payload: &[u8]) -> Result<ParameterList<'_>, E> {
    let head = payload.get(..4).ok_or(E::Truncated)?;
    let le = match u16::from_be_bytes([head[0], head[1]]) {
        encapsulation::PL_CDR_LE => true,
        encapsulation::PL_CDR_BE => false,
        other => return Err(E::UnsupportedEncapsulation(other)),
    };
    Ok(ParameterList::parse(&payload[4..], le)?)
}

/// What to do with a pid the decoder does not interpret: vendor-specific ones are skipped, as
/// are unknown ones, unless they carry the must-understand bit.
fn skip_unknown(p: u16) -> Result<(), E> {
    if p & pid::VENDOR_SPECIFIC == 0 && p & pid::MUST_UNDERSTAND != 0 {
        return Err(E::MustUnderstand(p));
    }
    Ok(())
}

fn push_locator(list: &mut Vec<Locator>, v: &mut Value<'_>) -> Result<(), E> {
    if let Some(l) = v.locator()? {
        if list.len() < MAX_LOCATORS && !list.contains(&l) {
            list.push(l);
        }
    }
    Ok(())
}

/// Tracks which non-repeatable parameters were seen.
#[derive(Default)]
struct Seen {
    low: u128,
    high: Vec<u16>,
}

impl Seen {
    fn insert(&mut self, p: u16) -> Result<(), E> {
        let dup = if p < 128 {
            let bit = 1u128 << p;
            let dup = self.low & bit != 0;
            self.low |= bit;
            dup
        } else if self.high.contains(&p) {
            true
        } else {
            self.high.push(p);
            false
        };
        if dup {
            Err(E::DuplicateParameter(p))
        } else {
            Ok(())
        }
    }
}

struct EndpointCommon {
    guid: Guid,
    participant_guid: Guid,
    topic_name: String,
    type_name: String,
    unicast_locators: Vec<Locator>,
    multicast_locators: Vec<Locator>,
    entity_name: Option<String>,
    type_information: Option<Arc<TypeInformation>>,
    type_information_rejected: bool,
    content_filter: Option<super::ContentFilterProperty>,
    loan_layout: u64,
    cdr_chunks: bool,
}

/// The first four bytes of a PID_TESSERA_LOAN_LAYOUT value.
const LOAN_LAYOUT_MAGIC: [u8; 4] = *b"TSRL";
/// PID_TESSERA_LOAN_LAYOUT flag: the reader resolves references to serialized samples.
const LOAN_FLAG_CDR_CHUNKS: u32 = 1;

/// Parameters that SEDP may carry and that Tessera deliberately ignores (group GUIDs, key
/// hashes etc. carry nothing we need).
const IGNORED_SEDP_PIDS: &[u16] = &[
    pid::GROUP_GUID,
    pid::KEY_HASH,
    pid::STATUS_INFO,
    pid::PROTOCOL_VERSION,
    pid::VENDOR_ID,
    pid::TYPE_MAX_SIZE_SERIALIZED,
    pid::PROPERTY_LIST,
];

fn decode_endpoint(payload: &[u8]) -> Result<(EndpointCommon, QosParams, bool), E> {
    let pl = open_payload(payload)?;
    let le = pl.little_endian();
    let mut seen = Seen::default();
    let mut qos = QosParams::default();
    let mut guid = None;
    let mut participant_guid = None;
    let mut topic_name = None;
    let mut type_name = None;
    let mut unicast_locators = Vec::new();
    let mut multicast_locators = Vec::new();
    let mut entity_name = None;
    let mut expects_inline_qos = false;
    let mut type_information = None;
    let mut type_information_rejected = false;
    let mut content_filter = None;
    let mut loan_layout = 0;
    let mut cdr_chunks = false;
    for (p, value) in pl.iter() {
        let mut v = Value::new(value, le, p);
        let repeatable = match p {
            pid::ENDPOINT_GUID => {
                guid = Some(v.guid()?);
                false
            }
            pid::PARTICIPANT_GUID => {
                participant_guid = Some(v.guid()?);
                false
            }
            pid::TOPIC_NAME => {
                topic_name = Some(v.string()?);
                false
            }
            pid::TYPE_NAME => {
                type_name = Some(v.string()?);
                false
            }
            pid::ENTITY_NAME => {
                entity_name = Some(v.string()?);
                false
            }
            pid::EXPECTS_INLINE_QOS => {
                expects_inline_qos = v.bool()?;
                false
            }
            pid::TYPE_INFORMATION => {
                // Never a reason to drop the endpoint: Fast DDS 2.9 sends an encapsulated,
                // classic-CDR value here; such a value is ignored and flagged.
                match TypeInformation::decode(value, !le) {
                    Ok(t) => type_information = Some(Arc::new(t)),
                    Err(_) => type_information_rejected = true,
                }
                // Repeated or not, it must not cost the endpoint (the last valid one counts).
                true
            }
            pid::CONTENT_FILTER_PROPERTY => {
                content_filter = super::ContentFilterProperty::decode(&mut v).ok();
                false
            }
            pid::TESSERA_LOAN_LAYOUT => {
                // Another vendor's parameter under the same pid lacks the magic: ignored, and
                // so is a short value (the reader then simply gets serialized samples).
                if v.array::<4>().ok() == Some(LOAN_LAYOUT_MAGIC) {
                    if let (Ok(lo), Ok(hi)) = (v.u32(), v.u32()) {
                        loan_layout = u64::from(lo) | u64::from(hi) << 32;
                        // Flags came later: a value without them has none set.
                        cdr_chunks = v.u32().is_ok_and(|f| f & LOAN_FLAG_CDR_CHUNKS != 0);
                    }
                }
                false
            }
            pid::UNICAST_LOCATOR => {
                push_locator(&mut unicast_locators, &mut v)?;
                true
            }
            pid::MULTICAST_LOCATOR => {
                push_locator(&mut multicast_locators, &mut v)?;
                true
            }
            _ if IGNORED_SEDP_PIDS.contains(&p) => continue,
            _ => {
                if !qos.parse(p, value, le)? {
                    skip_unknown(p)?;
                    continue;
                }
                false
            }
        };
        if !repeatable {
            seen.insert(p)?;
        }
    }
    let guid = guid.ok_or(E::MissingParameter(pid::ENDPOINT_GUID))?;
    let common = EndpointCommon {
        guid,
        participant_guid: participant_guid.unwrap_or(Guid::new(guid.prefix, EntityId::PARTICIPANT)),
        topic_name: topic_name.ok_or(E::MissingParameter(pid::TOPIC_NAME))?,
        type_name: type_name.ok_or(E::MissingParameter(pid::TYPE_NAME))?,
        unicast_locators,
        multicast_locators,
        entity_name,
        type_information,
        type_information_rejected,
        content_filter,
        loan_layout,
        cdr_chunks,
    };
    Ok((common, qos, expects_inline_qos))
}

fn emit_endpoint_head(
    b: &mut ParameterListBuilder<'_>,
    guid: Guid,
    participant_guid: Guid,
    topic_name: &str,
    type_name: &str,
) {
    b.param(pid::ENDPOINT_GUID, &guid.to_bytes());
    b.param(pid::PARTICIPANT_GUID, &participant_guid.to_bytes());
    b.param_with(pid::TOPIC_NAME, |o| put_string(o, topic_name));
    b.param_with(pid::TYPE_NAME, |o| put_string(o, type_name));
}

fn emit_endpoint_tail(
    b: &mut ParameterListBuilder<'_>,
    unicast: &[Locator],
    multicast: &[Locator],
    entity_name: &Option<String>,
    type_information: Option<&TypeInformation>,
) {
    if let Some(t) = type_information {
        // XCDR2 in the list's byte order (little-endian), no encapsulation header.
        b.param_with(pid::TYPE_INFORMATION, |o| {
            t.encode(&mut CdrWriter::new(o, Encoding::XCDR2_LE))
        });
    }
    for l in unicast {
        b.param_with(pid::UNICAST_LOCATOR, |o| put_locator(o, l));
    }
    for l in multicast {
        b.param_with(pid::MULTICAST_LOCATOR, |o| put_locator(o, l));
    }
    if let Some(n) = entity_name {
        b.param_with(pid::ENTITY_NAME, |o| put_string(o, n));
    }
}
