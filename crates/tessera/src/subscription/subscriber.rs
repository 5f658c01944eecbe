//! The subscriber, which creates data readers, and the owner handle of each reader it made:
//! it enables and announces the reader, and withdraws it when the last handle goes.

use super::{atomic, GroupAssembler, ReaderEndpoint};
use crate::content_filter::{CftShared, ReaderFilter, TopicDescription};
use crate::endpoint::LocalReader;
use crate::error::{Error, Result};
use crate::participant::DomainParticipant;
use crate::qos::{DataReaderQos, SubscriberQos};
use crate::qos_rt::group::Group;
use crate::reader::{DataReader, UntypedDataReader};
use crate::sample::{TypeSupport, TypedSupport};
use crate::TopicType;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tessera_rtps::qos::ReliabilityKind;
use tessera_rtps::types::{EntityId, Guid};

/// Creates data readers; its QoS gives them their partitions.
#[derive(Debug, Clone)]
pub struct Subscriber {
    participant: DomainParticipant,
    pub(super) group: Arc<Group<SubscriberQos, ReaderOwner>>,
    /// Nesting depth of `begin_access` (see [`crate::presentation`]).
    pub(crate) access: Arc<Mutex<u32>>,
    /// PRESENTATION GROUP scope: the group sets (with `coherent_access`) and the arrival
    /// counter its readers share (with `ordered_access`).
    pub(crate) group_sets: Option<Arc<GroupAssembler>>,
    pub(crate) group_order: Option<Arc<AtomicU64>>,
}

impl Subscriber {
    pub(crate) fn new(participant: DomainParticipant, qos: SubscriberQos) -> Self {
        let p = &qos.presentation;
        let group_scope = p.access_scope == crate::qos::PresentationAccessScope::Group;
        Subscriber {
            participant,
            access: Arc::new(Mutex::new(0)),
            group_sets: (group_scope && p.coherent_access).then(Default::default),
            group_order: (group_scope && p.ordered_access).then(Default::default),
            group: Group::new(qos),
        }
    }

    /// The subscriber QoS (as `set_qos` last changed it).
    pub fn qos(&self) -> SubscriberQos {
        self.group.qos()
    }

    /// Changes the subscriber's QoS: PARTITION, GROUP_DATA and ENTITY_FACTORY are changeable
    /// (its readers are announced again, which re-matches them with writers of the new
    /// partitions); PRESENTATION is not ([`Error::ImmutablePolicy`]).
    pub fn set_qos(&self, qos: SubscriberQos) -> Result<()> {
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        if qos.presentation != self.group.qos().presentation {
            return Err(Error::ImmutablePolicy("PRESENTATION".into()));
        }
        for r in self.group.set(qos) {
            let rq = r.ep.current_qos.lock().clone();
            r.reannounce(&rq);
        }
        Ok(())
    }

    /// The participant.
    pub fn participant(&self) -> &DomainParticipant {
        &self.participant
    }

    /// Creates a data reader for `topic`. Inconsistent QoS is refused with
    /// [`Error::InconsistentPolicy`].
    ///
    /// `topic` is a [`Topic`](crate::Topic) or a [`ContentFilteredTopic`](crate::ContentFilteredTopic),
    /// whose filter the reader applies to every arriving sample.
    pub fn create_datareader<T: TopicType>(
        &self,
        topic: &impl TopicDescription<T>,
        qos: DataReaderQos,
    ) -> Result<DataReader<T>> {
        let raw = self.create_reader(
            &topic.topic().inner,
            TypedSupport::<T>::arc(),
            qos,
            topic.content_filter().cloned(),
            crate::loan::LoanResolver::of::<T>(),
        )?;
        Ok(DataReader::from_raw(raw))
    }

    /// Creates a data reader for `topic` that hands out samples serialized, with their
    /// `SampleInfo`, without decoding them. It matches writers exactly like a typed reader.
    pub fn create_untyped_datareader<T: TopicType>(
        &self,
        topic: &impl TopicDescription<T>,
        qos: DataReaderQos,
    ) -> Result<UntypedDataReader> {
        self.create_reader(
            &topic.topic().inner,
            TypedSupport::<T>::arc(),
            qos,
            topic.content_filter().cloned(),
            crate::loan::LoanResolver::of::<T>(),
        )
    }

