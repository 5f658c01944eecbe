//! Dynamic types at run time: topics, readers and writers of a type known only from its
//! TypeObjects (or from a [`TypeDesc`](tessera_rtps::xtypes::TypeDesc) built by hand), with
//! samples as [`DynamicValue`]s.
//!
//! ```no_run
//! # use std::time::Duration;
//! # use tessera::{DomainParticipant, qos::{TopicQos, DataReaderQos}};
//! # fn main() -> tessera::Result<()> {
//! let p = DomainParticipant::new(0)?;
//! // Waits for a remote endpoint on the topic and fetches its type over TypeLookup.
//! let ty = p.discover_type("Square", Duration::from_secs(5))?;
//! let topic = p.create_dynamic_topic("Square", ty.clone(), TopicQos::default())?;
//! let reader = p
//!     .create_subscriber(Default::default())?
//!     .create_dynamic_datareader(&topic, DataReaderQos::default())?;
//! for s in reader.take(16)? {
//!     if let Some(v) = s.data {
//!         println!("{}", v.to_text(&ty));
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! Underneath are the type-erased pieces other services build on: [`DynamicTypeSupport`] (a
//! [`TypeSupport`] from a [`DynamicType`]), [`UntypedTopic`], [`UntypedDataWriter`] (samples as
//! bytes in) and [`UntypedDataReader`] (bytes out).

use crate::error::{Error, Result};
use crate::history::{InstanceHandle, Sample, StateMasks};
use crate::participant::DomainParticipant;
use crate::publication::{Publisher, UntypedDataWriter};
use crate::qos::{DataReaderQos, DataWriterQos, TopicQos};
use crate::reader::UntypedDataReader;
use crate::sample::{SerializedPayload, TypeSupport};
use crate::subscription::Subscriber;
use crate::topic::{TopicInner, UntypedTopic};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tessera_rtps::cdr::CdrError;
use tessera_rtps::xtypes::{DynamicType, DynamicTypeError, DynamicValue, TypeIdentifier};

/// [`TypeSupport`] of a [`DynamicType`]: key hashes by walking the sample with the dynamic
/// decoder (slower than a derived type's, which builds only the key), the type's TypeObjects
/// announced as they were received.
#[derive(Debug, Clone)]
pub struct DynamicTypeSupport {
    ty: Arc<DynamicType>,
}

impl DynamicTypeSupport {
    /// The support of `ty`.
    pub fn new(ty: Arc<DynamicType>) -> Self {
        DynamicTypeSupport { ty }
    }

    /// The type.
    pub fn dynamic_type(&self) -> &Arc<DynamicType> {
        &self.ty
    }
}

impl TypeSupport for DynamicTypeSupport {
    fn type_name(&self) -> &str {
        self.ty.name()
    }

    fn is_keyed(&self) -> bool {
        self.ty.is_keyed()
    }

    fn key_hash_of_sample(&self, payload: &[u8]) -> std::result::Result<[u8; 16], CdrError> {
        self.ty.key_hash_from_sample_payload(payload)
    }

    fn key_hash_of_key(&self, payload: &[u8]) -> std::result::Result<[u8; 16], CdrError> {
        self.ty.key_hash_from_key_payload(payload)
    }

    fn type_bundle(&self) -> Option<tessera_rtps::xtypes::TypeBundle> {
        Some(self.ty.type_bundle().clone())
    }

    fn key_payload_of_sample(&self, payload: &[u8]) -> Option<Vec<u8>> {
        self.ty.key_payload_from_sample_payload(payload).ok()
    }
}

/// A topic of a dynamic type. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DynamicTopic {
    topic: UntypedTopic,
    ty: Arc<DynamicType>,
}

impl DynamicTopic {
    /// The topic name.
    pub fn name(&self) -> &str {
        self.topic.name()
    }

    /// The registered type name.
    pub fn type_name(&self) -> &str {
        self.topic.type_name()
    }

    /// The topic QoS.
    pub fn qos(&self) -> &TopicQos {
        self.topic.qos()
    }

    /// The type.
    pub fn dynamic_type(&self) -> &Arc<DynamicType> {
        &self.ty
    }

    /// The same topic for writers and readers of serialized samples.
    pub fn untyped(&self) -> &UntypedTopic {
        &self.topic
    }
}

/// How long [`DomainParticipant::discover_type`] polls discovery between looks.
const DISCOVERY_POLL: Duration = Duration::from_millis(20);

impl DomainParticipant {
    /// Creates a topic of the dynamic type `ty`, registered under `ty.name()`: its endpoints
    /// announce the type's TypeInformation and the TypeLookup service serves its TypeObjects.
    pub fn create_dynamic_topic(
        &self,
        name: &str,
        ty: Arc<DynamicType>,
        qos: TopicQos,
    ) -> Result<DynamicTopic> {
        let support = Arc::new(DynamicTypeSupport::new(ty.clone()));
        Ok(DynamicTopic {
            topic: self.create_untyped_topic(name, support, qos)?,
            ty,
        })
    }

