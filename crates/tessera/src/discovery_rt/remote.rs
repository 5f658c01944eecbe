//! What a local endpoint learns of a matched endpoint ([`RemoteEndpoint`]): its locators,
//! reliability, durability and the terms it was announced with.

use super::DiscoveryRuntime;
use crate::endpoint::RemoteEndpoint;
use tessera_rtps::discovery::RemoteEndpointInfo;
use tessera_rtps::qos::{Consistency, Durability, ReliabilityKind};
use tessera_rtps::types::{Guid, Locators};

impl DiscoveryRuntime {
    /// What local endpoint `local` needs to know of a matched endpoint.
    pub(super) fn remote_endpoint(&self, local: Guid, info: &RemoteEndpointInfo) -> RemoteEndpoint {
        let durable = |d: Durability| d != Durability::Volatile;
        let consensus = match info {
            RemoteEndpointInfo::Writer(w) => (w.qos.consistency == Consistency::Atomic)
                .then_some(w.qos.consensus_endpoint)
                .flatten(),
            RemoteEndpointInfo::Reader(r) => (r.qos.consistency == Consistency::Atomic)
                .then_some(r.qos.consensus_endpoint)
                .flatten(),
        };
        if info.guid().prefix == self.prefix {
            // One of our own: reached at our own unicast locator, and the pair's reliability is
            // the reader's (matching guarantees the writer offers at least that).
            let reader = match info {
                RemoteEndpointInfo::Reader(r) => Some(r.clone()),
                RemoteEndpointInfo::Writer(_) => {
                    self.local.as_ref().and_then(|m| m.reader(local)).cloned()
                }
            };
            let reliable =
                reader.is_some_and(|r| r.qos.reliability.kind == ReliabilityKind::Reliable);
            let durable = match info {
                RemoteEndpointInfo::Writer(w) => durable(w.qos.durability),
                RemoteEndpointInfo::Reader(r) => durable(r.qos.durability),
            };
            return RemoteEndpoint {
                guid: info.guid(),
                reliable,
                durable,
                locators: self.own_locators,
                multicast: Locators::new(),
                consensus,
                writer_terms: writer_terms(info),
                content_filter: None,
                min_separation: std::time::Duration::ZERO,
                coherent_access: true,
                loan_layout: match info {
                    RemoteEndpointInfo::Reader(r) => r.loan_layout,
                    RemoteEndpointInfo::Writer(_) => 0,
                },
                // A reader of this participant gets the writer's own buffer.
                cdr_chunks: false,
            };
        }
        let locators = self.transport.select(info.unicast_locators());
        // The engine already replaced an endpoint's empty locator lists by its participant's
        // defaults. Only readers' multicast locators matter (we never send to a writer's).
        let multicast = match info {
            RemoteEndpointInfo::Reader(r) if self.allow_multicast.for_data() => self
                .transport
                .select_multicast(&locators, &r.multicast_locators),
            _ => Locators::new(),
        };
        let (reliable, durable) = match info {
            RemoteEndpointInfo::Writer(w) => (
                w.qos.reliability.kind == ReliabilityKind::Reliable,
                durable(w.qos.durability),
            ),
            RemoteEndpointInfo::Reader(r) => (
                r.qos.reliability.kind == ReliabilityKind::Reliable,
                durable(r.qos.durability),
            ),
        };
        RemoteEndpoint {
            guid: info.guid(),
            reliable,
            durable,
            locators,
            multicast,
            consensus,
            writer_terms: writer_terms(info),
            content_filter: match info {
                RemoteEndpointInfo::Reader(r) => r.content_filter.clone(),
                RemoteEndpointInfo::Writer(_) => None,
            },
            min_separation: match info {
                RemoteEndpointInfo::Reader(r) => r.qos.time_based_filter.minimum_separation,
                RemoteEndpointInfo::Writer(_) => std::time::Duration::ZERO,
            },
            coherent_access: match info {
                RemoteEndpointInfo::Reader(r) => r.qos.presentation.coherent_access,
                RemoteEndpointInfo::Writer(_) => true,
            },
            loan_layout: match info {
                RemoteEndpointInfo::Reader(r) => r.loan_layout,
                RemoteEndpointInfo::Writer(_) => 0,
            },
            cdr_chunks: match info {
                RemoteEndpointInfo::Reader(r) => r.cdr_chunks,
                RemoteEndpointInfo::Writer(_) => false,
            },
        }
    }
}

/// The run-time terms of a writer (defaults for a reader).
fn writer_terms(info: &RemoteEndpointInfo) -> crate::endpoint::WriterQosTerms {
    match info {
        RemoteEndpointInfo::Writer(w) => crate::endpoint::WriterQosTerms::of(&w.qos),
        RemoteEndpointInfo::Reader(_) => Default::default(),
    }
}
