//! Entity factories: topics, publishers and subscribers of a participant, and the entity
//! ids of its user endpoints.

use super::{DomainParticipant, ParticipantShared};
use crate::error::{Error, Result};
use crate::publication::Publisher;
use crate::qos::{PublisherQos, SubscriberQos, TopicQos};
use crate::subscription::Subscriber;
use crate::topic::{Topic, TopicInner};
use crate::TopicType;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_rtps::types::{entity_kind, EntityId};

impl DomainParticipant {
    /// Creates a topic of type `T`. The QoS is checked for consistency.
    pub fn create_topic<T: TopicType>(&self, name: &str, qos: TopicQos) -> Result<Topic<T>> {
        if name.is_empty() || name.len() > 256 {
            return Err(Error::BadParameter(
                "topic name must be 1..=256 bytes".into(),
            ));
        }
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        self.owner
            .shared
            .discovery
            .lock()
            .register_type(T::TYPE_NAME, || Some(T::type_bundle()));
        Ok(Topic::new(Arc::new(TopicInner {
            name: name.to_string(),
            type_name: T::TYPE_NAME.to_string(),
            qos,
            participant: self.clone(),
        })))
    }

    /// Creates a publisher (its QoS carries the partitions of its writers).
    pub fn create_publisher(&self, qos: PublisherQos) -> Result<Publisher> {
        Ok(Publisher::new(self.clone(), qos))
    }

    /// Creates a subscriber (its QoS carries the partitions of its readers).
    pub fn create_subscriber(&self, qos: SubscriberQos) -> Result<Subscriber> {
        Ok(Subscriber::new(self.clone(), qos))
    }
}

impl ParticipantShared {
    /// A new entity id for a user endpoint.
    pub fn new_entity_id(&self, writer: bool, keyed: bool) -> EntityId {
        let key = self.next_entity_key.fetch_add(1, Ordering::Relaxed);
        let kind = match (writer, keyed) {
            (true, true) => entity_kind::USER_WRITER_WITH_KEY,
            (true, false) => entity_kind::USER_WRITER_NO_KEY,
            (false, true) => entity_kind::USER_READER_WITH_KEY,
            (false, false) => entity_kind::USER_READER_NO_KEY,
        };
        EntityId::new(key, kind)
    }
}