    /// A reader endpoint for `topic` of the type `support` describes (typed, untyped and
    /// dynamic readers), filtered by `content_filter` if it comes from a content-filtered topic.
    /// `loans`: how it resolves zero-copy loan references (a reader made from a keyless plain
    /// Rust type); it then announces that it does, unless it filters content (its filter reads
    /// serialized samples) or is best-effort, and loaning writers send it references. A
    /// best-effort reader gets copies: the chunks its history would hold make a loaning
    /// writer wait in `loan`, and a best-effort reader must never slow its writer down.
    pub(crate) fn create_reader(
        &self,
        topic: &crate::topic::TopicInner,
        support: Arc<dyn TypeSupport>,
        qos: DataReaderQos,
        content_filter: Option<Arc<CftShared>>,
        loans: Option<crate::loan::LoanResolver>,
    ) -> Result<UntypedDataReader> {
        let subscriber_qos = self.group.qos();
        qos.check_consistency()
            .map_err(|e| Error::InconsistentPolicy(e.to_string()))?;
        if !Arc::ptr_eq(topic.participant.shared(), self.participant.shared()) {
            return Err(Error::BadParameter(
                "topic belongs to another participant".into(),
            ));
        }
        let p = self.participant.shared().clone();
        let entity_id = p.new_entity_id(false, support.is_keyed());
        let guid = Guid::new(p.guid_prefix, entity_id);
        let ep = ReaderEndpoint::new(p.ctx.clone(), guid, support, &qos);
        if let Some(cf) = &content_filter {
            // Set before the reader is enabled: no sample arrives unfiltered.
            let _ = ep.content_filter.set(ReaderFilter::new(cf.clone()));
        }
        let loans = loans.filter(|_| {
            content_filter.is_none() && qos.reliability.kind == ReliabilityKind::Reliable
        });
        if let Some(l) = loans {
            let _ = ep.loans.set(l);
        }
        crate::presentation::setup_reader(&ep, &subscriber_qos.presentation);
        if let Some(g) = &self.group_sets {
            let _ = ep.group.set(g.clone());
        }
        if let Some(c) = &self.group_order {
            ep.history.lock().set_order_counter(c.clone());
        }
        let mut side = tessera_rtps::qos::ReaderSideQos::new(&topic.qos, &subscriber_qos, &qos);
        atomic::setup(
            &p,
            guid,
            &topic.name,
            &mut side,
            &(ep.clone() as Arc<dyn LocalReader>),
        )?;
        let owner = Arc::new(ReaderOwner {
            ep: ep.clone(),
            enabled: AtomicBool::new(false),
            participant: self.participant.clone(),
            entity_id,
            topic_name: topic.name.clone(),
            type_name: topic.type_name.clone(),
            topic_qos: topic.qos.clone(),
            subscriber: self.group.clone(),
            consensus: side.consensus_endpoint,
            content_filter,
            loan_layout: loans.map_or(0, |l| l.layout),
        });
        if let Some(cf) = &owner.content_filter {
            cf.add_reader(&owner);
        }
        self.group.add(&owner);
        // ENTITY_FACTORY: a subscriber that does not autoenable leaves `enable` to the caller.
        if subscriber_qos.entity_factory.autoenable_created_entities {
            owner.enable();
        }
        Ok(UntypedDataReader::new(ep, Some(owner)))
    }
}

/// Removes the reader from its participant when the last handle goes.
pub(crate) struct ReaderOwner {
    pub(super) ep: Arc<ReaderEndpoint>,
    /// ENTITY_FACTORY: the reader was enabled (announced, matched).
    enabled: AtomicBool,
    participant: DomainParticipant,
    entity_id: EntityId,
    /// What the reader is announced with, for re-announcements (`set_qos`).
    topic_name: String,
    type_name: String,
    topic_qos: crate::qos::TopicQos,
    subscriber: Arc<Group<SubscriberQos, ReaderOwner>>,
    /// An ATOMIC reader's consensus address, announced with it (see [`atomic`]).
    consensus: Option<tessera_rtps::types::Locator>,
    /// The content-filtered topic the reader was made from, announced with it.
    content_filter: Option<Arc<CftShared>>,
    /// The plain layout whose loan references it resolves, announced with it (0: none).
    loan_layout: u64,
}

impl ReaderOwner {
    /// Enables the reader: it joins the participant's endpoints and is announced (matched).
    pub(crate) fn enable(&self) {
        if self.enabled.swap(true, Ordering::AcqRel) {
            return;
        }
        self.participant
            .shared()
            .endpoints
            .write()
            .readers
            .insert(self.entity_id, self.ep.clone() as Arc<dyn LocalReader>);
        let qos = self.ep.current_qos.lock().clone();
        self.reannounce(&qos);
    }

    pub(crate) fn participant(&self) -> &DomainParticipant {
        &self.participant
    }

    /// Whether the reader is enabled.
    pub(crate) fn is_enabled(&self) -> bool {
        self.enabled.load(Ordering::Acquire)
    }

    /// Announces the reader again with its current QoS (its filter's parameters changed).
    pub(crate) fn reannounce_current(&self) {
        let qos = self.ep.current_qos.lock().clone();
        self.reannounce(&qos);
    }

    /// Announces the reader (again) with `qos`, which (re-)matches it with every writer; a
    /// reader not enabled yet is announced by `enable`.
    pub(crate) fn reannounce(&self, qos: &DataReaderQos) {
        if !self.is_enabled() {
            return;
        }
        let p = self.participant.shared();
        let now = Instant::now();
        let content_filter = self.content_filter.as_ref().map(|c| c.property());
        let actions = p.discovery.lock().add_local_reader(
            p,
            Guid::new(p.guid_prefix, self.entity_id),
            crate::discovery_rt::EndpointTopic {
                topic_name: &self.topic_name,
                type_name: &self.type_name,
                content_filter: content_filter.as_ref(),
                loan_layout: self.loan_layout,
                // Every reader copies such samples out on arrival (`resolve_cdr_chunk`); a
                // best-effort one is not offered them, see `publication/cdr_chunks.rs`.
                cdr_chunks: qos.reliability.kind == ReliabilityKind::Reliable,
            },
            {
                let mut side = tessera_rtps::qos::ReaderSideQos::new(
                    &self.topic_qos,
                    &self.subscriber.qos(),
                    qos,
                );
                side.consensus_endpoint = self.consensus;
                side
            },
            now,
        );
        p.apply_discovery_events(actions, now);
    }
}

impl Drop for ReaderOwner {
    fn drop(&mut self) {
        if !self.is_enabled() {
            return; // never announced
        }
        let p = self.participant.shared();
        let guid = Guid::new(p.guid_prefix, self.entity_id);
        // What leaves the table is dropped after the lock is released: the last reference to
        // the reader drops its listener, which may own entities whose deletion takes the lock.
        let removed = {
            let mut eps = p.endpoints.write();
            (
                eps.readers.remove(&self.entity_id),
                eps.remove_reader_everywhere(guid),
            )
        };
        drop(removed);
        let now = Instant::now();
        let actions = p.discovery.lock().remove_local_endpoint(p, guid, now);
        p.apply_discovery_events(actions, now);
    }
}
