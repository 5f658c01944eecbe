//! Parameter values: CDR reading/writing of single parameter values and of the QoS policies.
//!
//! Values are read relative to the start of their parameter, which is 4-aligned relative to the
//! CDR stream, so 4-byte alignment within a value is computed from the value start.

use std::time::Duration;

use super::DiscoveryDecodeError as E;
use crate::qos::*;
use crate::types::{locator_kind, DurationT, Guid, Locator};
use crate::wire::pid;

/// At most this many locators of one kind are kept per announcement; further ones are ignored.
pub const MAX_LOCATORS: usize = 64;
/// At most this many partition names are accepted.
pub const MAX_PARTITIONS: usize = 256;
/// At most this many data representation ids are accepted.
pub const MAX_DATA_REPRESENTATIONS: usize = 16;

/// A bounds-checked reader over one parameter value. Every failure is
/// `InvalidParameter(pid)`.
pub(crate) struct Value<'a> {
    buf: &'a [u8],
    pos: usize,
    le: bool,
    pid: u16,
}

impl<'a> Value<'a> {
    pub(crate) fn new(buf: &'a [u8], le: bool, pid: u16) -> Self {
        Value {
            buf,
            pos: 0,
            le,
            pid,
        }
    }

    pub(crate) fn invalid(&self) -> E {
        E::InvalidParameter(self.pid)
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn align(&mut self, n: usize) {
        self.pos = self.pos.next_multiple_of(n);
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], E> {
        let end = self.pos.checked_add(n).ok_or(self.invalid())?;
        let b = self.buf.get(self.pos..end).ok_or(self.invalid())?;
        self.pos = end;
        Ok(b)
    }

    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], E> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, E> {
        Ok(self.bytes(1)?[0])
    }

    pub(crate) fn bool(&mut self) -> Result<bool, E> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(self.invalid()),
        }
    }

    pub(crate) fn u16(&mut self) -> Result<u16, E> {
        self.align(2);
        let a = self.array::<2>()?;
        Ok(if self.le {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        })
    }

    pub(crate) fn i16(&mut self) -> Result<i16, E> {
        Ok(self.u16()? as i16)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, E> {
        self.align(4);
        let a = self.array::<4>()?;
        Ok(if self.le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    }

    pub(crate) fn i32(&mut self) -> Result<i32, E> {
        Ok(self.u32()? as i32)
    }

    pub(crate) fn guid(&mut self) -> Result<Guid, E> {
        Ok(Guid::from_bytes(self.array::<16>()?))
    }

    pub(crate) fn duration(&mut self) -> Result<Duration, E> {
        let seconds = self.i32()?;
        let fraction = self.u32()?;
        duration_from_wire(DurationT { seconds, fraction }).ok_or(self.invalid())
    }

    /// A CDR string: u32 length including the terminating NUL, the bytes, the NUL. A length of
    /// zero is accepted as the empty string. Embedded NULs and invalid UTF-8 are rejected.
    pub(crate) fn string(&mut self) -> Result<String, E> {
        let len = self.u32()? as usize;
        if len == 0 {
            return Ok(String::new());
        }
        if len > self.remaining() {
            return Err(self.invalid());
        }
        let b = self.bytes(len)?;
        let (nul, text) = b.split_last().ok_or(self.invalid())?;
        if *nul != 0 || text.contains(&0) {
            return Err(self.invalid());
        }
        std::str::from_utf8(text)
            .map(str::to_owned)
            .map_err(|_| self.invalid())
    }

    /// A `sequence<octet>`.
    pub(crate) fn octets(&mut self) -> Result<Vec<u8>, E> {
        let len = self.u32()? as usize;
        if len > self.remaining() {
            return Err(self.invalid());
        }
        Ok(self.bytes(len)?.to_vec())
    }

    /// A locator; `None` for kinds other than UDPv4/UDPv6 (e.g. Fast DDS shared memory).
    pub(crate) fn locator(&mut self) -> Result<Option<Locator>, E> {
        let kind = self.i32()?;
        let port = self.u32()?;
        let address = self.array::<16>()?;
        // Every valid kind is kept (shared memory, TCP, vendor kinds): whether one of our
        // transports reaches it is the runtime's decision, and a relay may need it intact.
        Ok(match kind {
            locator_kind::INVALID | locator_kind::RESERVED => None,
            _ => Some(Locator {
                kind,
                port,
                address,
            }),
        })
    }
}

// ------------------------------------------------------------------ writing (little-endian)

pub(crate) fn align4(out: &mut Vec<u8>, start: usize) {
    while (out.len() - start) % 4 != 0 {
        out.push(0);
    }
}

pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub(crate) fn put_duration(out: &mut Vec<u8>, d: Duration) {
    let w = duration_to_wire(d);
    put_i32(out, w.seconds);
    put_u32(out, w.fraction);
}

/// Writes a CDR string; the caller's value must start 4-aligned (as every parameter value does).
pub(crate) fn put_string(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len() as u32 + 1);
    out.extend_from_slice(s.as_bytes());
    out.push(0);
}

