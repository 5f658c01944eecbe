//! Content-filtered topics (DDS 1.4 §2.2.2.3.3): a topic seen through a filter expression.
//!
//! A reader created from a [`ContentFilteredTopic`] drops samples that do not pass before
//! they enter its history: they take no room under its resource limits, raise no
//! DATA_AVAILABLE and are acknowledged like delivered ones; [`UntypedDataReader::filtered_out`]
//! counts them. Dispose and unregister messages always pass (they carry no member values).
//! The reader announces its filter in SEDP (PID_CONTENT_FILTER_PROPERTY, class `DDSSQL`), so
//! a writer may filter for it; it filters anyway, as a writer may not (or may know older
//! parameters).
//!
//! Writer-side filtering: a Tessera writer evaluates the filters of the Tessera readers it
//! serves (once per distinct filter and sample, on the sample before it is sent) and sends a
//! reader whose filter drops a sample a GAP (reliable) or nothing (best effort); such a reader
//! is served by unicast, not through a multicast group. It learns new parameters from the
//! reader's next SEDP announcement: samples written before that arrives meet the old ones, so
//! one that only the new parameters pass may be skipped.
//!
//! Cost: a reader without a filter pays one atomic load per sample (`OnceLock::get`).
//! A filtered reader decodes each arriving sample once to evaluate it, on the receive thread.
//!
//! [`UntypedDataReader::filtered_out`]: crate::UntypedDataReader::filtered_out

use crate::error::{Error, Result};
use crate::participant::DomainParticipant;
use crate::subscription::ReaderOwner;
use crate::topic::Topic;
use crate::TopicType;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use tessera_rtps::cdr;
use tessera_rtps::discovery::ContentFilterProperty;
use tessera_rtps::filter::{Filter, DDSSQL};

/// A topic and a filter over it: create readers from it with
/// [`Subscriber::create_datareader`](crate::Subscriber::create_datareader). Cheap to clone.
pub struct ContentFilteredTopic<T: TopicType> {
    shared: Arc<CftShared>,
    topic: Topic<T>,
}

impl<T: TopicType> Clone for ContentFilteredTopic<T> {
    fn clone(&self) -> Self {
        ContentFilteredTopic {
            shared: self.shared.clone(),
            topic: self.topic.clone(),
        }
    }
}

impl<T: TopicType> std::fmt::Debug for ContentFilteredTopic<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContentFilteredTopic")
            .field("name", &self.shared.name)
            .field("topic", &self.topic.name())
            .field("expression", &self.shared.filter.read().expression())
            .finish()
    }
}

/// What a content-filtered topic shares with the readers made from it.
pub struct CftShared {
    name: String,
    related: String,
    filter: RwLock<Filter>,
    /// Decodes a payload as the topic's type and evaluates the filter on it.
    eval: PayloadEval,
    readers: Mutex<Vec<Weak<ReaderOwner>>>,
}

/// Decodes a serialized sample as the filter's type and evaluates the filter on it.
pub(crate) type PayloadEval = fn(&Filter, &[u8]) -> std::result::Result<bool, String>;

pub(crate) fn eval_payload<T: TopicType>(
    f: &Filter,
    payload: &[u8],
) -> std::result::Result<bool, String> {
    let sample: T = cdr::deserialize_sample(payload).map_err(|e| e.to_string())?;
    f.matches_sample(&sample).map_err(|e| e.to_string())
}

impl CftShared {
    /// What readers announce in SEDP.
    pub(crate) fn property(&self) -> ContentFilterProperty {
        let f = self.filter.read();
        ContentFilterProperty {
            content_filtered_topic_name: self.name.clone(),
            related_topic_name: self.related.clone(),
            filter_class_name: DDSSQL.to_owned(),
            filter_expression: f.expression().to_owned(),
            expression_parameters: f.parameters().to_vec(),
        }
    }

    /// Records a reader made from this topic (announced again when parameters change).
    pub(crate) fn add_reader(&self, owner: &Arc<ReaderOwner>) {
        let mut rs = self.readers.lock();
        rs.retain(|r| r.strong_count() > 0);
        rs.push(Arc::downgrade(owner));
    }
}

/// A reader's filter: the topic's, and what it dropped.
pub(crate) struct ReaderFilter {
    pub(crate) cft: Arc<CftShared>,
    pub(crate) dropped: AtomicU64,
}

impl ReaderFilter {
    pub(crate) fn new(cft: Arc<CftShared>) -> Self {
        ReaderFilter {
            cft,
            dropped: AtomicU64::new(0),
        }
    }

