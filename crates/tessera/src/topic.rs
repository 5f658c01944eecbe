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

impl<T: TopicType> Topic<T> {
    /// The same topic for writers and readers of serialized samples
    /// ([`Publisher::create_untyped_datawriter`](crate::Publisher::create_untyped_datawriter)).
    pub fn untyped(&self) -> UntypedTopic {
        UntypedTopic {
            inner: self.inner.clone(),
            support: crate::TypedSupport::<T>::arc(),
        }
    }
}

/// A topic whose type the runtime knows only through a [`TypeSupport`](crate::TypeSupport):
/// what untyped writers and readers are created on. From a typed topic
/// ([`Topic::untyped`]) or a dynamic one ([`DynamicTopic::untyped`](crate::DynamicTopic::untyped)).
/// Cheap to clone.
#[derive(Clone)]
pub struct UntypedTopic {
    pub(crate) inner: Arc<TopicInner>,
    pub(crate) support: Arc<dyn crate::TypeSupport>,
}

impl std::fmt::Debug for UntypedTopic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UntypedTopic")
            .field("name", &self.inner.name)
            .field("type", &self.inner.type_name)
            .finish()
    }
}

impl UntypedTopic {
    /// The topic name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The registered type name.
    pub fn type_name(&self) -> &str {
        &self.inner.type_name
    }

    /// The topic QoS.
    pub fn qos(&self) -> &TopicQos {
        &self.inner.qos
    }

    /// What the runtime knows of the type.
    pub fn type_support(&self) -> &Arc<dyn crate::TypeSupport> {
        &self.support
    }
}