pub(crate) fn put_octets(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}

pub(crate) fn put_locator(out: &mut Vec<u8>, l: &Locator) {
    put_i32(out, l.kind);
    put_u32(out, l.port);
    out.extend_from_slice(&l.address);
}

fn limit_to_wire(l: Option<u32>) -> i32 {
    match l {
        None => -1,
        Some(v) => v.min(i32::MAX as u32) as i32,
    }
}

fn limit_from_wire(v: &Value<'_>, x: i32) -> Result<Option<u32>, E> {
    match x {
        -1 => Ok(None),
        1.. => Ok(Some(x as u32)),
        _ => Err(v.invalid()),
    }
}

fn history_to_wire(h: History) -> (u32, i32) {
    match h {
        History::KeepLast(d) => (0, d.min(i32::MAX as u32) as i32),
        History::KeepAll => (1, 0),
    }
}

fn history_from_wire(v: &Value<'_>, kind: u32, depth: i32) -> Result<History, E> {
    match kind {
        0 if depth >= 1 => Ok(History::KeepLast(depth as u32)),
        1 => Ok(History::KeepAll),
        _ => Err(v.invalid()),
    }
}

// ------------------------------------------------------------------ QoS parameters

/// QoS policies found in a parameter list; `None` = omitted (the receiver fills the default).
#[derive(Default, Debug)]
pub(crate) struct QosParams {
    durability: Option<Durability>,
    durability_service: Option<DurabilityService>,
    presentation: Option<Presentation>,
    deadline: Option<Deadline>,
    latency_budget: Option<LatencyBudget>,
    ownership: Option<Ownership>,
    ownership_strength: Option<OwnershipStrength>,
    liveliness: Option<Liveliness>,
    reliability: Option<Reliability>,
    lifespan: Option<Lifespan>,
    destination_order: Option<DestinationOrder>,
    history: Option<History>,
    resource_limits: Option<ResourceLimits>,
    transport_priority: Option<TransportPriority>,
    partition: Option<Partition>,
    user_data: Option<UserData>,
    topic_data: Option<TopicData>,
    group_data: Option<GroupData>,
    data_representation: Option<DataRepresentation>,
    time_based_filter: Option<TimeBasedFilter>,
    type_consistency: Option<TypeConsistencyEnforcement>,
    consistency: Option<(Consistency, Option<Locator>)>,
}

/// The first four bytes of a PID_TESSERA_CONSISTENCY value.
const CONSISTENCY_MAGIC: [u8; 4] = *b"TSRC";

