//! QoS profiles from XML: the OMG DDS-XML format (DDS Consolidated XML Syntax 1.0), as RTI
//! Connext's `USER_QOS_PROFILES.xml` and Cyclone DDS write it, and Fast DDS 2.x's
//! `<profiles>` files.
//!
//! ```xml
//! <dds xmlns="http://www.omg.org/spec/DDS-XML">
//!   <qos_library name="Lib">
//!     <qos_profile name="Reliable" is_default_qos="true">
//!       <datawriter_qos>
//!         <reliability><kind>RELIABLE_RELIABILITY_QOS</kind>
//!           <max_blocking_time><sec>1</sec><nanosec>0</nanosec></max_blocking_time>
//!         </reliability>
//!         <history><kind>KEEP_ALL_HISTORY_QOS</kind></history>
//!       </datawriter_qos>
//!       <datareader_qos topic_filter="Sensor*">
//!         <deadline><period><sec>DURATION_INFINITY</sec></period></deadline>
//!       </datareader_qos>
//!     </qos_profile>
//!     <qos_profile name="Telemetry" base_name="Reliable"> ... </qos_profile>
//!   </qos_library>
//! </dds>
//! ```
//!
//! A [`QosProvider`] holds the profiles of one or more documents; `provider.datawriter_qos(
//! "Lib::Telemetry")` gives the QoS a profile makes: the spec defaults, changed by each
//! profile of its `base_name` chain from the root down (`base_name` may name a profile of
//! another library, `other::profile`; a name without `::` is in the same library; cycles are
//! refused at load). Only the policies, and within a policy only the fields, that a profile
//! names change: `<reliability><max_blocking_time>` alone keeps the inherited kind. An entity
//! element may carry its own `base_name`, and a `topic_filter` (an fnmatch pattern, or a
//! comma-separated list of them): `datawriter_qos_for_topic(profile, topic)` takes, as RTI
//! does, the first element (in document order) whose filter takes the topic name, and the
//! element without a filter only when none does; lookups without a topic see only the
//! element without a filter.
//!
//! `is_default_qos="true"` marks the profile [`QosProvider::default_profile`] names. Unlike
//! RTI, Tessera does not apply it behind the back of entities created with
//! `Default::default()` QoS (a QoS value here is a value, not a sentinel): pass
//! `provider.default_profile()` to the `*_with_profile` helpers to use it. The QoS a profile
//! gives is checked for consistency when an entity is created with it
//! (`Error::InconsistentPolicy`), as any QoS is.
//!
//! # What is read
//! Every standard policy of the six entity QoS elements (`domain_participant_qos` — also
//! RTI's `participant_qos` and Cyclone's `domainparticipant_qos` —, `topic_qos`,
//! `publisher_qos`, `subscriber_qos`, `datawriter_qos`, `datareader_qos`), with the DDS-XML
//! spellings: durations as `<sec>`/`<nanosec>` (`DURATION_INFINITY`, `DURATION_INFINITE_SEC`,
//! `DURATION_INFINITE_NSEC`), limits with `LENGTH_UNLIMITED`, enumerators as
//! `RELIABLE_RELIABILITY_QOS` (also with RTI's `DDS_` prefix, or in Fast DDS's short form
//! `RELIABLE`), booleans `true`/`false`/`1`/`0`, partitions as `<name><element>`, and
//! USER/TOPIC/GROUP_DATA `<value>` as RTI's comma-separated octets (`1,2,0xff`) or as base64
//! (Cyclone's). Also DATA_REPRESENTATION (`<representation><value><element>XCDR2</element>`,
//! or Cyclone's `<data_representation><id>`) and TYPE_CONSISTENCY (`<type_consistency>`).
//!
//! **Tessera's extension**: the CONSISTENCY policy in topic, writer and reader QoS,
//! `<consistency><kind>ATOMIC_CONSISTENCY_QOS</kind></consistency>` (or
//! `EVENTUAL_CONSISTENCY_QOS`). Other vendors' schemas do not know this element.
//!
//! # What is ignored, with a warning
//! Elements that are not Tessera's (RTI's `<property>`, `<transport_builtin>`, `<protocol>`,
//! Fast DDS's `<publishMode>` and locator lists...), unknown attributes, and policies placed
//! where they do not apply (a `<partition>` in `<datawriter_qos>`) are skipped; each yields
//! one [`XmlWarning`] naming the element and its position ([`QosProvider::warnings`]), also
//! logged with `tracing::warn!` when loaded. Non-QoS libraries of DDS-XML (types, domains,
//! applications) are skipped the same way. Bad values (an unknown enumerator, a negative
//! count) are errors: [`QosXmlError`] names the file, line, column and element.
//!
//! # Fast DDS 2.x
//! A `<profiles>` document (alone or inside `<dds>`) loads into the library `fastdds`:
//! `<participant profile_name="p">`, `<data_writer>`, `<data_reader>` and `<topic>` profiles
//! become `fastdds::p` (or just `p` when no other library has that name); a writer
//! profile's publisher-level policies (partition, presentation, group data) are its
//! publisher QoS, likewise for readers. `is_default_profile` is `is_default_qos`.
//!
//! # Where profiles come from
//! Explicitly ([`QosProvider::from_file`], [`QosProvider::from_str`], `load_*`), or from the
//! files named by the environment variable `TESSERA_QOS_PROFILES` (a `;`-separated list,
//! like RTI's `NDDS_QOS_PROFILES`), which [`QosProvider::from_env`] reads. The entity
//! helpers (`Publisher::create_datawriter_with_profile` and the like) use the participant's
//! provider: [`crate::ParticipantConfig::qos_profiles`], or when that is `None` the files of
//! `TESSERA_QOS_PROFILES`, read once per process at the first use.

