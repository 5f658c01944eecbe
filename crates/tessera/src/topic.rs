//! Topics: a name bound to a data type and a topic QoS.

use crate::participant::DomainParticipant;
use crate::qos::TopicQos;
use crate::TopicType;
use std::marker::PhantomData;
use std::sync::Arc;

/// A typed topic. Cheap to clone.
pub struct Topic<T: TopicType> {
    pub(crate) inner: Arc<TopicInner>,
    _type: PhantomData<fn() -> T>,
}

impl<T: TopicType> Clone for Topic<T> {
    fn clone(&self) -> Self {
        Topic {
            inner: self.inner.clone(),
            _type: PhantomData,
        }
    }
}

impl<T: TopicType> std::fmt::Debug for Topic<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Topic")
            .field("name", &self.inner.name)
            .field("type", &T::TYPE_NAME)
            .finish()
    }
}

#[derive(Debug)]
pub(crate) struct TopicInner {
    pub name: String,
    pub type_name: String,
    pub qos: TopicQos,
    pub participant: DomainParticipant,
}

impl<T: TopicType> Topic<T> {
    pub(crate) fn new(inner: Arc<TopicInner>) -> Self {
        Topic {
            inner,
            _type: PhantomData,
        }
    }

    /// The topic name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The registered type name (as sent in discovery).
    pub fn type_name(&self) -> &str {
        &self.inner.type_name
    }

    /// The topic QoS.
    pub fn qos(&self) -> &TopicQos {
        &self.inner.qos
    }

    /// The participant that created the topic.
    pub fn participant(&self) -> &DomainParticipant {
        &self.inner.participant
    }
}