    /// Whether a serialized sample passes; a failing one is counted. `Err` when it does not
    /// decode (the caller counts it as undecodable).
    pub(crate) fn passes(&self, payload: &[u8]) -> std::result::Result<bool, String> {
        let pass = (self.cft.eval)(&self.cft.filter.read(), payload)?;
        if !pass {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        Ok(pass)
    }
}

impl<T: TopicType> ContentFilteredTopic<T> {
    /// The content-filtered topic's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The topic it filters.
    pub fn related_topic(&self) -> &Topic<T> {
        &self.topic
    }

    /// The filter expression.
    pub fn filter_expression(&self) -> String {
        self.shared.filter.read().expression().to_owned()
    }

    /// The expression's parameters now.
    pub fn expression_parameters(&self) -> Vec<String> {
        self.shared.filter.read().parameters().to_vec()
    }

    /// Replaces the parameters: readers made from this topic filter with them from now on
    /// (samples already in their histories stay) and announce them again. Parameters that do
    /// not read as the members they meet are refused with [`Error::BadParameter`] and the old
    /// ones kept.
    pub fn set_expression_parameters(&self, params: Vec<String>) -> Result<()> {
        self.shared
            .filter
            .write()
            .set_parameters(&params)
            .map_err(|e| Error::BadParameter(format!("filter parameters: {e}")))?;
        let readers: Vec<_> = self
            .shared
            .readers
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for r in readers {
            r.reannounce_current();
        }
        Ok(())
    }
}

/// What a reader can be created from: a [`Topic`] or a [`ContentFilteredTopic`].
pub trait TopicDescription<T: TopicType>: sealed::Sealed {
    /// The topic read (for a content-filtered topic, the related topic).
    fn topic(&self) -> &Topic<T>;
}

pub(crate) mod sealed {
    /// Keeps [`super::TopicDescription`] to this crate's types; gives their filter.
    pub trait Sealed {
        fn content_filter(&self) -> Option<&std::sync::Arc<super::CftShared>>;
    }
}

impl<T: TopicType> sealed::Sealed for Topic<T> {
    fn content_filter(&self) -> Option<&Arc<CftShared>> {
        None
    }
}

impl<T: TopicType> TopicDescription<T> for Topic<T> {
    fn topic(&self) -> &Topic<T> {
        self
    }
}

impl<T: TopicType> sealed::Sealed for ContentFilteredTopic<T> {
    fn content_filter(&self) -> Option<&Arc<CftShared>> {
        Some(&self.shared)
    }
}

impl<T: TopicType> TopicDescription<T> for ContentFilteredTopic<T> {
    fn topic(&self) -> &Topic<T> {
        &self.topic
    }
}

impl DomainParticipant {
    /// Creates a content-filtered topic named `name` over `topic`: its readers see only the
    /// samples for which `expression` (DDS SQL, see [`tessera_rtps::filter`]) holds, with
    /// `%n` replaced by `params[n]`. An expression that does not parse or does not fit `T`
    /// is refused with [`Error::BadParameter`] naming the column; a type without member
    /// access (a hand-written `TopicType`) with [`Error::Unsupported`].
    pub fn create_contentfilteredtopic<T: TopicType>(
        &self,
        name: &str,
        topic: &Topic<T>,
        expression: &str,
        params: Vec<String>,
    ) -> Result<ContentFilteredTopic<T>> {
        if name.is_empty() || name.len() > 256 {
            return Err(Error::BadParameter(
                "topic name must be 1..=256 bytes".into(),
            ));
        }
        if !Arc::ptr_eq(topic.participant().shared(), self.shared()) {
            return Err(Error::BadParameter(
                "topic belongs to another participant".into(),
            ));
        }
        if !<T as cdr::CdrType>::FILTERABLE {
            return Err(Error::Unsupported(format!(
                "{} gives filters no member values (derive TopicType)",
                T::TYPE_NAME
            )));
        }
        let filter = Filter::new(expression, &T::type_desc(), &params)
            .map_err(|e| Error::BadParameter(format!("filter expression: {e}")))?;
        Ok(ContentFilteredTopic {
            shared: Arc::new(CftShared {
                name: name.to_owned(),
                related: topic.name().to_owned(),
                filter: RwLock::new(filter),
                eval: eval_payload::<T>,
                readers: Mutex::new(Vec::new()),
            }),
            topic: topic.clone(),
        })
    }
}