mod dom;
mod entities;
mod error;
mod fastdds;
mod policies;
mod profiles;
mod values;

pub use error::{Location, QosXmlError, XmlWarning};

use profiles::{Kind, Profiles};
use std::path::Path;
use std::sync::{Arc, OnceLock};
use tessera_rtps::qos::{
    DataReaderQos, DataWriterQos, DomainParticipantQos, PublisherQos, SubscriberQos, TopicQos,
};

/// The environment variable naming the QoS profile files ([`QosProvider::from_env`]).
pub const ENV_QOS_PROFILES: &str = "TESSERA_QOS_PROFILES";

/// QoS profiles loaded from DDS-XML (or Fast DDS XML) documents. Cheap to share behind an
/// `Arc`; lookups do not change it.
#[derive(Debug, Clone, Default)]
pub struct QosProvider {
    profiles: Profiles,
    /// Warnings about the documents' structure (unknown libraries, attributes).
    structure_warnings: Vec<XmlWarning>,
    /// Warnings found applying the profiles' values (recomputed after each load).
    value_warnings: Vec<XmlWarning>,
}

impl std::str::FromStr for QosProvider {
    type Err = QosXmlError;

    fn from_str(xml: &str) -> Result<Self, QosXmlError> {
        QosProvider::from_str_named("<string>", xml)
    }
}

impl QosProvider {
    /// A provider without profiles.
    pub fn new() -> QosProvider {
        QosProvider::default()
    }