impl QosParams {
    /// Parses `value` if `p` is a QoS parameter. Returns `Ok(false)` for other pids.
    pub(crate) fn parse(&mut self, p: u16, value: &[u8], le: bool) -> Result<bool, E> {
        let mut v = Value::new(value, le, p);
        match p {
            pid::DURABILITY => {
                self.durability = Some(match v.u32()? {
                    0 => Durability::Volatile,
                    1 => Durability::TransientLocal,
                    2 => Durability::Transient,
                    3 => Durability::Persistent,
                    _ => return Err(v.invalid()),
                })
            }
            pid::DURABILITY_SERVICE => {
                let service_cleanup_delay = v.duration()?;
                let (kind, depth) = (v.u32()?, v.i32()?);
                let history = history_from_wire(&v, kind, depth)?;
                let (a, b, c) = (v.i32()?, v.i32()?, v.i32()?);
                self.durability_service = Some(DurabilityService {
                    service_cleanup_delay,
                    history,
                    resource_limits: ResourceLimits {
                        max_samples: limit_from_wire(&v, a)?,
                        max_instances: limit_from_wire(&v, b)?,
                        max_samples_per_instance: limit_from_wire(&v, c)?,
                    },
                })
            }
            pid::PRESENTATION => {
                let access_scope = match v.u32()? {
                    0 => PresentationAccessScope::Instance,
                    1 => PresentationAccessScope::Topic,
                    2 => PresentationAccessScope::Group,
                    _ => return Err(v.invalid()),
                };
                self.presentation = Some(Presentation {
                    access_scope,
                    coherent_access: v.bool()?,
                    ordered_access: v.bool()?,
                })
            }
            pid::DEADLINE => {
                self.deadline = Some(Deadline {
                    period: v.duration()?,
                })
            }
            pid::LATENCY_BUDGET => {
                self.latency_budget = Some(LatencyBudget {
                    duration: v.duration()?,
                })
            }
            pid::OWNERSHIP => {
                self.ownership = Some(match v.u32()? {
                    0 => Ownership::Shared,
                    1 => Ownership::Exclusive,
                    _ => return Err(v.invalid()),
                })
            }
            pid::OWNERSHIP_STRENGTH => self.ownership_strength = Some(OwnershipStrength(v.i32()?)),
            pid::LIVELINESS => {
                let kind = match v.u32()? {
                    0 => LivelinessKind::Automatic,
                    1 => LivelinessKind::ManualByParticipant,
                    2 => LivelinessKind::ManualByTopic,
                    _ => return Err(v.invalid()),
                };
                self.liveliness = Some(Liveliness {
                    kind,
                    lease_duration: v.duration()?,
                })
            }
            pid::RELIABILITY => {
                // RTPS encodes BEST_EFFORT as 1 and RELIABLE as 2.
                let kind = match v.u32()? {
                    1 => ReliabilityKind::BestEffort,
                    2 => ReliabilityKind::Reliable,
                    _ => return Err(v.invalid()),
                };
                self.reliability = Some(Reliability {
                    kind,
                    max_blocking_time: v.duration()?,
                })
            }
            pid::LIFESPAN => {
                self.lifespan = Some(Lifespan {
                    duration: v.duration()?,
                })
            }
            pid::DESTINATION_ORDER => {
                self.destination_order = Some(match v.u32()? {
                    0 => DestinationOrder::ByReceptionTimestamp,
                    1 => DestinationOrder::BySourceTimestamp,
                    _ => return Err(v.invalid()),
                })
            }
            pid::HISTORY => {
                let (kind, depth) = (v.u32()?, v.i32()?);
                self.history = Some(history_from_wire(&v, kind, depth)?)
            }
            pid::RESOURCE_LIMITS => {
                let (a, b, c) = (v.i32()?, v.i32()?, v.i32()?);
                self.resource_limits = Some(ResourceLimits {
                    max_samples: limit_from_wire(&v, a)?,
                    max_instances: limit_from_wire(&v, b)?,
                    max_samples_per_instance: limit_from_wire(&v, c)?,
                })
            }
            pid::TRANSPORT_PRIORITY => self.transport_priority = Some(TransportPriority(v.i32()?)),
            pid::PARTITION => {
                let n = v.u32()? as usize;
                if n > MAX_PARTITIONS {
                    return Err(E::TooLarge(p));
                }
                let mut names = Vec::with_capacity(n);
                for _ in 0..n {
                    names.push(v.string()?);
                }
                self.partition = Some(Partition(names))
            }
            pid::USER_DATA => self.user_data = Some(UserData(v.octets()?)),
            pid::TOPIC_DATA => self.topic_data = Some(TopicData(v.octets()?)),
            pid::GROUP_DATA => self.group_data = Some(GroupData(v.octets()?)),
            pid::DATA_REPRESENTATION => {
                let n = v.u32()? as usize;
                if n > MAX_DATA_REPRESENTATIONS {
                    return Err(E::TooLarge(p));
                }
                let mut ids = Vec::with_capacity(n);
                for _ in 0..n {
                    ids.push(v.i16()?);
                }
                self.data_representation = Some(DataRepresentation(ids))
            }
            pid::TIME_BASED_FILTER => {
                self.time_based_filter = Some(TimeBasedFilter {
                    minimum_separation: v.duration()?,
                })
            }
            pid::TYPE_CONSISTENCY_ENFORCEMENT => {
                let kind = match v.u16()? {
                    0 => TypeConsistencyKind::DisallowTypeCoercion,
                    1 => TypeConsistencyKind::AllowTypeCoercion,
                    _ => return Err(v.invalid()),
                };
                // The boolean members were added in later XTypes revisions; absent ones keep
                // their defaults.
                let mut t = TypeConsistencyEnforcement {
                    kind,
                    ..Default::default()
                };
                let mut flags = [
                    &mut t.ignore_sequence_bounds,
                    &mut t.ignore_string_bounds,
                    &mut t.ignore_member_names,
                    &mut t.prevent_type_widening,
                    &mut t.force_type_validation,
                ];
                for f in flags.iter_mut() {
                    if v.remaining() == 0 {
                        break;
                    }
                    **f = v.u8()? != 0;
                }
                self.type_consistency = Some(t)
            }
            pid::TESSERA_CONSISTENCY => {
                // Another vendor's parameter under the same pid lacks the magic: ignored.
                if v.array::<4>()? != CONSISTENCY_MAGIC {
                    return Ok(true);
                }
                let c = match v.u32()? {
                    0 => Consistency::Eventual,
                    1 => Consistency::Atomic,
                    _ => return Err(v.invalid()),
                };
                let endpoint = if v.remaining() > 0 {
                    v.locator()?
                } else {
                    None
                };
                self.consistency = Some((c, endpoint))
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The writer-side QoS, with spec defaults for what was omitted (reliability: reliable,
    /// 100 ms).
    pub(crate) fn into_writer(self) -> WriterSideQos {
        let d = WriterSideQos::default();
        let (consistency, consensus_endpoint) = self.consistency.unwrap_or((d.consistency, None));
        WriterSideQos {
            consistency,
            consensus_endpoint,
            durability: self.durability.unwrap_or(d.durability),
            durability_service: self.durability_service.unwrap_or(d.durability_service),
            presentation: self.presentation.unwrap_or(d.presentation),
            deadline: self.deadline.unwrap_or(d.deadline),
            latency_budget: self.latency_budget.unwrap_or(d.latency_budget),
            ownership: self.ownership.unwrap_or(d.ownership),
            ownership_strength: self.ownership_strength.unwrap_or(d.ownership_strength),
            liveliness: self.liveliness.unwrap_or(d.liveliness),
            reliability: self.reliability.unwrap_or(d.reliability),
            lifespan: self.lifespan.unwrap_or(d.lifespan),
            destination_order: self.destination_order.unwrap_or(d.destination_order),
            history: self.history.unwrap_or(d.history),
            resource_limits: self.resource_limits.unwrap_or(d.resource_limits),
            transport_priority: self.transport_priority.unwrap_or(d.transport_priority),
            partition: self.partition.unwrap_or(d.partition),
            user_data: self.user_data.unwrap_or(d.user_data),
            topic_data: self.topic_data.unwrap_or(d.topic_data),
            group_data: self.group_data.unwrap_or(d.group_data),
            data_representation: self.data_representation.unwrap_or(d.data_representation),
        }
    }

    /// The reader-side QoS, with spec defaults for what was omitted (reliability: best effort).
    pub(crate) fn into_reader(self) -> ReaderSideQos {
        let d = ReaderSideQos::default();
        let (consistency, consensus_endpoint) = self.consistency.unwrap_or((d.consistency, None));
        ReaderSideQos {
            consistency,
            consensus_endpoint,
            durability: self.durability.unwrap_or(d.durability),
            deadline: self.deadline.unwrap_or(d.deadline),
            latency_budget: self.latency_budget.unwrap_or(d.latency_budget),
            ownership: self.ownership.unwrap_or(d.ownership),
            liveliness: self.liveliness.unwrap_or(d.liveliness),
            reliability: self.reliability.unwrap_or(d.reliability),
            destination_order: self.destination_order.unwrap_or(d.destination_order),
            history: self.history.unwrap_or(d.history),
            resource_limits: self.resource_limits.unwrap_or(d.resource_limits),
            time_based_filter: self.time_based_filter.unwrap_or(d.time_based_filter),
            presentation: self.presentation.unwrap_or(d.presentation),
            partition: self.partition.unwrap_or(d.partition),
            user_data: self.user_data.unwrap_or(d.user_data),
            topic_data: self.topic_data.unwrap_or(d.topic_data),
            group_data: self.group_data.unwrap_or(d.group_data),
            data_representation: self.data_representation.unwrap_or(d.data_representation),
            type_consistency: self.type_consistency.unwrap_or(d.type_consistency),
        }
    }
}

/// Parameter writer callback type used by the encoders.
pub(crate) type Emit<'a, 'b> = &'a mut crate::wire::ParameterListBuilder<'b>;

fn emit_reliability(b: Emit<'_, '_>, r: Reliability) {
    b.param_with(pid::RELIABILITY, |o| {
        put_u32(
            o,
            match r.kind {
                ReliabilityKind::BestEffort => 1,
                ReliabilityKind::Reliable => 2,
            },
        );
        put_duration(o, r.max_blocking_time);
    });
}

fn emit_durability(b: Emit<'_, '_>, d: Durability) {
    b.param_with(pid::DURABILITY, |o| put_u32(o, d as u32));
}

fn emit_u32(b: Emit<'_, '_>, p: u16, v: u32) {
    b.param_with(p, |o| put_u32(o, v));
}

fn emit_duration(b: Emit<'_, '_>, p: u16, d: Duration) {
    b.param_with(p, |o| put_duration(o, d));
}

fn emit_octets(b: Emit<'_, '_>, p: u16, v: &[u8]) {
    if !v.is_empty() {
        b.param_with(p, |o| put_octets(o, v));
    }
}

fn emit_history(b: Emit<'_, '_>, h: History) {
    let (k, d) = history_to_wire(h);
    b.param_with(pid::HISTORY, |o| {
        put_u32(o, k);
        put_i32(o, d);
    });
}

fn emit_limits(o: &mut Vec<u8>, r: ResourceLimits) {
    put_i32(o, limit_to_wire(r.max_samples));
    put_i32(o, limit_to_wire(r.max_instances));
    put_i32(o, limit_to_wire(r.max_samples_per_instance));
}

fn emit_partition(b: Emit<'_, '_>, p: &Partition) {
    if p.0.is_empty() {
        return;
    }
    b.param_with(pid::PARTITION, |o| {
        let start = o.len();
        put_u32(o, p.0.len() as u32);
        for name in &p.0 {
            align4(o, start);
            put_string(o, name);
        }
    });
}

fn emit_data_representation(b: Emit<'_, '_>, d: &DataRepresentation) {
    b.param_with(pid::DATA_REPRESENTATION, |o| {
        put_u32(o, d.0.len() as u32);
        for id in &d.0 {
            o.extend_from_slice(&id.to_le_bytes());
        }
    });
}

fn emit_presentation(b: Emit<'_, '_>, p: Presentation) {
    if p != Presentation::default() {
        b.param_with(pid::PRESENTATION, |o| {
            put_u32(o, p.access_scope as u32);
            o.push(p.coherent_access as u8);
            o.push(p.ordered_access as u8);
        });
    }
}

/// Emits the policies shared by both sides. Reliability, durability and data representation are
/// always sent (their defaults differ between sides or implementations); the rest only when
/// they differ from the spec default, as Cyclone does.
#[allow(clippy::too_many_arguments)]
fn emit_common(
    b: Emit<'_, '_>,
    reliability: Reliability,
    durability: Durability,
    deadline: Deadline,
    latency_budget: LatencyBudget,
    ownership: Ownership,
    liveliness: Liveliness,
    destination_order: DestinationOrder,
    history: History,
    resource_limits: ResourceLimits,
    presentation: Presentation,
) {
    emit_reliability(b, reliability);
    emit_durability(b, durability);
    if deadline != Deadline::default() {
        emit_duration(b, pid::DEADLINE, deadline.period);
    }
    if latency_budget != LatencyBudget::default() {
        emit_duration(b, pid::LATENCY_BUDGET, latency_budget.duration);
    }
    if ownership != Ownership::default() {
        emit_u32(b, pid::OWNERSHIP, ownership as u32);
    }
    if liveliness != Liveliness::default() {
        b.param_with(pid::LIVELINESS, |o| {
            put_u32(o, liveliness.kind as u32);
            put_duration(o, liveliness.lease_duration);
        });
    }
    if destination_order != DestinationOrder::default() {
        emit_u32(b, pid::DESTINATION_ORDER, destination_order as u32);
    }
    if history != History::default() {
        emit_history(b, history);
    }
    if resource_limits != ResourceLimits::default() {
        b.param_with(pid::RESOURCE_LIMITS, |o| emit_limits(o, resource_limits));
    }
    emit_presentation(b, presentation);
}

/// Emits a writer's QoS parameters.
pub(crate) fn emit_writer_qos(b: Emit<'_, '_>, q: &WriterSideQos) {
    emit_common(
        b,
        q.reliability,
        q.durability,
        q.deadline,
        q.latency_budget,
        q.ownership,
        q.liveliness,
        q.destination_order,
        q.history,
        q.resource_limits,
        q.presentation,
    );
    if q.durability_service != DurabilityService::default() {
        let ds = q.durability_service;
        b.param_with(pid::DURABILITY_SERVICE, |o| {
            put_duration(o, ds.service_cleanup_delay);
            let (k, d) = history_to_wire(ds.history);
            put_u32(o, k);
            put_i32(o, d);
            emit_limits(o, ds.resource_limits);
        });
    }
    if q.ownership_strength != OwnershipStrength::default() {
        b.param_with(pid::OWNERSHIP_STRENGTH, |o| {
            put_i32(o, q.ownership_strength.0)
        });
    }
    if q.lifespan != Lifespan::default() {
        emit_duration(b, pid::LIFESPAN, q.lifespan.duration);
    }
    if q.transport_priority != TransportPriority::default() {
        b.param_with(pid::TRANSPORT_PRIORITY, |o| {
            put_i32(o, q.transport_priority.0)
        });
    }
    emit_partition(b, &q.partition);
    emit_octets(b, pid::USER_DATA, &q.user_data.0);
    emit_octets(b, pid::TOPIC_DATA, &q.topic_data.0);
    emit_octets(b, pid::GROUP_DATA, &q.group_data.0);
    emit_data_representation(b, &q.data_representation);
    emit_consistency(b, q.consistency, q.consensus_endpoint);
}

/// Emits PID_TESSERA_CONSISTENCY unless the endpoint is plain EVENTUAL.
fn emit_consistency(b: Emit<'_, '_>, c: Consistency, endpoint: Option<Locator>) {
    if c == Consistency::Eventual && endpoint.is_none() {
        return;
    }
    b.param_with(pid::TESSERA_CONSISTENCY, |o| {
        o.extend_from_slice(&CONSISTENCY_MAGIC);
        put_u32(o, c as u32);
        if let Some(l) = endpoint {
            put_locator(o, &l);
        }
    });
}

/// Emits a reader's QoS parameters.
pub(crate) fn emit_reader_qos(b: Emit<'_, '_>, q: &ReaderSideQos) {
    emit_common(
        b,
        q.reliability,
        q.durability,
        q.deadline,
        q.latency_budget,
        q.ownership,
        q.liveliness,
        q.destination_order,
        q.history,
        q.resource_limits,
        q.presentation,
    );
    if q.time_based_filter != TimeBasedFilter::default() {
        emit_duration(
            b,
            pid::TIME_BASED_FILTER,
            q.time_based_filter.minimum_separation,
        );
    }
    emit_partition(b, &q.partition);
    emit_octets(b, pid::USER_DATA, &q.user_data.0);
    emit_octets(b, pid::TOPIC_DATA, &q.topic_data.0);
    emit_octets(b, pid::GROUP_DATA, &q.group_data.0);
    emit_data_representation(b, &q.data_representation);
    emit_consistency(b, q.consistency, q.consensus_endpoint);
    if q.type_consistency != TypeConsistencyEnforcement::default() {
        let t = q.type_consistency;
        b.param_with(pid::TYPE_CONSISTENCY_ENFORCEMENT, |o| {
            let k: u16 = match t.kind {
                TypeConsistencyKind::DisallowTypeCoercion => 0,
                TypeConsistencyKind::AllowTypeCoercion => 1,
            };
            o.extend_from_slice(&k.to_le_bytes());
            o.extend_from_slice(&[
                t.ignore_sequence_bounds as u8,
                t.ignore_string_bounds as u8,
                t.ignore_member_names as u8,
                t.prevent_type_widening as u8,
                t.force_type_validation as u8,
            ]);
        });
    }
}
