//! Query conditions (DDS 1.4 §2.2.2.5.9): a read condition whose samples must also pass a
//! query expression (the filter language of content-filtered topics, [`tessera_rtps::filter`]),
//! with parameters that may change.
//!
//! The condition's trigger, and `read_w_condition`/`take_w_condition`, decode the candidate
//! samples (still serialized in the history) and evaluate the expression on them; a sample
//! that does not decode never passes. A wait set with the condition attached wakes on every
//! arrival but returns only when a passing sample is there.

use crate::condition::{Condition, ConditionKind};
use crate::content_filter::{eval_payload, PayloadEval};
use crate::error::{Error, Result};
use crate::history::{
    InstanceHandle, InstanceStateMask, Sample, SampleStateMask, Selection, StateMasks,
    ViewStateMask,
};
use crate::reader::DataReader;
use crate::sample::SerializedPayload;
use crate::subscription::ReaderEndpoint;
use crate::TopicType;
use parking_lot::RwLock;
use std::sync::{Arc, Weak};
use tessera_rtps::cdr::CdrType;
use tessera_rtps::filter::Filter;

/// A condition on a reader: true while it holds samples in the given states whose data passes
/// the query expression. Attach [`QueryCondition::condition`] to a wait set; read or take the
/// samples with [`DataReader::read_w_condition`] and its siblings. Cheap to clone.
#[derive(Clone)]
pub struct QueryCondition {
    condition: Condition,
    masks: StateMasks,
    query: Arc<Query>,
    reader: Weak<ReaderEndpoint>,
}

struct Query {
    filter: RwLock<Filter>,
    eval: PayloadEval,
}

impl Query {
    fn passes(&self, p: &SerializedPayload) -> bool {
        (self.eval)(&self.filter.read(), p.as_bytes()).unwrap_or(false)
    }
}

impl std::fmt::Debug for QueryCondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryCondition")
            .field("masks", &self.masks)
            .field("expression", &self.query.filter.read().expression())
            .finish()
    }
}

impl QueryCondition {
    /// The condition to attach to a wait set.
    pub fn condition(&self) -> Condition {
        self.condition.clone()
    }

    /// Whether the reader holds a passing sample now.
    pub fn trigger_value(&self) -> bool {
        self.condition.trigger_value()
    }

    /// The state masks the condition selects samples by.
    pub fn state_masks(&self) -> StateMasks {
        self.masks
    }

    /// The query expression.
    pub fn query_expression(&self) -> String {
        self.query.filter.read().expression().to_owned()
    }

    /// The expression's parameters now.
    pub fn query_parameters(&self) -> Vec<String> {
        self.query.filter.read().parameters().to_vec()
    }

    /// Replaces the parameters (refused with [`Error::BadParameter`], keeping the old ones,
    /// when one does not read as the member it meets). Wait sets re-evaluate the condition.
    pub fn set_query_parameters(&self, params: Vec<String>) -> Result<()> {
        self.query
            .filter
            .write()
            .set_parameters(&params)
            .map_err(|e| Error::BadParameter(format!("query parameters: {e}")))?;
        if let Some(ep) = self.reader.upgrade() {
            ep.notifier.notify();
        }
        Ok(())
    }

    /// The condition's reader endpoint, if `reader` is it.
    fn check_reader(&self, reader: &Arc<ReaderEndpoint>) -> Result<()> {
        if std::ptr::eq(self.reader.as_ptr(), Arc::as_ptr(reader)) {
            Ok(())
        } else {
            Err(Error::BadParameter(
                "the query condition belongs to another reader".into(),
            ))
        }
    }
}

impl<T: TopicType> DataReader<T> {
    /// Creates a query condition: samples in the given states whose data passes `expression`
    /// (with `%n` replaced by `params[n]`). An expression that does not parse or does not fit
    /// `T` is refused with [`Error::BadParameter`] naming the column; a type without member
    /// access with [`Error::Unsupported`].
    pub fn create_querycondition(
        &self,
        sample_states: SampleStateMask,
        view_states: ViewStateMask,
        instance_states: InstanceStateMask,
        expression: &str,
        params: Vec<String>,
    ) -> Result<QueryCondition> {
        if !<T as CdrType>::FILTERABLE {
            return Err(Error::Unsupported(format!(
                "{} gives queries no member values (derive TopicType)",
                T::TYPE_NAME
            )));
        }
        let filter = Filter::new(expression, &T::type_desc(), &params)
            .map_err(|e| Error::BadParameter(format!("query expression: {e}")))?;
        let query = Arc::new(Query {
            filter: RwLock::new(filter),
            eval: eval_payload::<T>,
        });
        let masks = StateMasks::new(sample_states, view_states, instance_states);
        let ep = &self.raw.ep;
        let (weak, q) = (Arc::downgrade(ep), query.clone());
        let condition = Condition::new(ConditionKind::Query, ep.notifier.clone(), move || {
            weak.upgrade().is_some_and(|e| {
                e.history
                    .lock()
                    .has_matching_query(masks, &mut |p| q.passes(p))
            })
        });
        Ok(QueryCondition {
            condition,
            masks,
            query,
            reader: Arc::downgrade(ep),
        })
    }

    /// Reads (marking READ) up to `max` samples that `condition` selects.
    pub fn read_w_condition(
        &self,
        condition: &QueryCondition,
        max: usize,
    ) -> Result<Vec<Sample<T>>> {
        self.w_condition(condition, Selection::All, max, false)
    }

    /// Takes up to `max` samples that `condition` selects.
    pub fn take_w_condition(
        &self,
        condition: &QueryCondition,
        max: usize,
    ) -> Result<Vec<Sample<T>>> {
        self.w_condition(condition, Selection::All, max, true)
    }

    /// Reads the samples `condition` selects of the next instance after `previous` (by
    /// handle order) that has any.
    pub fn read_next_instance_w_condition(
        &self,
        previous: Option<InstanceHandle>,
        condition: &QueryCondition,
        max: usize,
    ) -> Result<Vec<Sample<T>>> {
        let prev = previous.unwrap_or(InstanceHandle::NIL);
        self.w_condition(condition, Selection::NextInstance(prev), max, false)
    }

    /// Takes the samples `condition` selects of the next instance after `previous` (by
    /// handle order) that has any.
    pub fn take_next_instance_w_condition(
        &self,
        previous: Option<InstanceHandle>,
        condition: &QueryCondition,
        max: usize,
    ) -> Result<Vec<Sample<T>>> {
        let prev = previous.unwrap_or(InstanceHandle::NIL);
        self.w_condition(condition, Selection::NextInstance(prev), max, true)
    }

    fn w_condition(
        &self,
        c: &QueryCondition,
        selection: Selection,
        max: usize,
        take: bool,
    ) -> Result<Vec<Sample<T>>> {
        c.check_reader(&self.raw.ep)?;
        let (masks, q) = (c.masks, &c.query);
        let mut out = Vec::new();
        let mut pass = |p: &SerializedPayload| q.passes(p);
        if take {
            self.raw
                .take_access(
                    |h| h.take_query_into(&mut out, selection, max, masks, &mut pass),
                    |r| *r.as_ref().unwrap_or(&0),
                )
                .map_err(|_| Error::UnknownInstance)?;
        } else {
            self.raw
                .access(|h| h.read_query_into(&mut out, selection, max, masks, &mut pass))
                .map_err(|_| Error::UnknownInstance)?;
        }
        Ok(self.raw.decoded(out, take))
    }
}