    /// Loads one file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<QosProvider, QosXmlError> {
        let mut p = QosProvider::new();
        p.load_file(path)?;
        Ok(p)
    }

    /// Loads several files; a profile's `base_name` may name a profile of another file.
    pub fn from_files<I, P>(paths: I) -> Result<QosProvider, QosXmlError>
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut p = QosProvider::new();
        for path in paths {
            p.load_file(path)?;
        }
        Ok(p)
    }

    /// Loads a document held in memory; positions name it `<string>`.
    #[allow(clippy::should_implement_trait)] // FromStr too, but this needs no import
    pub fn from_str(xml: &str) -> Result<QosProvider, QosXmlError> {
        QosProvider::from_str_named("<string>", xml)
    }

    /// Loads a document held in memory; positions name it `name`.
    pub fn from_str_named(name: &str, xml: &str) -> Result<QosProvider, QosXmlError> {
        let mut p = QosProvider::new();
        p.load_str(name, xml)?;
        Ok(p)
    }

    /// The files named by `TESSERA_QOS_PROFILES` (`;`-separated), `None` when it is unset or
    /// empty.
    pub fn from_env() -> Result<Option<QosProvider>, QosXmlError> {
        let Ok(list) = std::env::var(ENV_QOS_PROFILES) else {
            return Ok(None);
        };
        let files: Vec<&str> = list
            .split(';')
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect();
        if files.is_empty() {
            return Ok(None);
        }
        QosProvider::from_files(files).map(Some)
    }

    /// Adds the profiles of a file. On error the provider is unchanged.
    pub fn load_file(&mut self, path: impl AsRef<Path>) -> Result<(), QosXmlError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| QosXmlError::Io {
            file: name.clone(),
            message: e.to_string(),
        })?;
        self.load_str(&name, &text)
    }

    /// Adds the profiles of a document held in memory (`name` names it in positions). On
    /// error the provider is unchanged.
    pub fn load_str(&mut self, name: &str, xml: &str) -> Result<(), QosXmlError> {
        let root = dom::parse(xml, name.into())?;
        let mut structure = Vec::new();
        let found = match root.name.as_str() {
            "dds" => profiles::read_dds(&root, &mut structure)?,
            "profiles" => fastdds::read_profiles(&root, &mut structure)?,
            _ => {
                return Err(QosXmlError::NotQosDocument {
                    at: root.at.clone(),
                    element: root.name.clone(),
                })
            }
        };
        let mut all = self.profiles.clone();
        all.add(found)?;
        let mut values = Vec::new();
        all.check(&mut values)?;
        for w in structure.iter().chain(&values) {
            tracing::warn!("QoS profiles: {w}");
        }
        self.profiles = all;
        self.structure_warnings.extend(structure);
        self.value_warnings = values;
        Ok(())
    }

    /// Everything the loaded documents say that was ignored, in document order per load.
    pub fn warnings(&self) -> Vec<XmlWarning> {
        let mut all = self.structure_warnings.clone();
        all.extend(self.value_warnings.iter().cloned());
        all
    }

    /// The qualified names (`library::profile`) of the loaded profiles.
    pub fn profile_names(&self) -> Vec<String> {
        self.profiles.names().map(String::from).collect()
    }

    /// The profile marked `is_default_qos="true"` (the last loaded, if several are).
    pub fn default_profile(&self) -> Option<&str> {
        self.profiles.default_profile()
    }

    fn get<Q: policies::EntityQos>(
        &self,
        profile: &str,
        kind: Kind,
        topic: Option<&str>,
    ) -> Result<Q, QosXmlError> {
        let i = self.profiles.find(profile)?;
        Ok(self.profiles.resolve(i, kind, topic))
    }

    /// The domain participant QoS of `profile` (`library::profile`).
    pub fn participant_qos(&self, profile: &str) -> Result<DomainParticipantQos, QosXmlError> {
        self.get(profile, Kind::Participant, None)
    }

    /// The topic QoS of `profile`, from its elements without a topic filter.
    pub fn topic_qos(&self, profile: &str) -> Result<TopicQos, QosXmlError> {
        self.get(profile, Kind::Topic, None)
    }

    /// The topic QoS of `profile` for the topic `topic` (topic filters apply).
    pub fn topic_qos_for_topic(&self, profile: &str, topic: &str) -> Result<TopicQos, QosXmlError> {
        self.get(profile, Kind::Topic, Some(topic))
    }

    /// The publisher QoS of `profile`.
    pub fn publisher_qos(&self, profile: &str) -> Result<PublisherQos, QosXmlError> {
        self.get(profile, Kind::Publisher, None)
    }

    /// The subscriber QoS of `profile`.
    pub fn subscriber_qos(&self, profile: &str) -> Result<SubscriberQos, QosXmlError> {
        self.get(profile, Kind::Subscriber, None)
    }

    /// The data writer QoS of `profile`, from its elements without a topic filter.
    pub fn datawriter_qos(&self, profile: &str) -> Result<DataWriterQos, QosXmlError> {
        self.get(profile, Kind::Writer, None)
    }

    /// The data writer QoS of `profile` for a writer of `topic` (topic filters apply).
    pub fn datawriter_qos_for_topic(
        &self,
        profile: &str,
        topic: &str,
    ) -> Result<DataWriterQos, QosXmlError> {
        self.get(profile, Kind::Writer, Some(topic))
    }

    /// The data reader QoS of `profile`, from its elements without a topic filter.
    pub fn datareader_qos(&self, profile: &str) -> Result<DataReaderQos, QosXmlError> {
        self.get(profile, Kind::Reader, None)
    }

    /// The data reader QoS of `profile` for a reader of `topic` (topic filters apply).
    pub fn datareader_qos_for_topic(
        &self,
        profile: &str,
        topic: &str,
    ) -> Result<DataReaderQos, QosXmlError> {
        self.get(profile, Kind::Reader, Some(topic))
    }

    /// The provider of `TESSERA_QOS_PROFILES`, read once per process (the same result,
    /// error included, for every later call).
    pub fn from_env_cached() -> Result<Option<Arc<QosProvider>>, QosXmlError> {
        static ENV: OnceLock<Result<Option<Arc<QosProvider>>, QosXmlError>> = OnceLock::new();
        ENV.get_or_init(|| QosProvider::from_env().map(|p| p.map(Arc::new)))
            .clone()
    }
}
