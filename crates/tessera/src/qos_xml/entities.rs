//! Creating entities by profile name, as RTI's `create_datawriter_with_profile` and Fast
//! DDS's `create_datawriter_with_profile` do: the QoS comes from the participant's provider
//! ([`crate::ParticipantConfig::qos_profiles`], or `TESSERA_QOS_PROFILES`).

use super::{QosProvider, QosXmlError};
use crate::error::{Error, Result};
use crate::participant::{DomainParticipant, ParticipantConfig};
use crate::publication::{DataWriter, Publisher};
use crate::reader::DataReader;
use crate::subscription::Subscriber;
use crate::topic::Topic;
use crate::TopicType;
use std::sync::Arc;

/// The explicit provider, or the process's `TESSERA_QOS_PROFILES` one.
fn provider_of(explicit: Option<&Arc<QosProvider>>) -> Result<Arc<QosProvider>> {
    if let Some(p) = explicit {
        return Ok(p.clone());
    }
    QosProvider::from_env_cached()?.ok_or(Error::QosProfile(QosXmlError::NoProfiles))
}

impl DomainParticipant {
    /// Creates a participant whose QoS is `profile`'s (`library::profile`), from
    /// `config.qos_profiles` or `TESSERA_QOS_PROFILES`. Its entities' `*_with_profile`
    /// helpers use the same provider.
    pub fn with_profile(
        domain_id: u32,
        profile: &str,
        config: ParticipantConfig,
    ) -> Result<DomainParticipant> {
        let provider = provider_of(config.qos_profiles.as_ref())?;
        let qos = provider.participant_qos(profile)?;
        let config = ParticipantConfig {
            qos_profiles: Some(provider),
            ..config
        };
        DomainParticipant::with_qos(domain_id, qos, config)
    }

    /// The QoS profiles this participant's `*_with_profile` helpers use.
    pub fn qos_provider(&self) -> Result<Arc<QosProvider>> {
        provider_of(self.shared().qos_profiles.as_ref())
    }

    /// Creates a topic with the topic QoS of `profile` for a topic named `name` (topic
    /// filters apply).
    pub fn create_topic_with_profile<T: TopicType>(
        &self,
        name: &str,
        profile: &str,
    ) -> Result<Topic<T>> {
        let qos = self.qos_provider()?.topic_qos_for_topic(profile, name)?;
        self.create_topic(name, qos)
    }

    /// Creates a publisher with the publisher QoS of `profile`.
    pub fn create_publisher_with_profile(&self, profile: &str) -> Result<Publisher> {
        let qos = self.qos_provider()?.publisher_qos(profile)?;
        self.create_publisher(qos)
    }

    /// Creates a subscriber with the subscriber QoS of `profile`.
    pub fn create_subscriber_with_profile(&self, profile: &str) -> Result<Subscriber> {
        let qos = self.qos_provider()?.subscriber_qos(profile)?;
        self.create_subscriber(qos)
    }
}

impl Publisher {
    /// Creates a data writer for `topic` with the data writer QoS of `profile` for that
    /// topic's name (topic filters apply). The profile's QoS replaces the topic's entirely
    /// (as RTI does); only what the profile leaves out keeps the DDS defaults.
    pub fn create_datawriter_with_profile<T: TopicType>(
        &self,
        topic: &Topic<T>,
        profile: &str,
    ) -> Result<DataWriter<T>> {
        let provider = self.participant().qos_provider()?;
        let qos = provider.datawriter_qos_for_topic(profile, topic.name())?;
        self.create_datawriter(topic, qos)
    }
}

impl Subscriber {
    /// Creates a data reader for `topic` with the data reader QoS of `profile` for that
    /// topic's name (topic filters apply).
    pub fn create_datareader_with_profile<T: TopicType>(
        &self,
        topic: &Topic<T>,
        profile: &str,
    ) -> Result<DataReader<T>> {
        let provider = self.participant().qos_provider()?;
        let qos = provider.datareader_qos_for_topic(profile, topic.name())?;
        self.create_datareader(topic, qos)
    }
}