    /// Creates a topic of the type `support` describes, registered under its type name; a
    /// support with a [`TypeSupport::type_bundle`] is announced with its TypeInformation and
    /// served over TypeLookup. For services that handle samples of types they do not know
    /// statically (a durability service, bridges).
    pub fn create_untyped_topic(
        &self,
        name: &str,
        support: Arc<dyn TypeSupport>,
        qos: TopicQos,
    ) -> Result<UntypedTopic> {
        if name.is_empty() || name.len() > 256 {
            return Err(Error::BadParameter(
                "topic name must be 1..=256 bytes".into(),
            ));
        }
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        if support.type_bundle().is_some() {
            let s = support.clone();
            self.shared()
                .discovery
                .lock()
                .register_type(support.type_name(), move || s.type_bundle());
        }
        Ok(UntypedTopic {
            inner: Arc::new(TopicInner {
                name: name.to_owned(),
                type_name: support.type_name().to_owned(),
                qos,
                participant: self.clone(),
            }),
            support,
        })
    }

    /// The type of topic `topic_name` as a remote writer or reader announces it: waits (up to
    /// `timeout`) for such an endpoint in discovery (writers first), fetches its TypeObjects
    /// from its participant over TypeLookup and builds the [`DynamicType`], named as the
    /// endpoint announced it. The complete objects are asked for (member and type names); the
    /// minimal ones are accepted when half of `timeout` passed without the complete ones.
    ///
    /// Errors: [`Error::Timeout`] when no endpoint was found or its objects did not arrive;
    /// [`Error::Unsupported`] when the type uses what dynamic types do not handle (unions,
    /// maps, ...; the message names it), when the endpoints found announce no type
    /// information, or when this participant has type information off (`ParticipantConfig`).
    pub fn discover_type(&self, topic_name: &str, timeout: Duration) -> Result<Arc<DynamicType>> {
        let shared = self.shared();
        let start = Instant::now();
        let deadline = crate::publication::far_deadline(start, timeout);
        let half = start + (deadline - start) / 2;
        let mut refusal: Option<DynamicTypeError> = None;
        let mut without_information = false;
        loop {
            let now = Instant::now();
            let candidates = shared.discovery.lock().remote_types_on_topic(topic_name);
            for (type_name, info) in &candidates {
                let Some(info) = info else {
                    without_information = true;
                    continue;
                };
                let mut wanted: Vec<TypeIdentifier> = Vec::new();
                let kinds = [(&info.complete, true), (&info.minimal, now >= half)];
                for (with_deps, accept) in kinds {
                    let top = &with_deps.typeid_with_size.type_id;
                    if !top.is_hash() {
                        continue;
                    }
                    let built = {
                        let d = shared.discovery.lock();
                        DynamicType::from_type_objects(top, &|id| d.resolve_type(id))
                    };
                    match built {
                        Ok(t) if accept => return Ok(Arc::new(t.with_name(type_name.clone()))),
                        Ok(_) => {}
                        Err(DynamicTypeError::Unresolved(missing)) => {
                            if let Some(e) = shared.discovery.lock().unsupported_type(&missing) {
                                return Err(Error::Unsupported(format!(
                                    "type {type_name} of {topic_name}: {e}"
                                )));
                            }
                            wanted.push(top.clone());
                            wanted.extend(
                                with_deps
                                    .dependent_typeids
                                    .iter()
                                    .map(|d| d.type_id.clone()),
                            );
                            wanted.push(missing);
                        }
                        Err(e) => refusal = Some(e),
                    }
                }
                if !wanted.is_empty() && !shared.discovery.lock().request_types(shared, &wanted) {
                    return Err(Error::Unsupported(
                        "type discovery needs type information (TypeLookup) on".into(),
                    ));
                }
            }
            if now >= deadline {
                return Err(match refusal {
                    Some(e) => Error::Unsupported(format!("type of {topic_name}: {e}")),
                    None if without_information => Error::Unsupported(format!(
                        "the endpoints of {topic_name} announce no type information"
                    )),
                    None => Error::Timeout,
                });
            }
            std::thread::sleep(DISCOVERY_POLL.min(deadline - now));
        }
    }
}

impl Subscriber {
    /// Creates a reader of `topic` whose samples come out as [`DynamicValue`]s.
    pub fn create_dynamic_datareader(
        &self,
        topic: &DynamicTopic,
        qos: DataReaderQos,
    ) -> Result<DynamicDataReader> {
        let raw = self.create_untyped_datareader_for(topic.untyped(), qos)?;
        Ok(DynamicDataReader {
            raw,
            ty: topic.ty.clone(),
        })
    }

    /// Creates a reader of `topic` that hands out samples serialized.
    pub fn create_untyped_datareader_for(
        &self,
        topic: &UntypedTopic,
        qos: DataReaderQos,
    ) -> Result<UntypedDataReader> {
        self.create_reader(&topic.inner, topic.support.clone(), qos, None, None)
    }
}

