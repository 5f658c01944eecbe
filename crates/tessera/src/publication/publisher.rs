//! Publishers: they create data writers and hold the QoS (partitions, group data, entity
//! factory) those writers are announced with.

use super::group::PublisherGroup;
use super::{DataWriter, WriterEndpoint, WriterOwner};
use crate::error::{Error, Result};
use crate::participant::DomainParticipant;
use crate::qos::{DataWriterQos, PresentationAccessScope, PublisherQos};
use crate::qos_rt::group::Group;
use crate::topic::{Topic, TopicInner};
use crate::TopicType;
use parking_lot::Mutex;
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_rtps::types::Guid;

/// Creates data writers; its QoS gives them their partitions.
#[derive(Debug, Clone)]
pub struct Publisher {
    participant: DomainParticipant,
    group: Arc<Group<PublisherQos, WriterOwner>>,
    /// Nesting depth of `begin_coherent_changes` (0: no set open).
    coherent: Arc<Mutex<u32>>,
    /// GROUP access scope with coherent or ordered access: the writers' shared numbering.
    group_seq: Option<Arc<PublisherGroup>>,
}

impl Publisher {
    pub(crate) fn new(participant: DomainParticipant, qos: PublisherQos) -> Self {
        let p = &qos.presentation;
        let group_seq = (p.access_scope == PresentationAccessScope::Group
            && (p.coherent_access || p.ordered_access))
            .then(PublisherGroup::new);
        Publisher {
            participant,
            group: Group::new(qos),
            coherent: Arc::new(Mutex::new(0)),
            group_seq,
        }
    }

    /// The publisher QoS (as `set_qos` last changed it).
    pub fn qos(&self) -> PublisherQos {
        self.group.qos()
    }

    /// Changes the publisher's QoS: PARTITION, GROUP_DATA and ENTITY_FACTORY are changeable
    /// (its writers are announced again, which re-matches them with readers of the new
    /// partitions); PRESENTATION is not ([`Error::ImmutablePolicy`]).
    pub fn set_qos(&self, qos: PublisherQos) -> Result<()> {
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        if qos.presentation != self.group.qos().presentation {
            return Err(Error::ImmutablePolicy("PRESENTATION".into()));
        }
        for w in self.group.set(qos) {
            let wq = w.ep.current_qos.lock().clone();
            w.reannounce(&wq);
        }
        Ok(())
    }

    /// Opens a coherent set (DDS `begin_coherent_changes`): what this publisher's writers
    /// write until the matching [`Publisher::end_coherent_changes`] reaches readers with
    /// `coherent_access` all at once or not at all: per writer at TOPIC or INSTANCE access
    /// scope, across all this publisher's writers at GROUP scope (a subscriber with GROUP
    /// scope shows the set in all its readers together). Calls nest: the set ends with
    /// the outermost `end_coherent_changes`. A writer created while a set is open joins the
    /// next one (at GROUP scope: the open one). [`Error::PreconditionNotMet`] if the publisher's PRESENTATION has no
    /// `coherent_access`.
    pub fn begin_coherent_changes(&self) -> Result<()> {
        if !self.group.qos().presentation.coherent_access {
            return Err(Error::PreconditionNotMet(
                "begin_coherent_changes: the publisher's PRESENTATION has no coherent_access"
                    .into(),
            ));
        }
        let mut depth = self.coherent.lock();
        if *depth == 0 {
            if let Some(g) = &self.group_seq {
                g.seq.begin_set();
            }
            for w in self.group.members() {
                w.ep.begin_coherent();
            }
        }
        *depth += 1;
        Ok(())
    }

    /// Closes the coherent set opened by [`Publisher::begin_coherent_changes`] (the outermost
    /// call sends each writer's end-of-set marker). [`Error::PreconditionNotMet`] without a
    /// matching `begin_coherent_changes`.
    pub fn end_coherent_changes(&self) -> Result<()> {
        let mut depth = self.coherent.lock();
        match *depth {
            0 => Err(Error::PreconditionNotMet(
                "end_coherent_changes without begin_coherent_changes".into(),
            )),
            1 => {
                *depth = 0;
                // Every writer's set is closed even if one fails; the first error is reported.
                let mut result = Ok(());
                let members = self.group.members();
                let tag = self.group_seq.as_ref().and_then(|g| {
                    let eps: Vec<_> = members.iter().map(|w| &*w.ep).collect();
                    g.end_set(&eps)
                });
                for w in members {
                    let r = w.ep.end_coherent(tag);
                    if result.is_ok() {
                        result = r;
                    }
                }
                result
            }
            _ => {
                *depth -= 1;
                Ok(())
            }
        }
    }

    /// The participant.
    pub fn participant(&self) -> &DomainParticipant {
        &self.participant
    }

    /// Creates a data writer for `topic`. Inconsistent QoS is refused with
    /// [`Error::InconsistentPolicy`].
    pub fn create_datawriter<T: TopicType>(
        &self,
        topic: &Topic<T>,
        qos: DataWriterQos,
    ) -> Result<DataWriter<T>> {
        let (ep, owner) = self.create_writer(&topic.inner, T::KEYED, qos)?;
        Ok(DataWriter {
            ep,
            owner: Some(owner),
            _type: PhantomData,
        })
    }

    /// A writer endpoint for `topic`, whatever its type (typed, untyped and dynamic writers).
    pub(super) fn create_writer(
        &self,
        topic: &TopicInner,
        keyed: bool,
        qos: DataWriterQos,
    ) -> Result<(Arc<WriterEndpoint>, Arc<WriterOwner>)> {
        let publisher_qos = self.group.qos();
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        if !Arc::ptr_eq(topic.participant.shared(), self.participant.shared()) {
            return Err(Error::BadParameter(
                "topic belongs to another participant".into(),
            ));
        }
        let p = self.participant.shared().clone();
        let entity_id = p.new_entity_id(true, keyed);
        let guid = Guid::new(p.guid_prefix, entity_id);
        let ep = WriterEndpoint::new(p.ctx.clone(), guid, &qos);
        ep.loans.cdr.set_domain(p.domain_id);
        ep.enabled.store(false, Ordering::Release);
        ep.coherent_publisher.store(
            publisher_qos.presentation.coherent_access,
            Ordering::Relaxed,
        );
        if let Some(g) = &self.group_seq {
            g.join(&ep);
            // At GROUP scope a writer created inside an open set writes into it: the set's
            // numbers are the publisher's, so a sample outside it would leave a hole.
            let depth = self.coherent.lock();
            if *depth > 0 {
                ep.begin_coherent();
            }
        }
        let mut side = tessera_rtps::qos::WriterSideQos::new(&topic.qos, &publisher_qos, &qos);
        if let Some(a) = super::atomic::setup(&p, guid, &topic.name, &mut side)? {
            let _ = ep.atomic.set(a);
        }
        let owner = Arc::new(WriterOwner {
            ep: ep.clone(),
            participant: self.participant.clone(),
            entity_id,
            topic_name: topic.name.clone(),
            type_name: topic.type_name.clone(),
            topic_qos: topic.qos.clone(),
            publisher: self.group.clone(),
            consensus: side.consensus_endpoint,
        });
        self.group.add(&owner);
        // ENTITY_FACTORY: a publisher that does not autoenable leaves `enable` to the caller.
        if publisher_qos.entity_factory.autoenable_created_entities {
            owner.enable();
        }
        Ok((ep, owner))
    }
}