impl Publisher {
    /// Creates a writer of `topic` that takes samples as [`DynamicValue`]s.
    pub fn create_dynamic_datawriter(
        &self,
        topic: &DynamicTopic,
        qos: DataWriterQos,
    ) -> Result<DynamicDataWriter> {
        let raw = self.create_untyped_datawriter(topic.untyped(), qos)?;
        Ok(DynamicDataWriter {
            raw,
            ty: topic.ty.clone(),
        })
    }
}

/// A reader of a dynamic type: decodes samples into [`DynamicValue`]s at `read`/`take`; a
/// sample that does not decode is counted
/// ([`UntypedDataReader::undecodable_samples`]) and left out. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DynamicDataReader {
    raw: UntypedDataReader,
    ty: Arc<DynamicType>,
}

impl DynamicDataReader {
    /// The type.
    pub fn dynamic_type(&self) -> &Arc<DynamicType> {
        &self.ty
    }

    /// The same reader, untyped (statuses, conditions, QoS, serialized samples).
    pub fn untyped(&self) -> &UntypedDataReader {
        &self.raw
    }

    /// Takes up to `max` samples in any state.
    pub fn take(&self, max: usize) -> Result<Vec<Sample<DynamicValue>>> {
        self.take_with(max, StateMasks::ANY)
    }

    /// Reads up to `max` samples in any state, leaving them in the reader (marked READ).
    pub fn read(&self, max: usize) -> Result<Vec<Sample<DynamicValue>>> {
        self.read_with(max, StateMasks::ANY)
    }

    /// Takes samples whose states match `masks`.
    pub fn take_with(&self, max: usize, masks: StateMasks) -> Result<Vec<Sample<DynamicValue>>> {
        let s = self.raw.take_serialized(max, masks)?;
        Ok(self.decoded(s, true))
    }

    /// Reads samples whose states match `masks`.
    pub fn read_with(&self, max: usize, masks: StateMasks) -> Result<Vec<Sample<DynamicValue>>> {
        let s = self.raw.read_serialized(max, masks)?;
        Ok(self.decoded(s, false))
    }

    /// The handle of the instance of `value`'s key, if the reader knows it.
    pub fn lookup_instance(&self, value: &DynamicValue) -> Option<InstanceHandle> {
        let kh = self.ty.key_hash(value).ok()?;
        self.raw.lookup_instance_by_key_hash(&kh)
    }

    fn decoded(
        &self,
        src: Vec<Sample<SerializedPayload>>,
        recycle: bool,
    ) -> Vec<Sample<DynamicValue>> {
        let mut out = Vec::with_capacity(src.len());
        for Sample { data, info } in src {
            let data = match data {
                None => None,
                Some(p) => {
                    let v = self.ty.deserialize(p.as_bytes());
                    if recycle {
                        self.raw.recycle([p]);
                    }
                    match v {
                        Ok(v) => Some(v),
                        Err(e) => {
                            self.raw.ep.count_undecodable(&e);
                            continue;
                        }
                    }
                }
            };
            out.push(Sample { data, info });
        }
        out
    }
}

/// A writer of a dynamic type: encodes [`DynamicValue`]s in the encoding its
/// DATA_REPRESENTATION announces. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DynamicDataWriter {
    raw: UntypedDataWriter,
    ty: Arc<DynamicType>,
}

impl DynamicDataWriter {
    /// The type.
    pub fn dynamic_type(&self) -> &Arc<DynamicType> {
        &self.ty
    }

    /// The same writer, untyped (serialized samples, statuses, acknowledgments).
    pub fn untyped(&self) -> &UntypedDataWriter {
        &self.raw
    }

    fn encode(&self, value: &DynamicValue) -> Result<Vec<u8>> {
        self.ty
            .serialize(value, self.raw.encoding())
            .map_err(|e| Error::BadParameter(e.to_string()))
    }

    fn encode_key(&self, value: &DynamicValue) -> Result<Vec<u8>> {
        self.ty
            .serialize_key(value, self.raw.encoding())
            .map_err(|e| Error::BadParameter(e.to_string()))
    }

    /// Publishes a sample stamped now; a value that does not fit the type is refused with
    /// [`Error::BadParameter`] (naming where).
    pub fn write(&self, value: &DynamicValue) -> Result<()> {
        self.raw.write_serialized(&self.encode(value)?)
    }

    /// Publishes a sample with an explicit source timestamp (ns since the Unix epoch).
    pub fn write_with_timestamp(&self, value: &DynamicValue, source_ns: i64) -> Result<()> {
        self.raw
            .write_serialized_with_timestamp(&self.encode(value)?, source_ns)
    }

    /// Disposes the instance of `value`'s key.
    pub fn dispose(&self, value: &DynamicValue) -> Result<()> {
        self.raw.dispose_serialized(&self.encode_key(value)?)
    }

    /// Unregisters the instance of `value`'s key.
    pub fn unregister_instance(&self, value: &DynamicValue) -> Result<()> {
        self.raw.unregister_serialized(&self.encode_key(value)?)
    }

    /// Registers the instance of `value`'s key and returns its handle.
    pub fn register_instance(&self, value: &DynamicValue) -> Result<InstanceHandle> {
        self.raw.register_serialized(&self.encode(value)?)
    }
}
